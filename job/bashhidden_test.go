package job

import (
	"strings"
	"testing"

	"github.com/agentloom/loom/sandbox"
)

// hintPolicy is a jail showing the system roots, a workspace and one
// readable root, protecting the workspace's git config.
var hintPolicy = sandbox.Policy{
	SystemRoots:   []string{"/usr", "/bin", "/lib"},
	ReadableRoots: []string{"/data/shared"},
	WritableRoots: []string{"/w"},
	Protected:     []string{"/w/.git/config", "/w/.git/hooks"},
}

// TestHiddenHints: a failed command's stderr naming a path the jail
// hides (outside every root, or under the jail's own /tmp) or a busy
// protected entry gets a line saying why; a path the jail shows, a
// relative one, /proc and /dev, and a jail that hides nothing get none.
func TestHiddenHints(t *testing.T) {
	for _, tc := range []struct {
		name, stderr string
		hides        bool
		noHook       bool     // the call has no one to ask
		want         []string // each in the hints
		not          string   // not in the hints
		none         bool
	}{
		{name: "cat", stderr: "cat: /home/u/notes.txt: No such file or directory", hides: true,
			want: []string{"/home/u/notes.txt is outside every directory", `readable_roots: ["/home/u/notes.txt"]`, "fs_read"}},
		{name: "cat, no one to ask", stderr: "cat: /home/u/notes.txt: No such file or directory", hides: true, noHook: true,
			want: []string{"/home/u/notes.txt is outside every directory", "ask the user"}, not: "call bash again"},
		{name: "ls quotes", stderr: "ls: cannot access '/srv/x/y': No such file or directory", hides: true,
			want: []string{"/srv/x/y is outside"}},
		{name: "python", stderr: "FileNotFoundError: [Errno 2] No such file or directory: '/opt/cfg.yaml'", hides: true,
			want: []string{"/opt/cfg.yaml is outside"}},
		{name: "go", stderr: "open /etc/app/app.conf: no such file or directory", hides: true,
			want: []string{"/etc/app/app.conf is outside"}},
		{name: "host tmp", stderr: "cat: /tmp/build.log: No such file or directory", hides: true,
			want: []string{"/tmp/build.log is under /tmp", "private scratch"}},
		{name: "a system root shows it", stderr: "sh: 1: /usr/bin/nothere: No such file or directory", hides: true, none: true},
		{name: "a readable root shows it", stderr: "cat: /data/shared/gone: No such file or directory", hides: true, none: true},
		{name: "the workspace shows it", stderr: "cat: /w/gone: No such file or directory", hides: true, none: true},
		{name: "relative", stderr: "cat: gone.txt: No such file or directory", hides: true, none: true},
		{name: "proc", stderr: "cat: /proc/12345/status: No such file or directory", hides: true, none: true},
		{name: "no namespace", stderr: "cat: /home/u/notes.txt: No such file or directory", none: true},
		{name: "another error", stderr: "cat: /home/u/notes.txt: Is a directory", hides: true, none: true},
		{name: "busy config, relative", stderr: "mv: cannot move '.git/c2' to '.git/config': Device or resource busy",
			want: []string{"/w/.git/config is protected", "EBUSY", "ask the user"}},
		{name: "busy config, absolute", stderr: "error: could not commit config file /w/.git/config: Resource busy",
			want: []string{"/w/.git/config is protected"}},
		{name: "busy, not protected", stderr: "mv: cannot move 'a' to 'b': Device or resource busy", none: true},
		{name: "busy, longer name", stderr: "mv: cannot move 'x' to '.git/config.bak': Device or resource busy", none: true},
		{name: "not printable", stderr: "cat: /home/\x1b[2Jevil: No such file or directory", hides: true, none: true},
	} {
		got := hiddenHints([]byte(tc.stderr), hintPolicy, "/w", tc.hides, !tc.noHook)
		if tc.none && got != "" {
			t.Errorf("%s: hint %q, want none", tc.name, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: hint %q lacks %q", tc.name, got, w)
			}
		}
		if tc.not != "" && strings.Contains(got, tc.not) {
			t.Errorf("%s: hint %q says %q", tc.name, got, tc.not)
		}
	}
}

// TestHiddenHintsAreBounded: a stderr naming many hidden paths, long
// ones and the same one again, gets at most maxHiddenHints lines, each
// naming a path of at most maxHintPathBytes.
func TestHiddenHintsAreBounded(t *testing.T) {
	var b strings.Builder
	for i := range 50 {
		b.WriteString("cat: /home/u/f" + strings.Repeat("x", i) + ": No such file or directory\n")
		b.WriteString("cat: /home/u/same: No such file or directory\n")
	}
	b.WriteString("cat: /" + strings.Repeat("y", maxHintPathBytes) + ": No such file or directory\n")
	got := hiddenHints([]byte(b.String()), hintPolicy, "/w", true, true)
	if n := strings.Count(got, "\n"); n != maxHiddenHints {
		t.Errorf("%d hint lines, want %d: %s", n, maxHiddenHints, got)
	}
	if strings.Count(got, "/home/u/same ") > 1 || strings.Contains(got, "yyyy") {
		t.Errorf("a path repeated or a long one named: %s", got)
	}
}

// FuzzHiddenHints: whatever stderr holds, the hints are at most
// maxHiddenHints lines of printable ASCII, each opening "hint: ".
func FuzzHiddenHints(f *testing.F) {
	f.Add([]byte("cat: /home/u/notes.txt: No such file or directory"), "/w", true)
	f.Add([]byte("mv: cannot move '.git/c2' to '.git/config': Device or resource busy"), "/w", false)
	f.Add([]byte("cat: /tmp/x: ENOENT\n/w/.git/config EBUSY"), "/w/.git", true)
	f.Fuzz(func(t *testing.T, stderr []byte, cwd string, asks bool) {
		got := hiddenHints(stderr, hintPolicy, cwd, true, asks)
		if got == "" {
			return
		}
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		if len(lines) > maxHiddenHints || !strings.HasSuffix(got, "\n") {
			t.Fatalf("hints %q", got)
		}
		for _, l := range lines {
			if !strings.HasPrefix(l, "hint: ") || len(l) > 1024 || !printableASCII([]byte(strings.ReplaceAll(l, " ", "_"))) {
				t.Fatalf("hint line %q", l)
			}
		}
	})
}
