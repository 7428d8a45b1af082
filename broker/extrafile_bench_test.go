//go:build linux

package broker

import (
	"bufio"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentloom/loom/sandbox"
)

// BenchmarkExtraFile times an empty-root run of the static probe that
// answers one line on CallSpec.ExtraFile (code mode's run stage, a
// trivial program), from Clear to settlement, on a helper started for
// the command (cold: the file inherited at ExtraFileFD) and on a warm
// helper (the file passed over its handoff socket), interleaved run by
// run. It reports each variant's median (cold-median-ms,
// warm-median-ms); the wait for the warm helper to be ready is outside
// the timing, as a model's turn is between two commands.
func BenchmarkExtraFile(b *testing.B) {
	prog := staticProbe(b, b.TempDir())
	cold := newTestBroker(b, Options{WarmHelperIdle: -1})
	warm := newTestBroker(b, Options{})
	once := func(br *Broker) time.Duration {
		ours, theirs := socketPair(b)
		spec := emptyRootSpec(prog, false, "ping")
		spec.ExtraFile = theirs
		spec.Key = sandbox.StepKey{OpID: "bench", StepID: "extra"}
		spec.Budget = sandbox.Budget{MaxOutstanding: 1}
		start := time.Now()
		ex, err := br.Clear(context.Background(), spec)
		if err != nil {
			b.Fatal(err)
		}
		theirs.Close()
		ours.WriteString("ping\n")
		if reply, _ := bufio.NewReader(ours).ReadString('\n'); reply != "pong ping\n" {
			b.Fatalf("reply %q", reply)
		}
		for range ex.Output() {
		}
		if s := ex.Wait(); s.ExitCode != 0 {
			b.Fatalf("settled %+v", s)
		}
		d := time.Since(start)
		ours.Close()
		return d
	}
	once(cold) // the one-time layer probes (and the first prestart), untimed
	once(warm)
	var coldSamples, warmSamples []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		coldSamples = append(coldSamples, once(cold))
		b.StopTimer()
		waitWarm(b, warm)
		b.StartTimer()
		warmSamples = append(warmSamples, once(warm))
	}
	b.StopTimer()
	median := func(s []time.Duration) float64 {
		slices.Sort(s)
		return float64(s[len(s)/2]) / float64(time.Millisecond)
	}
	b.ReportMetric(median(coldSamples), "cold-median-ms")
	b.ReportMetric(median(warmSamples), "warm-median-ms")
}
