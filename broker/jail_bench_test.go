//go:build linux

package broker

import (
	"context"
	"os/exec"
	"sort"
	"testing"
	"time"

	"github.com/agentloom/loom/internal/jailtest"
)

// BenchmarkTrue compares `true` run plainly with exec.Command and run
// through Clear in the full jail, in the same process. Each sub-benchmark
// reports the median wall time per run (median-ms); the jailed one also
// reports the overhead over the plain median measured in the same run.
func BenchmarkTrue(b *testing.B) {
	var plainMedian time.Duration
	b.Run("plain", func(b *testing.B) {
		plainMedian = benchMedian(b, func() {
			if err := exec.Command("true").Run(); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("jailed", func(b *testing.B) { benchJailed(b, New(Options{}), plainMedian) })
	// The test binary is a heavy helper (testing, rapid and go-cmp all
	// initialise before the broker's init runs); a host program that
	// imports the broker is what production re-executes.
	b.Run("jailed-host-helper", func(b *testing.B) {
		benchJailed(b, New(Options{HelperPath: jailtest.HostHelper(b)}), plainMedian)
	})
}

func benchJailed(b *testing.B, br *Broker, plainMedian time.Duration) {
	{
		p := testPolicy(b.TempDir())
		br.Available() // probe outside the timed loop
		med := benchMedian(b, func() {
			ex, d := br.Clear(context.Background(), CallSpec{Argv: []string{"true"}, Policy: p,
				Env: map[string]string{"PATH": "/usr/bin:/bin"}, Budget: Budget{MaxOutstanding: 1}})
			if d != nil {
				b.Fatal(d)
			}
			for range ex.Output() {
			}
			if s := ex.Wait(); s.ExitCode != 0 {
				b.Fatalf("settled %+v", s)
			}
		})
		if plainMedian > 0 {
			b.ReportMetric(float64(med-plainMedian)/float64(time.Millisecond), "overhead-ms")
		}
	}
}

// benchMedian times f b.N times and reports the median in milliseconds.
func benchMedian(b *testing.B, f func()) time.Duration {
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
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
