//go:build linux

package broker

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentloom/loom/broker/internal/jail"
	"github.com/agentloom/loom/internal/jailtest"
	"github.com/agentloom/loom/sandbox"
)

// costBench is the workspace, bubblewrap command and helper the cost
// benchmarks share.
type costBench struct {
	ws, bwrap string
	bwrapArgs []string
	helper    string
}

// newCostBench makes a workspace with a .git and checks bubblewrap runs
// with the flags BenchmarkBatch compares against (read-only host, the
// workspace read-write and its .git read-only, its own /dev, pid and
// network namespaces, /proc); it skips, saying why, where it cannot.
func newCostBench(b *testing.B) *costBench {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skipf("bwrap is not installed: %v", err)
	}
	ws := b.TempDir()
	for _, d := range []string{".git/hooks", ".git/objects"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, ".git/config"), []byte("[core]\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	args := []string{"--new-session", "--die-with-parent", "--ro-bind", "/", "/", "--bind", ws, ws,
		"--ro-bind", ws + "/.git", ws + "/.git", "--dev", "/dev", "--unshare-pid", "--proc", "/proc",
		"--unshare-net", "--", "true"}
	if out, err := exec.Command(bwrap, args...).CombinedOutput(); err != nil {
		b.Skipf("bwrap cannot create its namespaces here: %v: %s", err, out)
	}
	return &costBench{ws: ws, bwrap: bwrap, bwrapArgs: args, helper: jailtest.HostHelper(b)}
}

// runBwrap runs `true` under bubblewrap.
func (c *costBench) runBwrap(b *testing.B) {
	if err := exec.Command(c.bwrap, c.bwrapArgs...).Run(); err != nil {
		b.Fatal(err)
	}
}

// clearTrue clears `true` under p on br and says whether a primed
// helper served it (br traces its phases).
func clearTrue(b *testing.B, br *Broker, p sandbox.Policy) (primed bool) {
	ex, err := br.Clear(context.Background(), sandbox.CallSpec{Argv: []string{"true"}, Policy: p,
		Env: map[string]string{"PATH": "/usr/bin:/bin"}, Budget: sandbox.Budget{MaxOutstanding: 1}})
	if err != nil {
		b.Fatal(err)
	}
	for range ex.Output() {
	}
	if s := ex.Wait(); s.ExitCode != 0 {
		b.Fatalf("settled %+v", s)
	}
	if ex.Enforcement.Degraded {
		b.Fatalf("degraded: %s", ex.Enforcement)
	}
	return slices.ContainsFunc(br.phasesOf(ex), func(m jail.PhaseMark) bool { return m.Name == jail.PrimedCommandMark })
}

// costVariant is one way of running a command a cost benchmark times.
type costVariant struct {
	name    string
	prepare func() // untimed, before each run; nil for none
	run     func()
}

// interleave times each variant b.N times, the variants interleaved in
// rotating order, and reports each one's median (<name>-ms) and its ratio
// to the last variant's median (<name>/<last>).
func interleave(b *testing.B, vs []costVariant) {
	samples := make([][]time.Duration, len(vs))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range vs {
			v := (i + k) % len(vs)
			b.StopTimer()
			for _, w := range vs {
				if w.prepare != nil {
					w.prepare() // every broker at rest, whichever variant runs
				}
			}
			b.StartTimer()
			start := time.Now()
			vs[v].run()
			samples[v] = append(samples[v], time.Since(start))
		}
	}
	b.StopTimer()
	med := make([]float64, len(vs))
	for v := range vs {
		s := slices.Clone(samples[v])
		slices.Sort(s)
		med[v] = float64(s[len(s)/2]) / float64(time.Millisecond)
		b.ReportMetric(med[v], vs[v].name+"-ms")
	}
	last := len(vs) - 1
	for v := range last {
		b.ReportMetric(med[v]/med[last], vs[v].name+"/"+vs[last].name)
	}
}

// BenchmarkMixedPolicy clears `true` on one workspace under three
// policies in turn, as a session does whose commands are not all the
// plane's bash: the bash policy, the same with an extra readable root (a
// call granted more), and the same with the network on. Interleaved
// with:
//
//   - mixed: the next of the three policies on a broker with its default
//     warm pool, at rest before each command;
//   - single: the bash policy every time on another such broker (what a
//     session of one policy pays);
//   - bwrap: bubblewrap with BenchmarkBatch's flags.
//
// It reports medians (<variant>-ms), ratios to bubblewrap, and the share
// of the mixed commands a primed helper served (mixed-primed/cmd).
func BenchmarkMixedPolicy(b *testing.B) {
	c := newCostBench(b)
	base := testPolicy(c.ws)
	base.Protected = DefaultProtected(c.ws)
	granted := base
	granted.ReadableRoots = append(slices.Clone(base.ReadableRoots), b.TempDir())
	network := base
	network.Network = sandbox.NetworkFull
	policies := []sandbox.Policy{base, granted, network}

	mixed := New(Options{HelperPath: c.helper})
	defer mixed.Close()
	mixed.test.tracePhases = true
	single := New(Options{HelperPath: c.helper})
	defer single.Close()
	single.test.tracePhases = true
	for _, p := range policies { // the layer probe and first fills, untimed
		clearTrue(b, mixed, p)
	}
	clearTrue(b, single, base)

	next, primed, runs := 0, 0, 0
	rest := func() {
		waitPool(b, mixed, defaultWarmHelpers)
		waitPool(b, single, defaultWarmHelpers)
	}
	interleave(b, []costVariant{
		{"mixed", rest, func() {
			if clearTrue(b, mixed, policies[next%len(policies)]) {
				primed++
			}
			next++
			runs++
		}},
		{"single", nil, func() { clearTrue(b, single, base) }},
		{"bwrap", nil, func() { c.runBwrap(b) }},
	})
	b.ReportMetric(float64(primed)/float64(max(runs, 1)), "mixed-primed/cmd")
}

// BenchmarkCold clears `true` with no helper ready, interleaved with:
//
//   - cold: prestarting off (Options.WarmHelperIdle < 0), the helper
//     started for its command;
//   - cold-launched: the same through a launcher, as a large host
//     starts every helper;
//   - ns-floor: `true` started straight into the jail's fresh namespaces
//     and reaped, nothing else;
//   - bwrap: bubblewrap with BenchmarkBatch's flags.
//
// It reports medians (<variant>-ms) and ratios to bubblewrap.
func BenchmarkCold(b *testing.B) {
	c := newCostBench(b)
	p := testPolicy(c.ws)
	p.Protected = DefaultProtected(c.ws)
	cold := New(Options{HelperPath: c.helper, WarmHelperIdle: -1})
	defer cold.Close()
	launched := New(Options{HelperPath: c.helper, WarmHelperIdle: -1})
	defer launched.Close()
	launched.test.launchAboveRSS = -1
	clearTrue(b, cold, p) // the layer probes, untimed
	clearTrue(b, launched, p)
	interleave(b, []costVariant{
		{"cold", nil, func() { clearTrue(b, cold, p) }},
		{"cold-launched", nil, func() { clearTrue(b, launched, p) }},
		{"ns-floor", nil, func() {
			cmd := exec.Command("true")
			cmd.SysProcAttr = jail.SysProcAttr(true, true)
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}},
		{"bwrap", nil, func() { c.runBwrap(b) }},
	})
}
