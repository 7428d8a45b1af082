//go:build linux

package broker

import (
	"context"
	"os/exec"
	"sort"
	"testing"
	"time"

	"github.com/agentloom/loom/internal/jailtest"
	"github.com/agentloom/loom/sandbox"
)

// BenchmarkTrue compares `true` run plainly with exec.Command and run
// through Clear in the full jail, in the same process. Each sub-benchmark
// reports the median wall time per run (median-ms); the jailed ones also
// report the overhead over the plain median measured in the same run.
//
//   - jailed-cold: every helper starts when its command is cleared
//     (Options.WarmHelperIdle < 0).
//   - jailed-cold-launched: the same through a launcher, as a host larger
//     than largeHostRSS starts every helper.
//   - jailed-warm: the command finds the helper prestarted after the
//     previous one (the broker's default); the wait for it to be ready is
//     outside the timing, as a model's turn is between two commands.
//   - jailed-cold-test-binary: the test binary as the helper. It is a
//     heavy one (testing, rapid and go-cmp initialise before the broker's
//     init runs); a host program that imports the broker is what
//     production re-executes, so the others use jailtest.HostHelper.
func BenchmarkTrue(b *testing.B) {
	var plainMedian time.Duration
	b.Run("plain", func(b *testing.B) {
		plainMedian = benchMedian(b, nil, func() {
			if err := exec.Command("true").Run(); err != nil {
				b.Fatal(err)
			}
		})
	})
	helper := jailtest.HostHelper(b)
	b.Run("jailed-cold", func(b *testing.B) {
		benchJailed(b, New(Options{HelperPath: helper, WarmHelperIdle: -1}), false, plainMedian)
	})
	// What a large host pays per cold command: a launcher between it and
	// the helper (see launcher_linux.go), whatever the host's size.
	b.Run("jailed-cold-launched", func(b *testing.B) {
		br := New(Options{HelperPath: helper, WarmHelperIdle: -1})
		br.test.launchAboveRSS = -1
		benchJailed(b, br, false, plainMedian)
	})
	b.Run("jailed-warm", func(b *testing.B) {
		benchJailed(b, New(Options{HelperPath: helper}), true, plainMedian)
	})
	b.Run("jailed-cold-test-binary", func(b *testing.B) {
		benchJailed(b, New(Options{WarmHelperIdle: -1}), false, plainMedian)
	})
}

func benchJailed(b *testing.B, br *Broker, warm bool, plainMedian time.Duration) {
	defer br.Close()
	p := testPolicy(b.TempDir())
	runTrue := func() {
		ex, d := br.Clear(context.Background(), sandbox.CallSpec{Argv: []string{"true"}, Policy: p,
			Env: map[string]string{"PATH": "/usr/bin:/bin"}, Budget: sandbox.Budget{MaxOutstanding: 1}})
		if d != nil {
			b.Fatal(d)
		}
		for range ex.Output() {
		}
		if s := ex.Wait(); s.ExitCode != 0 {
			b.Fatalf("settled %+v", s)
		}
	}
	runTrue() // the one-time layer probe (and the first prestart), untimed
	var prepare func()
	if warm {
		prepare = func() { waitWarm(b, br) }
	}
	med := benchMedian(b, prepare, runTrue)
	if plainMedian > 0 {
		b.ReportMetric(float64(med-plainMedian)/float64(time.Millisecond), "overhead-ms")
	}
}

// benchMedian times f b.N times and reports the median in milliseconds;
// prepare, when not nil, runs untimed before each f.
func benchMedian(b *testing.B, prepare, f func()) time.Duration {
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if prepare != nil {
			b.StopTimer()
			prepare()
			b.StartTimer()
		}
		start := time.Now()
		f()
		samples = append(samples, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	med := samples[len(samples)/2]
	b.ReportMetric(float64(med)/float64(time.Millisecond), "median-ms")
	return med
}
