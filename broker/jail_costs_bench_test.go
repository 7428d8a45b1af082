//go:build linux

package broker

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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

// newCostBench makes a workspace (newCostWorkspace) and checks
// bubblewrap runs with the flags BenchmarkBatch compares against
// (codexBwrapArgs); it skips, saying why, where it cannot.
func newCostBench(b *testing.B) *costBench {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skipf("bwrap is not installed: %v", err)
	}
	ws := newCostWorkspace(b)
	args := codexBwrapArgs(ws, "true")
	if out, err := exec.Command(bwrap, args...).CombinedOutput(); err != nil {
		b.Skipf("bwrap cannot create its namespaces here: %v: %s", err, out)
	}
	return &costBench{ws: ws, bwrap: bwrap, bwrapArgs: args, helper: jailtest.HostHelper(b)}
}

// newCostWorkspace makes a workspace with a .git (hooks, objects and a
// config) in tb's temporary directory.
func newCostWorkspace(tb testing.TB) string {
	ws := tb.TempDir()
	for _, d := range []string{".git/hooks", ".git/objects"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, ".git/config"), []byte("[core]\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	return ws
}

// codexBwrapArgs are bubblewrap's arguments for running argv with
// Codex's flags, the ones BenchmarkBatch compares against: read-only
// host, the workspace ws read-write and its .git read-only, its own
// /dev, pid and network namespaces, /proc.
func codexBwrapArgs(ws string, argv ...string) []string {
	args := []string{"--new-session", "--die-with-parent", "--ro-bind", "/", "/", "--bind", ws, ws,
		"--ro-bind", ws + "/.git", ws + "/.git", "--dev", "/dev", "--unshare-pid", "--proc", "/proc",
		"--unshare-net", "--"}
	return append(args, argv...)
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
// to the last variant's median (<name>/<last>). It also reports each
// one's median CPU time (<name>-cpu-ms: user and system time of this
// process and of the children reaped during the run, so the broker, its
// helper and the command, or bubblewrap and its children), which a busy
// host disturbs far less than wall time, and that median's ratio to the
// last variant's (<name>/<last>-cpu). It returns the medians, wall and
// CPU, in milliseconds, one per variant, for other ratios.
func interleave(b *testing.B, vs []costVariant) (med, medCPU []float64) {
	samples := make([][]time.Duration, len(vs))
	cpu := make([][]time.Duration, len(vs))
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
			cpu0 := cpuTime()
			start := time.Now()
			vs[v].run()
			samples[v] = append(samples[v], time.Since(start))
			cpu[v] = append(cpu[v], cpuTime()-cpu0)
		}
	}
	b.StopTimer()
	med = make([]float64, len(vs))
	medCPU = make([]float64, len(vs))
	for v := range vs {
		med[v] = median(samples[v])
		medCPU[v] = median(cpu[v])
		b.ReportMetric(med[v], vs[v].name+"-ms")
		b.ReportMetric(medCPU[v], vs[v].name+"-cpu-ms")
	}
	last := len(vs) - 1
	for v := range last {
		b.ReportMetric(med[v]/med[last], vs[v].name+"/"+vs[last].name)
		if medCPU[last] > 0 {
			b.ReportMetric(medCPU[v]/medCPU[last], vs[v].name+"/"+vs[last].name+"-cpu")
		}
	}
	return med, medCPU
}

// median is the median of d in milliseconds.
func median(d []time.Duration) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}

// cpuTime is the user and system time this process and its reaped
// children have used so far.
func cpuTime() time.Duration {
	var total time.Duration
	for _, who := range []int{unix.RUSAGE_SELF, unix.RUSAGE_CHILDREN} {
		var ru unix.Rusage
		if unix.Getrusage(who, &ru) == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total
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
//   - go-floor: the smallest Go helper there can be, started into the
//     jail's fresh namespaces: a static Go program that only execs
//     `true` (what any Go helper pays before it confines anything: the
//     namespaces, a Go program's exec and runtime start, the exec of the
//     command), reaped;
//   - ns-floor: `true` started straight into the jail's fresh
//     namespaces and reaped, nothing else;
//   - bwrap-matched: bubblewrap confining `true` as the jail confines it
//     under cold's policy, as far as its flags can (bwrapMatched: the
//     policy's root, /proc, /dev, /tmp, the protected paths, the masked
//     secrets and kernel files, the jail's namespaces and seccomp
//     filter); Landlock, the namespace-limit sysctls, pid_max, the
//     rlimits and the locked securebits have no bubblewrap flag and are
//     left out;
//   - bwrap: bubblewrap with BenchmarkBatch's flags.
//
// It reports medians (<variant>-ms), ratios to bubblewrap, and the CPU
// each takes (see interleave); cold/bwrap-matched is cold's median over
// bwrap-matched's, from the same medians. cold less go-floor is what
// confining costs; BenchmarkWarmPhases/cold splits it into phases.
func BenchmarkCold(b *testing.B) {
	c := newCostBench(b)
	floor := buildExecFloor(b)
	p := testPolicy(c.ws)
	p.Protected = DefaultProtected(c.ws)
	cold := New(Options{HelperPath: c.helper, WarmHelperIdle: -1})
	defer cold.Close()
	launched := New(Options{HelperPath: c.helper, WarmHelperIdle: -1})
	defer launched.Close()
	launched.test.launchAboveRSS = -1
	clearTrue(b, cold, p) // the layer probes, untimed
	clearTrue(b, launched, p)
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Fatal(err)
	}
	matched := newBwrapMatched(b, c.bwrap, p, c.ws, []string{"PATH=/usr/bin:/bin"}, cold.maskedSockets(nil), "true")
	if err := matched.run(); err != nil {
		b.Skipf("bwrap cannot apply the jail's confinement here: %v", err)
	}
	inNamespaces := func(path string, args ...string) func() {
		return func() {
			cmd := &exec.Cmd{Path: path, Args: append([]string{filepath.Base(path)}, args...),
				Env: jail.ProcessEnv(), SysProcAttr: jail.SysProcAttr(true, true)}
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	}
	med, medCPU := interleave(b, []costVariant{
		{"cold", nil, func() { clearTrue(b, cold, p) }},
		{"cold-launched", nil, func() { clearTrue(b, launched, p) }},
		{"go-floor", nil, inNamespaces(floor, truePath)},
		{"ns-floor", nil, inNamespaces(truePath)},
		{"bwrap-matched", nil, func() {
			if err := matched.run(); err != nil {
				b.Fatal(err)
			}
		}},
		{"bwrap", nil, func() { c.runBwrap(b) }},
	})
	const coldRow, matchedRow = 0, 4
	b.ReportMetric(med[coldRow]/med[matchedRow], "cold/bwrap-matched")
	if medCPU[matchedRow] > 0 {
		b.ReportMetric(medCPU[coldRow]/medCPU[matchedRow], "cold/bwrap-matched-cpu")
	}
}

// execFloorProgram is go-floor's program: it execs its arguments and
// nothing else.
const execFloorProgram = `package main

import (
	"os"
	"syscall"
)

func main() {
	syscall.Exec(os.Args[1], os.Args[1:], nil)
	os.Exit(127)
}
`

// buildExecFloor builds execFloorProgram, statically linked like a host
// helper, into b's temporary directory (a module of its own, needing no
// download) and returns its path; it skips where it cannot.
func buildExecFloor(b *testing.B) string {
	dir := b.TempDir()
	for name, text := range map[string]string{
		"go.mod":  "module execfloor\n\ngo 1.21\n",
		"main.go": execFloorProgram,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	out := filepath.Join(dir, "execfloor")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Skipf("cannot build the go-floor program: %v\n%s", err, msg)
	}
	return out
}
