// Command staticprobe is the broker tests' static Go program (built with
// CGO_ENABLED=0 into a test's temporary directory): what a code-mode
// program could attempt if vetting let it, and the channel at fd 5.
//
//	staticprobe escape <file to write> <tcp address> <file to read>
//	staticprobe fds
//	staticprobe ping
//	staticprobe alloc <MiB>
//
// escape prints one line per attempt, "write ok", "dial ok", "read ok
// <content>" or "<what> failed: <error>", and exits 0. fds prints
// "inherited <via> <fd> ..." (every descriptor open without
// close-on-exec, which is what exec left it: everything the program
// opens itself is close-on-exec) and, when fd 5 is open, reads one line
// there and answers "pong <line>" on it. ping does only the latter.
// alloc allocates and touches that many MiB and prints "allocated".
package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"syscall"
	"time"
)

const channelFD = 5

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: staticprobe escape|fds|ping|alloc ...")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "escape":
		escape(os.Args[2], os.Args[3], os.Args[4])
	case "fds":
		via, fds := inherited()
		fmt.Println("inherited", via, fds)
		if open(channelFD) {
			pong()
		}
	case "ping":
		pong()
	case "alloc":
		mib, _ := strconv.Atoi(os.Args[2])
		b := make([]byte, mib<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		fmt.Println("allocated", len(b)>>20)
	default:
		os.Exit(2)
	}
}

func escape(write, addr, read string) {
	if err := os.WriteFile(write, []byte("escaped"), 0o644); err != nil {
		fmt.Println("write failed:", err)
	} else {
		fmt.Println("write ok")
	}
	if c, err := net.DialTimeout("tcp", addr, 2*time.Second); err != nil {
		fmt.Println("dial failed:", err)
	} else {
		c.Write([]byte("escaped"))
		c.Close()
		fmt.Println("dial ok")
	}
	if b, err := os.ReadFile(read); err != nil {
		fmt.Println("read failed:", err)
	} else {
		fmt.Println("read ok", string(b))
	}
}

// inherited lists the descriptors open without close-on-exec: from
// /proc/self/fd when there is one, else by asking fcntl of each number
// below 4096.
func inherited() (string, []int) {
	var fds []int
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		for _, e := range ents {
			fd, err := strconv.Atoi(e.Name())
			if err == nil && open(fd) && !cloexec(fd) {
				fds = append(fds, fd)
			}
		}
		sort.Ints(fds)
		return "proc", fds
	}
	for fd := 0; fd < 4096; fd++ {
		if open(fd) && !cloexec(fd) {
			fds = append(fds, fd)
		}
	}
	return "fcntl", fds
}

func flags(fd int) (uintptr, bool) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
	return r, e == 0
}

func open(fd int) bool { _, ok := flags(fd); return ok }

func cloexec(fd int) bool { r, _ := flags(fd); return r&syscall.FD_CLOEXEC != 0 }

// pong reads one line on the channel and answers "pong <line>".
func pong() {
	var line []byte
	buf := make([]byte, 1)
	for !bytes.HasSuffix(line, []byte("\n")) {
		n, err := syscall.Read(channelFD, buf)
		if n <= 0 || err != nil {
			fmt.Fprintln(os.Stderr, "channel read:", err)
			os.Exit(3)
		}
		line = append(line, buf[:n]...)
	}
	if _, err := syscall.Write(channelFD, append([]byte("pong "), line...)); err != nil {
		fmt.Fprintln(os.Stderr, "channel write:", err)
		os.Exit(3)
	}
}
