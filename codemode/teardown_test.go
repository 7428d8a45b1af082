package codemode

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// leftovers reports what the package's tests left behind, checked by
// TestMain once every test is done: child processes of the test binary
// (a run, build or proc.run tree not torn down), more sockets open than
// at the start (a channel end not closed), and build roots in the
// end-to-end cache.
func leftovers(socketsBefore int) []string {
	var found []string
	if kids := childProcesses(); len(kids) > 0 {
		found = append(found, fmt.Sprintf("child processes left running: %v", kids))
	}
	if n := openSockets(); n > socketsBefore {
		found = append(found, fmt.Sprintf("%d sockets open, %d at the start", n, socketsBefore))
	}
	if e2eCacheDir != "" {
		roots, _ := filepath.Glob(filepath.Join(e2eCacheDir, "tmp", "*"))
		var dirs []string
		for _, r := range roots {
			if fi, err := os.Stat(r); err == nil && fi.IsDir() {
				dirs = append(dirs, r)
			}
		}
		if len(dirs) > 0 {
			found = append(found, fmt.Sprintf("build roots left: %v", dirs))
		}
	}
	return found
}

// childProcesses lists the live (not zombie) processes whose parent is
// this process.
func childProcesses() []string {
	me := strconv.Itoa(os.Getpid())
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var kids []string
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after
		// its closing parenthesis.
		rest := string(b)
		i := strings.LastIndexByte(rest, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(rest[i+1:])
		if len(f) >= 2 && f[1] == me && f[0] != "Z" {
			kids = append(kids, strings.TrimSpace(rest[:i+1]))
		}
	}
	return kids
}

// openSockets counts this process's open socket descriptors.
func openSockets() int {
	fds, _ := filepath.Glob("/proc/self/fd/*")
	n := 0
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}
