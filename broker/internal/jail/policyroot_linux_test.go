//go:build linux

package jail

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"github.com/agentloom/loom/sandbox"
)

func TestPolicyRootPlan(t *testing.T) {
	t.Parallel()
	type want struct {
		binds  []jailRoot
		mkdirs []string
	}
	for _, tc := range []struct {
		name  string
		cfg   Config
		extra []string
		want  want
	}{
		{
			name: "roots parents first, each once",
			cfg:  Config{SystemRoots: []string{"/usr", "/etc"}, ReadableRoots: []string{"/usr", "/srv/r"}, WritableRoots: []string{"/w"}, Dir: "/w"},
			want: want{binds: []jailRoot{{"/w", true}, {"/usr", false}, {"/etc", false}, {"/srv/r", false}}},
		},
		{
			name: "a writable root inside a readable one is bound; so is any root inside a writable one, as a mount no command can rename",
			cfg:  Config{ReadableRoots: []string{"/r", "/w/sub"}, WritableRoots: []string{"/r/w", "/w", "/w/scratch"}, Dir: "/r/w"},
			want: want{binds: []jailRoot{{"/r", false}, {"/w", true}, {"/r/w", true}, {"/w/sub", true}, {"/w/scratch", true}}},
		},
		{
			name: "a readable root inside a readable one is carried by the outer bind",
			cfg:  Config{SystemRoots: []string{"/usr"}, ReadableRoots: []string{"/usr/share/x"}, WritableRoots: []string{"/w"}, Dir: "/w"},
			want: want{binds: []jailRoot{{"/w", true}, {"/usr", false}}},
		},
		{
			name:  "the jail's own /proc and /dev take no root; sockets and the resolver file are bound (read-only outside the writable roots)",
			cfg:   Config{ReadableRoots: []string{"/proc/sys", "/dev/shm", "/devx"}, WritableRoots: []string{"/w"}, Sockets: []string{"/run/a.sock", "/w/b.sock"}, Dir: "/w"},
			extra: []string{"/run/systemd/resolve/stub-resolv.conf"},
			want:  want{binds: []jailRoot{{"/w", true}, {"/devx", false}, {"/w/b.sock", true}, {"/run/a.sock", false}, {"/run/systemd/resolve/stub-resolv.conf", false}}},
		},
		{
			name: "a working directory no root covers is made, empty",
			cfg:  Config{WritableRoots: []string{"/w"}, Dir: "/elsewhere/d"},
			want: want{binds: []jailRoot{{"/w", true}}, mkdirs: []string{"/elsewhere/d"}},
		},
		{
			name: "the whole root, with a writable root on it",
			cfg:  Config{ReadableRoots: []string{"/", "/usr"}, WritableRoots: []string{"/w"}, Dir: "/w"},
			want: want{binds: []jailRoot{{"/", false}, {"/w", true}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			binds, mkdirs := policyRootPlan(tc.cfg, tc.extra)
			if !slices.Equal(binds, tc.want.binds) || !slices.Equal(mkdirs, tc.want.mkdirs) {
				t.Errorf("got %v %v\nwant %v %v", binds, mkdirs, tc.want.binds, tc.want.mkdirs)
			}
		})
	}
}

// TestPolicyRootPlanCoversEveryRoot: whatever the roots, every root
// outside /proc and /dev is shown with its writability (by its own bind
// or the nearest one above it), parents come before children, and no
// bind repeats the writability of the one above it.
func TestPolicyRootPlanCoversEveryRoot(t *testing.T) {
	t.Parallel()
	paths := []string{"/", "/a", "/a/b", "/a/b/c", "/a/c", "/b", "/b/a", "/proc/x", "/dev/y", "/usr"}
	rapid.Check(t, func(t *rapid.T) {
		cfg := Config{
			SystemRoots:   rapid.SliceOf(rapid.SampledFrom(paths)).Draw(t, "system"),
			ReadableRoots: rapid.SliceOf(rapid.SampledFrom(paths)).Draw(t, "readable"),
			WritableRoots: rapid.SliceOf(rapid.SampledFrom(paths)).Draw(t, "writable"),
			Dir:           rapid.SampledFrom(paths).Draw(t, "dir"),
		}
		binds, mkdirs := policyRootPlan(cfg, nil)
		nearest := func(p string, upto int) int {
			at := -1
			for i, b := range binds[:upto] {
				if sandbox.Covers(b.path, p) && (at < 0 || len(b.path) > len(binds[at].path)) {
					at = i
				}
			}
			return at
		}
		for i, b := range binds {
			if i > 0 && len(binds[i-1].path) > len(b.path) {
				t.Fatalf("binds out of order: %v", binds)
			}
			if b.writable != coveredByAny(cfg.WritableRoots, b.path) {
				t.Fatalf("bind %v: writability differs from the policy's", b)
			}
			if a := nearest(b.path, i); a >= 0 && !binds[a].writable && !b.writable {
				t.Fatalf("read-only bind %v repeats %v above it", b, binds[a])
			}
		}
		for _, r := range slices.Concat(cfg.SystemRoots, cfg.ReadableRoots, cfg.WritableRoots) {
			if r != "/" && (sandbox.Covers("/proc", r) || sandbox.Covers("/dev", r)) {
				continue
			}
			a := nearest(r, len(binds))
			if a < 0 || binds[a].writable != coveredByAny(cfg.WritableRoots, r) {
				t.Fatalf("root %s shown by %v (binds %v)", r, a, binds)
			}
			// A root a command could rename (one under a writable bind)
			// is a mount of its own.
			if above := nearest(filepath.Dir(r), len(binds)); r != "/" && above >= 0 && binds[above].writable && binds[a].path != filepath.Clean(r) {
				t.Fatalf("root %s under writable %v is no mount of its own (binds %v)", r, binds[above], binds)
			}
		}
		if coveredByEntry(binds, cfg.Dir) == slices.Contains(mkdirs, cfg.Dir) {
			t.Fatalf("dir %s: binds %v mkdirs %v", cfg.Dir, binds, mkdirs)
		}
	})
}

// TestMakePathMakesNothingInABoundRoot: a mount point is made only on the
// filesystem the jail mounted; one missing where a root of the host is
// bound (here: base standing for one, its device not the jail's) is
// errInBoundRoot and nothing is made there. Before, a helper made it: an
// empty .git/config, and a .git directory, in a workspace the host had
// just emptied (a primed helper did so while idle). The control makes
// the same path where base is the jail's own filesystem.
func TestMakePathMakesNothingInABoundRoot(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		path string
		dir  bool
	}{{".git/config", false}, {".git/hooks", true}, {"config", false}} {
		base := t.TempDir()
		var st unix.Stat_t
		if err := unix.Lstat(base, &st); err != nil {
			t.Fatal(err)
		}
		err := makePathOn(base, c.path, c.dir, st.Dev+1)
		if !errors.Is(err, errInBoundRoot) {
			t.Errorf("%s in a bound root: %v, want errInBoundRoot", c.path, err)
		}
		if ents, _ := os.ReadDir(base); len(ents) != 0 {
			t.Errorf("%s in a bound root: made %s", c.path, ents[0].Name())
		}
		if err := makePathOn(base, c.path, c.dir, st.Dev); err != nil {
			t.Fatalf("control: %s on the jail's own filesystem: %v", c.path, err)
		}
		if fi, err := os.Lstat(filepath.Join(base, c.path)); err != nil || fi.IsDir() != c.dir {
			t.Errorf("control: %s made as %v, %v", c.path, fi, err)
		}
	}
}
