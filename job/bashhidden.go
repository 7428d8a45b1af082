package job

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentloom/loom/sandbox"
)

// A command that failed may have failed on what its jail does: a path
// outside every root is not there at all (ENOENT), and a protected entry
// is bound read-only, so replacing it (git writes .git/config by a
// rename) fails as busy (EBUSY). hiddenHints reads the command's stderr
// for either and says why, one line per path. Stderr is the command's own
// output, hostile: it is only matched, never trusted, and a path it names
// is shown only when it is printable ASCII of bounded length and the
// policy itself hides or protects it. A hint grants nothing.

// Bounds of hiddenHints.
const (
	// maxHiddenHints is the most lines hiddenHints adds.
	maxHiddenHints = 3
	// maxHintPathBytes is the longest path a hint names; a longer one is
	// not named at all.
	maxHintPathBytes = 256
	// hintScanBytes is how much of the end of stderr is read.
	hintScanBytes = 4 << 10
	// hintScanLines is the most lines of it looked at, from the end.
	hintScanLines = 64
)

var (
	// enoentPattern matches a line reporting a missing file.
	enoentPattern = regexp.MustCompile(`(?i)no such file or directory|\bENOENT\b`)
	// ebusyPattern matches a line reporting a busy file.
	ebusyPattern = regexp.MustCompile(`(?i)device or resource busy|resource busy|\bEBUSY\b`)
	// absPathPattern finds an absolute path in a line, starting the line
	// or after a blank, a quote or punctuation, and ending at one.
	absPathPattern = regexp.MustCompile("(?:^|[\\s'\"`:=(\\[<])(/[^\\s'\"`:;,()<>\\[\\]{}]*)")
)

// hiddenHints returns the lines saying why a failed command's stderr
// reports a missing path its jail hides, or a busy protected entry, under
// policy pol in directory cwd; "" when it reports neither. hides says
// whether the jail shows only the policy's roots (its mount namespace
// applied); without it, a missing path is missing on the host too. asks
// says whether the call can ask an operator (tool.Call.RaiseRefusal),
// which picks the remedy named.
func hiddenHints(stderr []byte, pol sandbox.Policy, cwd string, hides, asks bool) string {
	if len(stderr) > hintScanBytes {
		stderr = stderr[len(stderr)-hintScanBytes:]
	}
	lines := bytes.Split(stderr, []byte("\n"))
	if len(lines) > hintScanLines {
		lines = lines[len(lines)-hintScanLines:]
	}
	var b strings.Builder
	seen := map[string]bool{}
	n := 0
	add := func(key, line string) {
		if n < maxHiddenHints && !seen[key] {
			seen[key] = true
			n++
			b.WriteString(line)
		}
	}
	for _, l := range lines {
		if n == maxHiddenHints {
			break
		}
		if ebusyPattern.Match(l) {
			if p := busyProtected(l, pol, cwd); p != "" {
				add("busy "+p, fmt.Sprintf("hint: %s is protected: the sandbox shows it read-only, so a command that replaces it fails as busy (EBUSY). "+
					"No command changes it; ask the user to make the change outside the sandbox.\n", p))
			}
		}
		if !hides || !enoentPattern.Match(l) {
			continue
		}
		for _, m := range absPathPattern.FindAllSubmatch(l, maxHiddenHints) {
			p := string(m[1])
			if len(p) > maxHintPathBytes || !printableASCII(m[1]) || strings.HasPrefix(p, "//") {
				continue
			}
			p = filepath.Clean(p)
			if why := hiddenBy(pol, p); why != "" && p != "/" {
				remedy := fmt.Sprintf("call bash again with permissions {readable_roots: [%q]} (the operator decides), or fs_read it, which asks the operator itself", p)
				if !asks {
					remedy = "ask the user to add it to the session's readable roots: this host has no operator to approve a command's permissions"
				}
				add("hidden "+p, fmt.Sprintf("hint: %s %s, so the command finds nothing there whether or not the host has it. To reach the host's copy, %s.\n", p, why, remedy))
			}
		}
	}
	return b.String()
}

// hiddenBy says why the jail of pol hides the absolute path p, or ""
// when a root of pol shows it (or the jail shows its own copy: /proc and
// /dev).
func hiddenBy(pol sandbox.Policy, p string) string {
	for _, roots := range [][]string{pol.SystemRoots, pol.ReadableRoots, pol.WritableRoots} {
		for _, r := range roots {
			if sandbox.Covers(r, p) {
				return ""
			}
		}
	}
	for _, r := range sandbox.ReplacedRoots() {
		if !sandbox.Covers(r, p) {
			continue
		}
		if r == sandbox.ScratchDir {
			return fmt.Sprintf("is under %s, which in the sandbox is the command's own private scratch, not the host's", r)
		}
		return ""
	}
	return "is outside every directory this command's sandbox shows"
}

// busyProtected returns the protected entry of pol a busy line names, as
// an absolute path or relative to cwd (as git names .git/config), or "".
func busyProtected(line []byte, pol sandbox.Policy, cwd string) string {
	for _, e := range pol.Protected {
		if !filepath.IsAbs(e) || len(e) > maxHintPathBytes {
			continue
		}
		forms := []string{e}
		if rel, err := filepath.Rel(cwd, e); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			forms = append(forms, rel, "./"+rel)
		}
		for _, f := range forms {
			if containsPath(line, f) {
				return e
			}
		}
	}
	return ""
}

// containsPath reports whether line holds p as a whole path: not as part
// of a longer name on either side.
func containsPath(line []byte, p string) bool {
	for i := 0; i <= len(line)-len(p); {
		j := bytes.Index(line[i:], []byte(p))
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(p)
		before := start == 0 || !pathByte(line[start-1])
		after := end == len(line) || !pathByte(line[end])
		if before && after {
			return true
		}
		i = start + 1
	}
	return false
}

// pathByte reports whether c may continue a path name in a message.
func pathByte(c byte) bool {
	return c == '/' || c == '.' || c == '-' || c == '_' || c == '~' ||
		('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}
