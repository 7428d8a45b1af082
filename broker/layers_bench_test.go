//go:build linux

package broker

import (
	"context"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/internal/jailtest"
	"github.com/agentloom/loom/sandbox"
)

// BenchmarkHostViewReadOnly compares the two ways the jail makes the
// host view read-only, interleaved run by run on cold helpers: one
// recursive mount_setattr (Linux 5.12+) and a bind remount of every
// mount point (the fallback). It reports each variant's median wall time
// for `true` and how many mount points the host has (the fallback's
// cost grows with it).
func BenchmarkHostViewReadOnly(b *testing.B) {
	br := New(Options{HelperPath: jailtest.HostHelper(b), WarmHelperIdle: -1})
	defer br.Close()
	defer benchHostViewByRemount.Store(false)
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
	runTrue()
	var setattr, remount []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		byRemount := i%2 == 1
		benchHostViewByRemount.Store(byRemount)
		start := time.Now()
		runTrue()
		if byRemount {
			remount = append(remount, time.Since(start))
		} else {
			setattr = append(setattr, time.Since(start))
		}
	}
	b.StopTimer()
	median := func(s []time.Duration) float64 {
		if len(s) == 0 {
			return 0
		}
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return float64(s[len(s)/2]) / float64(time.Millisecond)
	}
	b.ReportMetric(median(setattr), "setattr-median-ms")
	b.ReportMetric(median(remount), "remount-median-ms")
	mountinfo, _ := os.ReadFile("/proc/self/mountinfo")
	b.ReportMetric(float64(strings.Count(string(mountinfo), "\n")), "mounts")
}
