//go:build linux

package broker

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentloom/loom/sandbox"
)

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
	if l, _ := r.enf.Layer(sandbox.LayerPolicyRoot); !l.Applied || !strings.Contains(l.Params, "pivot_root") {
		t.Errorf("on: %+v", l)
	}

	off := newTestBroker(t, Options{WarmHelperIdle: -1})
	off.test.policyRootOff = true
	defer off.Close()
	r = run(t, off, testPolicy(ws), 10*time.Second, "true")
	if l, ok := r.enf.Layer(sandbox.LayerPolicyRoot); !ok || l.Applied || l.Reason == "" || !r.enf.Degraded {
		t.Errorf("off: %+v (present %v), degraded %v", l, ok, r.enf.Degraded)
	}

	required := newTestBroker(t, Options{WarmHelperIdle: -1, RequiredLayers: []string{sandbox.LayerPolicyRoot}})
	required.test.policyRootOff = true
	defer required.Close()
	marker := filepath.Join(ws, "ran")
	_, d := tryRun(required, t.Name(), testPolicy(ws), 10*time.Second, "touch", marker)
	var den *sandbox.Denial
	if !errors.As(d, &den) || den.Code != sandbox.DenialLayerRequired || !strings.Contains(den.Error(), sandbox.LayerPolicyRoot) {
		t.Errorf("required and off: got %v, want %s", d, sandbox.DenialLayerRequired)
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
	if l, ok := r.enf.Layer(sandbox.LayerPolicyRoot); !ok || l.Applied || !strings.Contains(l.Reason, "no mount namespace") {
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
		policy func(e *escapeEnv, p *sandbox.Policy)
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
			policy: func(e *escapeEnv, p *sandbox.Policy) {
				p.WritableRoots = append(p.WritableRoots, filepath.Join(e.out, "w"))
			},
			script: `touch "$OUT/w/ok" && echo NESTED-WRITE; touch "$OUT/no" 2>/dev/null || echo OUTER-REFUSED`,
			on:     "NESTED-WRITE\nOUTER-REFUSED\n", off: "NESTED-WRITE\nOUTER-REFUSED\n",
		},
		{
			name: "a root that does not exist",
			policy: func(e *escapeEnv, p *sandbox.Policy) {
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
			policy: func(e *escapeEnv, p *sandbox.Policy) {
				p.ReadableRoots = append(p.ReadableRoots, filepath.Join(e.out, "link"))
			},
			script: `readlink "$OUT/link"; [ -e "$OUT/link/f" ] && echo TARGET-SEEN; echo done`,
			on:     "target\ndone\n", off: "TARGET-SEEN",
		},
		{
			name:   "the whole host root listed: the view is the host's, /run still hidden",
			policy: func(e *escapeEnv, p *sandbox.Policy) { p.ReadableRoots = append(p.ReadableRoots, "/") },
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
				if r.enf.Applied(sandbox.LayerPolicyRoot) == side.b.test.policyRootOff {
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
func runInDir(t *testing.T, b *Broker, e *escapeEnv, p sandbox.Policy, dir, script string) result {
	t.Helper()
	ex, d := b.Clear(t.Context(), sandbox.CallSpec{
		Key: sandbox.StepKey{OpID: "root", StepID: t.Name()}, Argv: []string{"sh", "-c", script},
		Dir: dir, Env: e.vars(), Policy: p, Budget: sandbox.Budget{MaxOutstanding: 1}, Timeout: 20 * time.Second,
	})
	if d != nil {
		t.Fatalf("Clear: %v", d)
	}
	return collect(ex)
}
