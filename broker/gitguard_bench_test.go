//go:build linux

package broker

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/agentloom/loom/internal/gitguard/guardtest"
	"github.com/agentloom/loom/internal/jailtest"
	"github.com/agentloom/loom/sandbox"
)

// BenchmarkGitGuard measures what the git guard costs a command on a
// workspace of guardtest.BenchDirs directories.
//
//   - jailed-true: `true` run in the full jail on a warm helper, by a
//     broker with the guard and one without, interleaved command by
//     command; medians of each, and the guard's overhead as their
//     difference.
//
// The guard's own costs, without a jail, are gitguard's BenchmarkGuard
// and BenchmarkGuardNested.
func BenchmarkGitGuard(b *testing.B) {
	ws := guardtest.BenchWorkspace(b)
	p := sandbox.Policy{
		ReadableRoots: sandbox.SystemReadableRoots(),
		WritableRoots: []string{ws},
		Protected:     DefaultProtected(ws),
		Network:       sandbox.NetworkOff,
		EnvAllow:      []string{"PATH"},
	}
	b.Run("jailed-true", func(b *testing.B) {
		helper := jailtest.HostHelper(b)
		guarded := New(Options{HelperPath: helper})
		defer guarded.Close()
		bare := New(Options{HelperPath: helper})
		bare.git.Test.Off = true
		defer bare.Close()
		runTrue := func(br *Broker, warm bool) time.Duration {
			if warm {
				waitWarm(b, br)
			}
			start := time.Now()
			ex, d := br.Clear(context.Background(), sandbox.CallSpec{Argv: []string{"true"}, Policy: p,
				Env: map[string]string{"PATH": "/usr/bin:/bin"}, Budget: sandbox.Budget{MaxOutstanding: 1}})
			if d != nil {
				b.Fatal(d)
			}
			for range ex.Output() {
			}
			s := ex.Wait()
			took := time.Since(start)
			if s.ExitCode != 0 {
				b.Fatalf("settled %+v", s)
			}
			return took
		}
		runTrue(guarded, false) // probe, baseline sweep and watch setup: untimed
		runTrue(bare, false)
		var with, without []time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if i%2 == 0 {
				with = append(with, runTrue(guarded, true))
				without = append(without, runTrue(bare, true))
			} else {
				without = append(without, runTrue(bare, true))
				with = append(with, runTrue(guarded, true))
			}
		}
		b.StopTimer()
		mw, mo := medianOf(with), medianOf(without)
		b.ReportMetric(ms(mw), "guarded-median-ms")
		b.ReportMetric(ms(mo), "unguarded-median-ms")
		b.ReportMetric(ms(mw-mo), "overhead-ms")
	})
}

func medianOf(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
