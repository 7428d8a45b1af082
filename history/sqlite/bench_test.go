package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloom/loom/history"
)

// Shape of the synthetic corpus the benchmarks generate (nothing is
// committed): benchEntries entries of 8 to 24 words drawn from a Zipf
// distribution over benchVocabulary pseudo-words, across benchSessions
// sessions, indexed in batches of benchBatch.
const (
	benchEntries    = 1_000_000
	benchVocabulary = 50_000
	benchSessions   = 1_000
	benchBatch      = 10_000
)

// corpus generates deterministic synthetic entries.
type corpus struct {
	rng   *rand.Rand
	zipf  *rand.Zipf
	vocab []string
}

// newCorpus draws texts with its own seed from the one vocabulary every
// corpus shares, so queries drawn by one corpus find texts of another.
func newCorpus(seed uint64) *corpus {
	vrng := rand.New(rand.NewPCG(1, 0x5eed))
	vocab := make([]string, benchVocabulary)
	for i := range vocab {
		b := make([]byte, 3+vrng.IntN(8))
		for j := range b {
			b[j] = byte('a' + vrng.IntN(26))
		}
		vocab[i] = string(b)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	return &corpus{rng: rng, zipf: rand.NewZipf(rng, 1.1, 4, benchVocabulary-1), vocab: vocab}
}

func (c *corpus) word() string { return c.vocab[c.zipf.Uint64()] }

func (c *corpus) text() string {
	var b strings.Builder
	for i := range 8 + c.rng.IntN(17) {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(c.word())
	}
	return b.String()
}

func (c *corpus) batch(start, n int) []history.Entry {
	es := make([]history.Entry, n)
	for i := range es {
		seq := start + i
		kind := "message"
		if seq%4 == 3 {
			kind = "tool_result"
		}
		es[i] = history.Entry{Session: fmt.Sprintf("session-%04d", seq%benchSessions), ID: fmt.Sprintf("entry-%d", seq),
			Kind: kind, Role: "assistant", Text: c.text(), Time: day0.Add(time.Duration(seq) * time.Second)}
	}
	return es
}

// benchStore is the 1M-entry database, built once per benchmark process.
var (
	benchOnce    sync.Once
	benchStore   *Store
	benchDir     string
	benchRate    float64
	benchCPURate float64
	benchErr     error
)

func millionEntries(b *testing.B) *Store {
	benchOnce.Do(func() {
		benchDir, benchErr = os.MkdirTemp("", "history-bench-")
		if benchErr != nil {
			return
		}
		benchStore, benchErr = Open(filepath.Join(benchDir, "history.db"), Options{})
		if benchErr != nil {
			return
		}
		c := newCorpus(1)
		var gen, index, cpu time.Duration
		for start := 0; start < benchEntries; start += benchBatch {
			t0 := time.Now()
			es := c.batch(start, benchBatch)
			t1, c1 := time.Now(), cpuTime()
			if _, benchErr = benchStore.IndexBatch(context.Background(), es); benchErr != nil {
				return
			}
			gen += t1.Sub(t0)
			index += time.Since(t1)
			cpu += cpuTime() - c1
		}
		benchRate = benchEntries / index.Seconds()
		benchCPURate = benchEntries / cpu.Seconds()
		fmt.Fprintf(os.Stderr, "built %d entries: indexing %v (%.0f entries/s; %v CPU, %.0f entries/cpu-s), generating %v\n",
			benchEntries, index, benchRate, cpu, benchCPURate, gen)
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchStore
}

// BenchmarkIngest measures batched indexing into a growing database, with
// and without the trigram index, in entries per second.
func BenchmarkIngest(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts Options
	}{{"words+trigram", Options{}}, {"words-only", Options{NoSubstrings: true}}} {
		b.Run(tc.name, func(b *testing.B) {
			s := openTest(b, tc.opts)
			c := newCorpus(2)
			batches := make([][]history.Entry, 0, 8)
			for i := range 8 {
				batches = append(batches, c.batch(i*benchBatch, benchBatch))
			}
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				es := batches[i%len(batches)]
				for j := range es { // fresh ids: re-indexing known ones is a no-op
					es[j].ID = fmt.Sprintf("entry-%d-%d", i, j)
				}
				if _, err := s.IndexBatch(context.Background(), es); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "entries/s")
			// The rate per CPU-second does not depend on what else the
			// machine is running.
			b.ReportMetric(float64(b.N*benchBatch)/(cpuTime()-cpu0).Seconds(), "entries/cpu-s")
		})
	}
}

// BenchmarkSearch1M measures search latency over 1,000,000 entries for
// queries of 1 to 3 words drawn from the corpus distribution, reporting
// the p50 and p99 per-query latency, plus the rate at which the shared
// database was built.
func BenchmarkSearch1M(b *testing.B) {
	s := millionEntries(b)
	for words := 1; words <= 3; words++ {
		b.Run(fmt.Sprintf("words=%d", words), func(b *testing.B) {
			c := newCorpus(uint64(100 + words))
			queries := make([]string, 512)
			for i := range queries {
				ws := make([]string, words)
				for j := range ws {
					ws[j] = c.word()
				}
				queries[i] = strings.Join(ws, " ")
			}
			var lat []time.Duration
			hits := 0
			ctx := context.Background()
			for i := 0; b.Loop(); i++ {
				t0 := time.Now()
				h, err := s.Search(ctx, history.Query{Text: queries[i%len(queries)], Limit: 10})
				lat = append(lat, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				hits += len(h)
			}
			slices.Sort(lat)
			ms := func(q float64) float64 {
				return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000
			}
			b.ReportMetric(ms(0.50), "p50-ms")
			b.ReportMetric(ms(0.99), "p99-ms")
			b.ReportMetric(float64(hits)/float64(len(lat)), "hits/op")
			b.ReportMetric(benchRate, "build-entries/s")
			b.ReportMetric(benchCPURate, "build-entries/cpu-s")
		})
	}
}
