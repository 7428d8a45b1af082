package codemode

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkPipeline interleaves the whole pipeline — vet, the jailed
// build against warm archives (a fresh source each time, so no kept
// binary serves it) and the jailed run — of a trivial fmt program with a
// bare hermetic go build of the same file, alternating which goes first,
// and reports both medians and their ratio (the target is at most 0.8).
func BenchmarkPipeline(b *testing.B) {
	s := newSession(b, nil)
	bl, err := s.eng.buildStage()
	if err != nil {
		b.Fatal(err)
	}
	goBuild := bareGoBuild(b, bl.tc)
	ours := func(src string) time.Duration {
		start := time.Now()
		x, err := s.eng.Execute(b.Context(), s.call, Request{Source: []byte(src)})
		if err != nil || x.Run.Code != "" || x.Binary.Cached {
			b.Fatalf("the pipeline failed: %v %+v", err, x)
		}
		return time.Since(start)
	}
	goBuild(benchSource())
	ours(benchSource())
	versusGoBuild(b, "pipeline-ms", ours, goBuild)
}

// roundTripProgram calls kv.get n times from each of callers goroutines,
// timing every call with the program's own clock, and prints the median
// call in nanoseconds and the calls per second of the whole.
func roundTripProgram(callers, n int) string {
	return mainWith([]string{"context", "fmt", "sort", "sync", "time", "cap/kv"}, fmt.Sprintf(`ctx := context.Background()
	if err := kv.Set(ctx, "k", []byte("v")); err != nil {
		panic(err)
	}
	const callers, n = %d, %d
	lat := make([][]time.Duration, callers)
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				t := time.Now()
				if _, _, err := kv.Get(ctx, "k"); err != nil {
					panic(err)
				}
				lat[c] = append(lat[c], time.Since(t))
			}
		}()
	}
	wg.Wait()
	total := time.Since(start)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	fmt.Println(int64(all[len(all)/2]), int64(float64(len(all))/total.Seconds()))`, callers, n))
}

// BenchmarkCapabilityRoundTrip measures kv.get over the channel from
// inside a jailed program: the median round trip and calls per second,
// with one caller and with eight (targets for one: p50 ≤ 15 µs, ≥ 60k
// calls/s).
func BenchmarkCapabilityRoundTrip(b *testing.B) {
	s := newSession(b, nil)
	for _, callers := range []int{1, 8} {
		b.Run(fmt.Sprint("callers=", callers), func(b *testing.B) {
			var p50s, rates []time.Duration
			for b.Loop() {
				x, err := s.eng.Execute(b.Context(), s.call, Request{Source: []byte(roundTripProgram(callers, 20000/callers))})
				if err != nil || x.Run.Code != "" {
					b.Fatalf("%v %+v", err, x.Run)
				}
				f := strings.Fields(x.Run.Stdout)
				p50, _ := strconv.ParseInt(f[0], 10, 64)
				rate, _ := strconv.ParseInt(f[1], 10, 64)
				p50s, rates = append(p50s, time.Duration(p50)), append(rates, time.Duration(rate))
			}
			b.ReportMetric(float64(median(p50s))/float64(time.Microsecond), "p50-µs")
			b.ReportMetric(float64(median(rates)), "calls/s")
		})
	}
}
