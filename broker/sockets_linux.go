package broker

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentloom/loom/sandbox"
)

// maxUnixTableBytes bounds how much of /proc/self/net/unix the broker
// reads per command.
const maxUnixTableBytes = 8 << 20

// unixTable is the kernel's table of this network namespace's unix
// sockets.
const unixTable = "/proc/self/net/unix"

// hostSockets lists the pathname sockets bound in the host's network
// namespace (read from the broker's own /proc/self/net/unix, since a
// helper already lives in a namespace of its own) that lie under one of
// roots and are not shared: the jail hides each one. A socket bound in
// another network namespace (a container's) is not listed and stays
// reachable wherever the jail's mount table shows it.
func hostSockets(roots, shared []string) []string {
	f, err := os.Open(unixTable)
	if err != nil {
		return nil
	}
	defer f.Close()
	return withResolvedForms(parseUnixTable(io.LimitReader(f, maxUnixTableBytes), roots, shared), shared, filepath.EvalSymlinks)
}

// maskedSockets lists the host sockets every jail of b masks: all the
// host has bound that are not shared.
func (b *Broker) maskedSockets(shared []string) []string {
	if b.test.socketsUnder != "" {
		return hostSockets([]string{b.test.socketsUnder}, shared)
	}
	return hostSockets([]string{"/"}, shared)
}

// withResolvedForms adds, for every socket path bound through a link
// (the table shows the path as bound: /home/u/app.sock where /home is a
// link to /data/home), the path it resolves to, so a root written as the
// resolved directory still has the socket masked; a resolved form that
// is shared stays unmasked. Each directory is resolved once.
func withResolvedForms(paths, shared []string, resolve func(string) (string, error)) []string {
	dirs := map[string]string{}
	out := slices.Clone(paths)
	for _, p := range paths {
		dir := filepath.Dir(p)
		r, ok := dirs[dir]
		if !ok {
			if rd, err := resolve(dir); err == nil {
				r = rd
			}
			dirs[dir] = r
		}
		if r == "" || r == dir {
			continue
		}
		rp := filepath.Join(r, filepath.Base(p))
		if !slices.Contains(out, rp) && !slices.ContainsFunc(shared, func(s string) bool { return filepath.Clean(s) == rp }) {
			out = append(out, rp)
		}
	}
	return out
}

// parseUnixTable reads /proc/net/unix lines ("Num RefCount Protocol
// Flags Type St Inode Path"), keeping absolute paths under roots and not
// in shared; duplicates are dropped.
func parseUnixTable(r io.Reader, roots, shared []string) []string {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	seen := map[string]bool{}
	var out []string
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue // the header
		}
		line := sc.Text()
		// Seven fields, then the path (which may hold spaces).
		rest := line
		for i := 0; i < 7; i++ {
			rest = strings.TrimLeft(rest, " ")
			j := strings.IndexByte(rest, ' ')
			if j < 0 {
				rest = ""
				break
			}
			rest = rest[j:]
		}
		p := strings.TrimLeft(rest, " ")
		if !filepath.IsAbs(p) || seen[p] || filepath.Clean(p) != p {
			continue
		}
		seen[p] = true
		if !slices.ContainsFunc(roots, func(r string) bool { return sandbox.Covers(r, p) }) {
			continue
		}
		isShared := false
		for _, s := range shared {
			if filepath.Clean(s) == p {
				isShared = true
			}
		}
		if !isShared {
			out = append(out, p)
		}
	}
	return out
}
