//go:build linux

package broker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/broker/internal/jail"
	"github.com/agentloom/loom/internal/jailtest"
	"github.com/agentloom/loom/sandbox"
)

// BenchmarkWarmPhases runs BenchmarkBatch's warm-pool batches (batchCommands
// `true` commands back to back on a broker with its default pool, full
// when each batch begins) with phase marks on, and reports, for every
// phase, its median over the commands in microseconds (<phase>-µs): the
// time from the mark before it (in the broker or its helper, on one
// monotonic clock) to its own. A phase is named for the step that ends
// with it: "admitted" is Clear's checks and admission, "taken" the warm
// handover, "config" the helper's wake-up, the m.* and r.* marks the mount
// steps, "exec" the report's end (the command exec'd), "reaped" the
// command's run and reaping, "settled" the settlement. It also reports
// the whole (total-µs) and Clear-to-settlement as the caller sees it
// (wall-µs), and logs the phases in the order they happen. The cold
// sub-benchmark runs the same with prestarting off
// (Options.WarmHelperIdle < 0): each command's helper is started for it
// after the git guard ("spawned": the fork and exec of the helper, as
// the broker waits for it), "started" is the helper's own start up to
// its first Go code (its runtime and package inits), "p.loopback" and
// "prepared" what it prepares before reading its configuration.
func BenchmarkWarmPhases(b *testing.B) {
	b.Run("warm", func(b *testing.B) { benchPhases(b, 0) })
	b.Run("cold", func(b *testing.B) { benchPhases(b, -1) })
}

// benchPhases is BenchmarkWarmPhases on a broker with the given
// Options.WarmHelperIdle.
func benchPhases(b *testing.B, idle time.Duration) {
	ws := b.TempDir()
	for _, d := range []string{".git/hooks", ".git/objects"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, ".git/config"), []byte("[core]\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	br := New(Options{HelperPath: jailtest.HostHelper(b), WarmHelperIdle: idle})
	br.test.tracePhases = true
	defer br.Close()
	p := testPolicy(ws)
	p.Protected = DefaultProtected(ws)
	run := func() []jail.PhaseMark {
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
		return br.phasesOf(ex)
	}
	run() // the probes and first fill, untimed
	durations := map[string][]time.Duration{}
	var order []string
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if idle >= 0 {
			waitPool(b, br, defaultWarmHelpers)
		}
		b.StartTimer()
		for range batchCommands {
			began := time.Now()
			marks := run()
			durations["wall"] = append(durations["wall"], time.Since(began))
			slices.SortStableFunc(marks, func(x, y jail.PhaseMark) int { return int(x.NS - y.NS) })
			start := slices.IndexFunc(marks, func(m jail.PhaseMark) bool { return m.Name == "clear" })
			if start < 0 {
				b.Fatalf("no clear mark in %v", marks)
			}
			for k := start + 1; k < len(marks); k++ {
				name := marks[k].Name
				if _, ok := durations[name]; !ok {
					order = append(order, name)
				}
				durations[name] = append(durations[name], time.Duration(marks[k].NS-marks[k-1].NS))
			}
			durations["total"] = append(durations["total"], time.Duration(marks[len(marks)-1].NS-marks[start].NS))
		}
	}
	b.StopTimer()
	var line strings.Builder
	for _, name := range append(order, "total", "wall") {
		d := slices.Clone(durations[name])
		slices.Sort(d)
		med := float64(d[len(d)/2]) / float64(time.Microsecond)
		b.ReportMetric(med, name+"-µs")
		fmt.Fprintf(&line, " %s %.0f", name, med)
	}
	// The metrics print sorted by name; the log keeps the phases in the
	// order they happen.
	b.Logf("in order (µs):%s", line.String())
}
