//go:build linux

package broker

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentloom/loom/broker/internal/jail"
	"github.com/agentloom/loom/sandbox"
)

// BenchmarkPrimedHandover clears `true` commands one after another under
// one policy on a broker with its default warm pool, full of helpers
// primed for that policy before each command (the wait for the refill is
// outside the timing), with every re-validation of what the priming read
// on. It reports the share of commands a primed helper served
// (primed/cmd) and how many were confined afresh instead (unprimed): on
// a quiet host every command is served primed; on a busy one another
// program's change near a path the priming read (a socket bound, a
// temporary file made) retires a primed helper now and then. These are
// measurements, never a test's pass or fail: what a primed helper's
// confinement holds is TestEscapeSuite/primed's, and what re-validation
// catches is warmprime_linux_test.go's.
func BenchmarkPrimedHandover(b *testing.B) {
	ws := b.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".git/hooks"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".git/config"), []byte("[core]\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	br := newTestBroker(b, Options{})
	br.test.tracePhases = true
	p := testPolicy(ws)
	p.Protected = DefaultProtected(ws)
	clearTrue := func() (primed bool) {
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
		return slices.ContainsFunc(br.phasesOf(ex), func(m jail.PhaseMark) bool { return m.Name == jail.PrimedCommandMark })
	}
	clearTrue() // the first command: what the pool is primed for from then on
	served := 0
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		waitPool(b, br, defaultWarmHelpers)
		b.StartTimer()
		if clearTrue() {
			served++
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(served)/float64(b.N), "primed/cmd")
	b.ReportMetric(float64(b.N-served), "unprimed")
}
