//go:build linux

package broker

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

func TestPolicyRootPlan(t *testing.T) {
	t.Parallel()
	type want struct {
		binds  []jailRoot
		mkdirs []string
	}
	for _, tc := range []struct {
		name  string
		cfg   helperConfig
		extra []string
		want  want
	}{
		{
			name: "roots parents first, each once",
			cfg:  helperConfig{SystemRoots: []string{"/usr", "/etc"}, ReadableRoots: []string{"/usr", "/srv/r"}, WritableRoots: []string{"/w"}, Dir: "/w"},
			want: want{binds: []jailRoot{{"/w", true}, {"/usr", false}, {"/etc", false}, {"/srv/r", false}}},
		},
		{
			name: "a writable root inside a readable one is bound; so is any root inside a writable one, as a mount no command can rename",
			cfg:  helperConfig{ReadableRoots: []string{"/r", "/w/sub"}, WritableRoots: []string{"/r/w", "/w", "/w/scratch"}, Dir: "/r/w"},
			want: want{binds: []jailRoot{{"/r", false}, {"/w", true}, {"/r/w", true}, {"/w/sub", true}, {"/w/scratch", true}}},
		},
		{
			name: "a readable root inside a readable one is carried by the outer bind",
			cfg:  helperConfig{SystemRoots: []string{"/usr"}, ReadableRoots: []string{"/usr/share/x"}, WritableRoots: []string{"/w"}, Dir: "/w"},
			want: want{binds: []jailRoot{{"/w", true}, {"/usr", false}}},
		},
		{
			name:  "the jail's own /proc and /dev take no root; sockets and the resolver file are bound (read-only outside the writable roots)",
			cfg:   helperConfig{ReadableRoots: []string{"/proc/sys", "/dev/shm", "/devx"}, WritableRoots: []string{"/w"}, Sockets: []string{"/run/a.sock", "/w/b.sock"}, Dir: "/w"},
			extra: []string{"/run/systemd/resolve/stub-resolv.conf"},
			want:  want{binds: []jailRoot{{"/w", true}, {"/devx", false}, {"/w/b.sock", true}, {"/run/a.sock", false}, {"/run/systemd/resolve/stub-resolv.conf", false}}},
		},
		{
			name: "a working directory no root covers is made, empty",
			cfg:  helperConfig{WritableRoots: []string{"/w"}, Dir: "/elsewhere/d"},
			want: want{binds: []jailRoot{{"/w", true}}, mkdirs: []string{"/elsewhere/d"}},
		},
		{
			name: "the whole root, with a writable root on it",
			cfg:  helperConfig{ReadableRoots: []string{"/", "/usr"}, WritableRoots: []string{"/w"}, Dir: "/w"},
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
		cfg := helperConfig{
			SystemRoots:   rapid.SliceOf(rapid.SampledFrom(paths)).Draw(t, "system"),
			ReadableRoots: rapid.SliceOf(rapid.SampledFrom(paths)).Draw(t, "readable"),
			WritableRoots: rapid.SliceOf(rapid.SampledFrom(paths)).Draw(t, "writable"),
			Dir:           rapid.SampledFrom(paths).Draw(t, "dir"),
		}
		binds, mkdirs := policyRootPlan(cfg, nil)
		nearest := func(p string, upto int) int {
			at := -1
			for i, b := range binds[:upto] {
				if Covers(b.path, p) && (at < 0 || len(b.path) > len(binds[at].path)) {
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
			if r != "/" && (Covers("/proc", r) || Covers("/dev", r)) {
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

// TestPolicyRootReported: the layer is reported applied only where the
// jail's root was built, skipped with its reason where it was not (turned
// off, or no mount namespace), and a host that requires it is refused a
// run without it.
func TestPolicyRootReported(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	on := newTestBroker(t, Options{WarmHelperIdle: -1})
	defer on.Close()
	r := run(t, on, testPolicy(ws), 10*time.Second, "true")
	if l, _ := r.enf.Layer(LayerPolicyRoot); !l.Applied || !strings.Contains(l.Params, "pivot_root") {
		t.Errorf("on: %+v", l)
	}

	off := newTestBroker(t, Options{WarmHelperIdle: -1})
	off.test.policyRootOff = true
	defer off.Close()
	r = run(t, off, testPolicy(ws), 10*time.Second, "true")
	if l, ok := r.enf.Layer(LayerPolicyRoot); !ok || l.Applied || l.Reason == "" || !r.enf.Degraded {
		t.Errorf("off: %+v (present %v), degraded %v", l, ok, r.enf.Degraded)
	}

	required := newTestBroker(t, Options{WarmHelperIdle: -1, RequiredLayers: []string{LayerPolicyRoot}})
	required.test.policyRootOff = true
	defer required.Close()
	marker := filepath.Join(ws, "ran")
	_, d := tryRun(required, t.Name(), testPolicy(ws), 10*time.Second, "touch", marker)
	var den *Denial
	if !errors.As(d, &den) || den.Code != DenialLayerRequired || !strings.Contains(den.Error(), LayerPolicyRoot) {
		t.Errorf("required and off: got %v, want %s", d, DenialLayerRequired)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("required and off: the command ran")
	}

	nons := newTestBroker(t, Options{WarmHelperIdle: -1})
	defer nons.Close()
	nons.probeOnce.Do(func() {
		nons.probe = probeLayers(nons.opts.HelperPath, false)
		nons.probe.usernsErr = unix.EPERM
	})
	r = run(t, nons, testPolicy(ws), 10*time.Second, "true")
	if l, ok := r.enf.Layer(LayerPolicyRoot); !ok || l.Applied || !strings.Contains(l.Reason, "no mount namespace") {
		t.Errorf("no user namespace: %+v (present %v)", l, ok)
	}
}

// TestPolicyRootShapes: what the jail's root shows for the shapes a
// policy takes. Each row also runs with the layer off: where the root
// leaves something out, the host view shows it; where the shape must
// behave alike, it does.
func TestPolicyRootShapes(t *testing.T) {
	t.Parallel()
	on := newTestBroker(t, Options{})
	defer on.Close()
	off := newTestBroker(t, Options{WarmHelperIdle: -1})
	off.test.policyRootOff = true
	defer off.Close()
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, e *escapeEnv) (dir string)
		policy func(e *escapeEnv, p *Policy)
		script string
		// on and off are what stdout must hold with and without the layer.
		on, off string
	}{
		{
			name: "working directory outside every root: present, empty",
			setup: func(t *testing.T, e *escapeEnv) string {
				e.write(t, filepath.Join(e.hidden, "cwd", "host-file"), "x")
				return filepath.Join(e.hidden, "cwd")
			},
			script: `pwd; [ -e host-file ] && echo HOST-FILE-SEEN; echo done`,
			on:     "/cwd\ndone\n", off: "HOST-FILE-SEEN",
		},
		{
			name: "writable root nested in a readable one",
			setup: func(t *testing.T, e *escapeEnv) string {
				if err := os.MkdirAll(filepath.Join(e.out, "w"), 0o755); err != nil {
					t.Fatal(err)
				}
				return ""
			},
			policy: func(e *escapeEnv, p *Policy) { p.WritableRoots = append(p.WritableRoots, filepath.Join(e.out, "w")) },
			script: `touch "$OUT/w/ok" && echo NESTED-WRITE; touch "$OUT/no" 2>/dev/null || echo OUTER-REFUSED`,
			on:     "NESTED-WRITE\nOUTER-REFUSED\n", off: "NESTED-WRITE\nOUTER-REFUSED\n",
		},
		{
			name: "a root that does not exist",
			policy: func(e *escapeEnv, p *Policy) {
				p.ReadableRoots = append(p.ReadableRoots, filepath.Join(e.hidden, "missing"))
			},
			script: `[ -e "$HIDDEN" ] && echo HIDDEN-SEEN; echo ran`,
			on:     "ran\n", off: "HIDDEN-SEEN",
		},
		{
			name: "a readable root that is a link is a link, to nothing not granted",
			setup: func(t *testing.T, e *escapeEnv) string {
				e.write(t, filepath.Join(e.hidden, "target", "f"), "behind-link\n")
				if err := os.Symlink(filepath.Join(e.hidden, "target"), filepath.Join(e.out, "link")); err != nil {
					t.Fatal(err)
				}
				return ""
			},
			policy: func(e *escapeEnv, p *Policy) { p.ReadableRoots = append(p.ReadableRoots, filepath.Join(e.out, "link")) },
			script: `readlink "$OUT/link"; [ -e "$OUT/link/f" ] && echo TARGET-SEEN; echo done`,
			on:     "target\ndone\n", off: "TARGET-SEEN",
		},
		{
			name:   "the whole host root listed: the view is the host's, /run still hidden",
			policy: func(e *escapeEnv, p *Policy) { p.ReadableRoots = append(p.ReadableRoots, "/") },
			script: `[ -d "$HIDDEN" ] && echo HIDDEN-SEEN; ls -A /run | wc -l`,
			on:     "HIDDEN-SEEN\n0\n", off: "HIDDEN-SEEN\n0\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEscapeEnv(t)
			dir := e.ws
			if tc.setup != nil {
				if d := tc.setup(t, e); d != "" {
					dir = d
				}
			}
			p := e.policy()
			if tc.policy != nil {
				tc.policy(e, &p)
			}
			for _, side := range []struct {
				b    *Broker
				want string
			}{{on, tc.on}, {off, tc.off}} {
				r := runInDir(t, side.b, e, p, dir, tc.script)
				if r.enf.Applied(LayerPolicyRoot) == side.b.test.policyRootOff {
					t.Errorf("layer off=%v: policy_root applied %v\n%s", side.b.test.policyRootOff, !side.b.test.policyRootOff, r.enf)
				}
				if !strings.Contains(r.stdout, side.want) {
					t.Errorf("layer off=%v: stdout %q stderr %q, want %q\n%s", side.b.test.policyRootOff, r.stdout, r.stderr, side.want, r.enf)
				}
			}
		})
	}
}

// runInDir is runIn with the command started in dir.
func runInDir(t *testing.T, b *Broker, e *escapeEnv, p Policy, dir, script string) result {
	t.Helper()
	ex, d := b.Clear(t.Context(), CallSpec{
		Key: StepKey{OpID: "root", StepID: t.Name()}, Argv: []string{"sh", "-c", script},
		Dir: dir, Env: e.vars(), Policy: p, Budget: Budget{MaxOutstanding: 1}, Timeout: 20 * time.Second,
	})
	if d != nil {
		t.Fatalf("Clear: %v", d)
	}
	return collect(ex)
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
