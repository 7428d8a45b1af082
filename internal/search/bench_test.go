package search

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentloom/loom/internal/search/searchtest"
)

// benchTree writes the shared generated tree; one file in ten holds the
// needle.
func benchTree(b *testing.B) string {
	b.Helper()
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	if err := searchtest.WriteTree(root); err != nil {
		b.Fatal(err)
	}
	return root
}

// BenchmarkSearch compares plain rg (run directly, output discarded), rg
// --json parsed by RipgrepCollector (unjailed), and the Go engine.
func BenchmarkSearch(b *testing.B) {
	searchtest.RequireRipgrep(b)
	root := benchTree(b)
	o := Options{Pattern: "needle[A-Z]+"}
	b.Run("plain_rg", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command("rg", "-n", o.Pattern, root)
			cmd.Stdout = io.Discard
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("rg_json_collected", func(b *testing.B) {
		for b.Loop() {
			if r := rgRunAs(b, root, o, OperandPath); r.Matches != searchtest.Files/10 {
				b.Fatalf("matches %d", r.Matches)
			}
		}
	})
	b.Run("go_engine", func(b *testing.B) {
		for b.Loop() {
			r, err := Go(context.Background(), root, o)
			if err != nil || r.Matches != searchtest.Files/10 {
				b.Fatalf("matches %d: %v", r.Matches, err)
			}
		}
	})
}

// enginePatterns are the patterns BenchmarkEnginesOnGoSource times: the
// literal, case-insensitive literal and simple regular expressions the
// Go engine is held to within 2x of ripgrep on, and one with no literal
// to look for first (reported, not held).
var enginePatterns = []struct {
	name string
	o    Options
}{
	{"literal", Options{Pattern: "Deprecated:"}},
	{"literal_ci", Options{Pattern: "deprecated", CaseInsensitive: true}},
	{"regex_method", Options{Pattern: `func \(\w+ \*\w+\) Close`}},
	{"regex_alternation", Options{Pattern: `TODO|FIXME`}},
	{"regex_date", Options{Pattern: `\d{4}-\d{2}-\d{2}`}},
	{"regex_no_literal", Options{Pattern: `[^\x00-\x7F]{4}`}},
}

// BenchmarkEnginesOnGoSource times the Go engine and ripgrep side by
// side over the Go source tree, interleaved in each iteration: ripgrep
// as the grep tool runs it (rg --json on ".", parsed by the collector,
// unjailed) and plain rg -n writing to nothing. It reports the median of
// each (go_ms, rg_json_ms, rg_ms) and the ratios of the medians
// (go/rg_json, go/rg). Run it with
//
//	go test -run '^$' -bench EnginesOnGoSource -benchtime 15x ./internal/search/
func BenchmarkEnginesOnGoSource(b *testing.B) {
	searchtest.RequireRipgrep(b)
	root := goSourceTree(b)
	for _, p := range enginePatterns {
		b.Run(p.name, func(b *testing.B) {
			var goT, rgJSON, rgPlain []time.Duration
			plainArgs := slices.DeleteFunc(RipgrepArgsFor(root, p.o, OperandDir), func(a string) bool { return a == "--json" })
			for b.Loop() {
				t0 := time.Now()
				g, err := Go(context.Background(), root, p.o)
				t1 := time.Now()
				r := rgRunAs(b, root, p.o, OperandDir)
				t2 := time.Now()
				cmd := exec.Command("rg", plainArgs...)
				cmd.Dir, cmd.Stdout = root, io.Discard
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
				t3 := time.Now()
				if err != nil || g.Matches != r.Matches || g.Matches == 0 {
					b.Fatalf("go %d matches (%v), ripgrep %d", g.Matches, err, r.Matches)
				}
				goT, rgJSON, rgPlain = append(goT, t1.Sub(t0)), append(rgJSON, t2.Sub(t1)), append(rgPlain, t3.Sub(t2))
			}
			mg, mj, mp := medianOf(goT), medianOf(rgJSON), medianOf(rgPlain)
			b.ReportMetric(float64(mg.Microseconds())/1e3, "go_ms")
			b.ReportMetric(float64(mj.Microseconds())/1e3, "rg_json_ms")
			b.ReportMetric(float64(mp.Microseconds())/1e3, "rg_ms")
			b.ReportMetric(float64(mg)/float64(mj), "go/rg_json")
			b.ReportMetric(float64(mg)/float64(mp), "go/rg")
		})
	}
}

// medianOf returns the median of samples.
func medianOf(samples []time.Duration) time.Duration {
	s := slices.Clone(samples)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkConfirmOnGoSource times Confirm as the grep tool runs it on
// ripgrep's result (here the Go engine's, the same hits) for TODO|FIXME
// over the Go source tree, 1,000 matching lines shown: the files holding
// them re-read and their lines compared.
func BenchmarkConfirmOnGoSource(b *testing.B) {
	root := goSourceTree(b)
	res, err := Go(context.Background(), root, Options{Pattern: `TODO|FIXME`})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if r := Confirm(context.Background(), root, res, 1000, 0); r.Unconfirmed != 0 {
			b.Fatalf("%d hits unconfirmed", r.Unconfirmed)
		}
	}
}
