//go:build linux

package broker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/agentloom/loom/internal/jailtest"
)

// benchGitDirs is the size of the workspace the git guard benchmarks
// run on: this many directories (100 top-level ones of 49 each, plus a
// repository and three nested ones).
const benchGitDirs = 5000

// benchGitWorkspace builds a repository of benchGitDirs directories with
// three nested repositories.
func benchGitWorkspace(b *testing.B) string {
	b.Helper()
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	for i := 0; i < 100; i++ {
		for j := 0; j < 49; j++ {
			if err := os.MkdirAll(filepath.Join(ws, fmt.Sprintf("d%03d", i), fmt.Sprintf("e%02d", j)), 0o755); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, r := range []string{".", "d001/lib", "d050/vendor/x", "d099/e48/y"} {
		cmd := exec.Command("git", "init", "-q", filepath.Join(ws, r))
		cmd.Env = []string{"HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin"}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git init: %v %s", err, out)
		}
	}
	return ws
}

// BenchmarkGitGuard measures what the git guard costs a command on a
// workspace of benchGitDirs directories.
//
//   - jailed-true: `true` run in the full jail on a warm helper, by a
//     broker with the guard and one without, interleaved command by
//     command; medians of each, and the guard's overhead as their
//     difference.
//
// The guard's own costs, without a jail, are gitguard's BenchmarkGuard
// and BenchmarkGuardNested.
func BenchmarkGitGuard(b *testing.B) {
	ws := benchGitWorkspace(b)
	p := Policy{
		ReadableRoots: SystemReadableRoots(),
		WritableRoots: []string{ws},
		Protected:     DefaultProtected(ws),
		Network:       NetworkOff,
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
			ex, d := br.Clear(context.Background(), CallSpec{Argv: []string{"true"}, Policy: p,
				Env: map[string]string{"PATH": "/usr/bin:/bin"}, Budget: Budget{MaxOutstanding: 1}})
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
