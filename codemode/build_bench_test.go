package codemode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentloom/loom/broker"
)

// benchSerial makes every benchmarked source unique across the
// benchmark's runs, so no build is served from the kept binaries or the
// go command's cache.
var benchSerial atomic.Int64

func benchSource() string {
	return fmt.Sprintf("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"bench\", %d, %d) }\n", time.Now().UnixNano(), benchSerial.Add(1))
}

// BenchmarkBuild interleaves the builder's uncached Build (the program
// compiled and linked in its jail against the warm archives) with a bare
// hermetic `go build -trimpath -buildvcs=false -ldflags='-s -w'` of the
// same file (its own warm GOCACHE, an environment built from nothing),
// alternating which goes first, and reports both medians and their
// ratio.
func BenchmarkBuild(b *testing.B) {
	bl := shared(b)
	goBuild := bareGoBuild(b, bl.tc)
	ours := func(src string) time.Duration {
		start := time.Now()
		bin, err := bl.Build(context.Background(), &Program{Source: []byte(src)})
		if err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		if bin.Cached {
			b.Fatal("a benchmarked build was served from the cache")
		}
		return d
	}
	goBuild(benchSource()) // warm the bare build's GOCACHE
	ours(benchSource())
	b.ResetTimer()
	versusGoBuild(b, "build-ms", ours, goBuild)
}

// bareGoBuild returns a bare hermetic `go build -trimpath
// -buildvcs=false -ldflags='-s -w'` of one source with toolchain tc, in a
// directory and GOCACHE of its own and an environment built from
// nothing, timing each build. A failure fails b (Error, so either side
// of BenchmarkFirstCallSideBySide may call it).
func bareGoBuild(b *testing.B, tc Toolchain) func(src string) time.Duration {
	dir := b.TempDir()
	env := []string{
		"PATH=" + filepath.Dir(tc.goBinary()), "HOME=" + dir, "GOCACHE=" + filepath.Join(dir, "gocache"),
		"GOENV=off", "GOWORK=off", "GOFLAGS=", "GOPROXY=off", "GOTOOLCHAIN=local", "CGO_ENABLED=0", "GOTELEMETRY=off",
	}
	return func(src string) time.Duration {
		file := filepath.Join(dir, "main.go")
		if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
			b.Error(err)
			return 0
		}
		cmd := exec.Command(tc.goBinary(), "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", filepath.Join(dir, "out"), "main.go")
		cmd.Dir, cmd.Env = dir, env
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Errorf("go build: %v\n%s", err, out)
		}
		return time.Since(start)
	}
}

// versusGoBuild runs ours and goBuild on one fresh source per iteration,
// alternating which goes first, and reports both medians (ours as
// metric) and their ratio.
func versusGoBuild(b *testing.B, metric string, ours, goBuild func(src string) time.Duration) {
	var a, g []time.Duration
	for i := 0; b.Loop(); i++ {
		src := benchSource()
		if i%2 == 0 {
			a = append(a, ours(src))
			g = append(g, goBuild(src))
		} else {
			g = append(g, goBuild(src))
			a = append(a, ours(src))
		}
	}
	ma, mg := median(a), median(g)
	b.ReportMetric(float64(ma)/float64(time.Millisecond), metric)
	b.ReportMetric(float64(mg)/float64(time.Millisecond), "gobuild-ms")
	b.ReportMetric(float64(ma)/float64(mg), "ratio")
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkFirstCall interleaves the first code_mode call of an Engine
// on an empty cache directory (warm-up, vet, jailed build and jailed
// run of a fmt program, the whole allowlist and the embedded prelude
// offered) with the first bare hermetic go build of the same file on an
// empty GOCACHE, each in temporary directories of its own, alternating
// which goes first; it reports both medians, the children's CPU of
// each (what the test process reaped: the go command and its compiles;
// jailed work is counted by the broker's helper, not here) and their
// ratio (the goal: at most 1). It is slow: -benchtime 2x or 3x.
func BenchmarkFirstCall(b *testing.B) {
	ours, goBuild := firstCalls(b)
	childCPU := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	var a, g, ac, gc []time.Duration
	for i := 0; b.Loop(); i++ {
		src := benchSource()
		run := func(f func(string) time.Duration, wall, cpu *[]time.Duration) {
			c := childCPU()
			*wall = append(*wall, f(src))
			*cpu = append(*cpu, childCPU()-c)
		}
		if i%2 == 0 {
			run(ours, &a, &ac)
			run(goBuild, &g, &gc)
		} else {
			run(goBuild, &g, &gc)
			run(ours, &a, &ac)
		}
	}
	ma, mg := median(a), median(g)
	b.ReportMetric(ma.Seconds(), "first-call-s")
	b.ReportMetric(mg.Seconds(), "gobuild-s")
	b.ReportMetric(median(ac).Seconds(), "first-call-cpu-s")
	b.ReportMetric(median(gc).Seconds(), "gobuild-cpu-s")
	b.ReportMetric(float64(ma)/float64(mg), "ratio")
}

// BenchmarkFirstCallSideBySide starts the first code_mode call and the
// first bare go build of the same file (as BenchmarkFirstCall makes
// them, each on an empty cache) at the same instant, so both meet the
// same load: on a host whose load swings within a build's time, one
// after the other measures the swing more than the two. It reports both
// medians and the median of the per-pair ratios (the goal: at most 1).
// It is slow: -benchtime 2x or 3x.
func BenchmarkFirstCallSideBySide(b *testing.B) {
	ours, goBuild := firstCalls(b)
	var a, g []time.Duration
	var ratios []float64
	for b.Loop() {
		src := benchSource()
		var wa, wg time.Duration
		var wg2 sync.WaitGroup
		wg2.Go(func() { wa = ours(src) })
		wg2.Go(func() { wg = goBuild(src) })
		wg2.Wait()
		a, g = append(a, wa), append(g, wg)
		ratios = append(ratios, float64(wa)/float64(wg))
	}
	slices.Sort(ratios)
	b.ReportMetric(median(a).Seconds(), "first-call-s")
	b.ReportMetric(median(g).Seconds(), "gobuild-s")
	b.ReportMetric(ratios[len(ratios)/2], "ratio")
}

// firstCalls returns the two sides of the first-call benchmarks: the
// first code_mode call of a new Engine on an empty cache directory, and
// the first bare hermetic go build on an empty GOCACHE, each timing one
// source. Either may run beside the other.
func firstCalls(b *testing.B) (ours, goBuild func(src string) time.Duration) {
	s := newSession(b, nil)
	tc, err := findToolchain(b.Context(), "")
	if err != nil {
		b.Fatal(err)
	}
	ours = func(src string) time.Duration {
		eng, err := New(Options{Registry: s.reg, Broker: s.call.Broker.(*broker.Broker), Jobs: s.jobs, Builder: BuilderOptions{CacheDir: b.TempDir()}})
		if err != nil {
			b.Error(err)
			return 0
		}
		start := time.Now()
		x, err := eng.Execute(b.Context(), s.call, Request{Source: []byte(src)})
		if err != nil || x.Run.Code != "" || x.Binary.Cached {
			b.Errorf("the first call failed: %v %+v", err, x)
		}
		return time.Since(start)
	}
	goBuild = func(src string) time.Duration {
		return bareGoBuild(b, tc)(src) // a directory and GOCACHE of its own
	}
	return ours, goBuild
}
