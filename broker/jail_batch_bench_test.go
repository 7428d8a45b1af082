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

// batchCommands is how many commands BenchmarkBatch runs back to back
// per batch: a model turn's exclusive calls, run one after another.
const batchCommands = 4

// BenchmarkBatch runs batches of batchCommands `true` commands back to
// back, each batch as one variant, the variants interleaved batch by
// batch in rotating order:
//
//   - plain: exec.Command("true"), unconfined;
//   - warm-pool: Clear on a broker with its default warm pool, full when
//     the batch begins (the wait for it to refill is outside the timing,
//     as a model's turn is between two batches), with every layer;
//   - warm-one: Clear on a broker keeping one warm helper
//     (Options.WarmHelpers 1), as the broker did before its pool: the
//     batch's first command finds it ready, the next ones find its
//     replacement still starting;
//   - cold: Clear with prestarting off (Options.WarmHelperIdle < 0);
//   - ns-floor: `true` started straight into the jail's fresh namespaces
//     (the helper's clone flags and identity map) and reaped, nothing
//     else: the clone, exec and reap no jail of this design avoids;
//   - bwrap: bubblewrap with comparable flags (read-only host, the
//     workspace read-write and its .git read-only, its own /dev, pid and
//     network namespaces, /proc).
//
// Before every batch, whatever its variant, both warm brokers have
// refilled and stopped, so no variant's timing holds another's
// background work. It reports each variant's median cost per command
// over the batches (<variant>-ms/cmd) and the jailed variants' ratios to
// bubblewrap's (warm-pool/bwrap, ...). It is skipped, saying why,
// where bwrap is absent or cannot create its namespaces.
func BenchmarkBatch(b *testing.B) {
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
	bwrapArgs := []string{"--new-session", "--die-with-parent", "--ro-bind", "/", "/", "--bind", ws, ws,
		"--ro-bind", ws + "/.git", ws + "/.git", "--dev", "/dev", "--unshare-pid", "--proc", "/proc",
		"--unshare-net", "--", "true"}
	if out, err := exec.Command(bwrap, bwrapArgs...).CombinedOutput(); err != nil {
		b.Skipf("bwrap cannot create its namespaces here: %v: %s", err, out)
	}

	helper := jailtest.HostHelper(b)
	pool := New(Options{HelperPath: helper})
	defer pool.Close()
	one := New(Options{HelperPath: helper, WarmHelpers: 1})
	defer one.Close()
	cold := New(Options{HelperPath: helper, WarmHelperIdle: -1})
	defer cold.Close()
	p := testPolicy(ws)
	p.Protected = DefaultProtected(ws)
	clearTrue := func(br *Broker) func() {
		return func() {
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
		}
	}
	run := func(name string, args ...string) func() {
		return func() {
			if err := exec.Command(name, args...).Run(); err != nil {
				b.Fatal(err)
			}
		}
	}
	variants := []struct {
		name string
		f    func()
	}{
		{"plain", run("true")},
		{"warm-pool", clearTrue(pool)},
		{"warm-one", clearTrue(one)},
		{"cold", clearTrue(cold)},
		{"ns-floor", func() {
			cmd := exec.Command("true")
			cmd.SysProcAttr = jail.SysProcAttr(true, true)
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}},
		{"bwrap", run(bwrap, bwrapArgs...)},
	}
	// The one-time layer probes and first fills, untimed.
	clearTrue(cold)()
	clearTrue(pool)()
	clearTrue(one)()
	samples := make([][]time.Duration, len(variants))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range variants {
			v := (i + k) % len(variants)
			b.StopTimer()
			waitPool(b, pool, defaultWarmHelpers)
			waitPool(b, one, 1)
			b.StartTimer()
			start := time.Now()
			for range batchCommands {
				variants[v].f()
			}
			samples[v] = append(samples[v], time.Since(start)/batchCommands)
		}
	}
	b.StopTimer()
	medians := make([]float64, len(variants))
	for v := range variants {
		s := slices.Clone(samples[v])
		slices.Sort(s)
		medians[v] = float64(s[len(s)/2]) / float64(time.Millisecond)
		b.ReportMetric(medians[v], variants[v].name+"-ms/cmd")
	}
	bwrapMedian := medians[len(variants)-1]
	for v := 1; v < len(variants)-1; v++ {
		b.ReportMetric(medians[v]/bwrapMedian, variants[v].name+"/bwrap")
	}
}
