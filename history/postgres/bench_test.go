package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/history/historytest"
	"github.com/agentloom/loom/history/sqlite"
)

// The side-by-side benchmark of the two indexes over one synthetic
// session log: entries of a few hundred bytes to a few KB (most 200 B to
// 2 KB, a tenth up to 6 KB) of Zipf-distributed words with code-like
// punctuation, indexed in batches, then searched with one to three words
// drawn from the same distribution. Its size is benchEntriesEnv (default
// 20,000, so `go test -bench` stays quick; the target is 1,000,000).
const (
	benchEntriesEnv = "LOOM_BENCH_HISTORY_ENTRIES"
	benchVocabulary = 50_000
	benchSessions   = 1_000
	benchBatch      = 2_000
	benchQueries    = 1_024
)

func benchEntries(b *testing.B) int {
	n := 20_000
	if v := os.Getenv(benchEntriesEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < benchBatch {
			b.Fatalf("%s=%q: want a number of entries of at least %d", benchEntriesEnv, v, benchBatch)
		}
	}
	return n
}

// logCorpus generates a deterministic session log.
type logCorpus struct {
	rng   *rand.Rand
	zipf  *rand.Zipf
	vocab []string
}

func newLogCorpus(seed uint64) *logCorpus {
	vrng := rand.New(rand.NewPCG(1, 0x5eed))
	vocab := make([]string, benchVocabulary)
	for i := range vocab {
		w := make([]byte, 2+vrng.IntN(9))
		for j := range w {
			w[j] = byte('a' + vrng.IntN(26))
		}
		vocab[i] = string(w)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	return &logCorpus{rng: rng, zipf: rand.NewZipf(rng, 1.1, 4, benchVocabulary-1), vocab: vocab}
}

func (c *logCorpus) word() string { return c.vocab[c.zipf.Uint64()] }

// text is one entry: prose and code-like lines until its drawn size.
func (c *logCorpus) text() string {
	var size int
	switch r := c.rng.Float64(); {
	case r < 0.6:
		size = 200 + c.rng.IntN(600)
	case r < 0.9:
		size = 800 + c.rng.IntN(1200)
	default:
		size = 2000 + c.rng.IntN(4000)
	}
	var b strings.Builder
	for b.Len() < size {
		switch c.rng.IntN(12) {
		case 0:
			b.WriteString("\n")
		case 1:
			fmt.Fprintf(&b, " %s/%s.go:%d:", c.word(), c.word(), c.rng.IntN(900))
		case 2:
			fmt.Fprintf(&b, " %s_%s(%s)", c.word(), c.word(), c.word())
		default:
			b.WriteString(" " + c.word())
		}
	}
	return b.String()
}

func (c *logCorpus) batch(start, n int) ([]history.Entry, int) {
	es := make([]history.Entry, n)
	bytes := 0
	for i := range es {
		seq := start + i
		kind := "message"
		if seq%4 == 3 {
			kind = "tool_result"
		}
		es[i] = history.Entry{Session: fmt.Sprintf("session-%04d", seq%benchSessions), ID: fmt.Sprintf("entry-%d", seq),
			Kind: kind, Role: "assistant", Text: c.text(), Time: historytest.Day0.Add(time.Duration(seq) * time.Second)}
		bytes += len(es[i].Text)
	}
	return es, bytes
}

// benchIndex is one index under the benchmark.
type benchIndex struct {
	historytest.Index
	// disk answers the database's bytes at rest, and the bytes of its
	// write-ahead log beside it (SQLite's -wal file; PostgreSQL's is the
	// cluster's, not the schema's, and answered 0).
	disk func() (db, wal int64)
	// parts answers the bytes of each table and index, largest first,
	// logged so a figure can be traced to what holds it.
	parts func() []part
}

// part is one table or index and its bytes on disk.
type part struct {
	name  string
	bytes int64
}

// BenchmarkIndexes builds the same log in the SQLite and the PostgreSQL
// index and reports, for each: ingest in entries/s (batches of 2,000),
// database bytes at rest per text byte (PostgreSQL's after VACUUM
// ANALYZE, which autovacuum would run), SQLite's WAL beside it, and the p50 and p99 latency of searches
// of one to three words (limit 10).
func BenchmarkIndexes(b *testing.B) {
	n := benchEntries(b)
	b.Run("sqlite", func(b *testing.B) {
		dir := b.TempDir()
		path := filepath.Join(dir, "history.db")
		s, err := sqlite.Open(path, sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		runIndexBench(b, n, benchIndex{s, func() (db, wal int64) {
			size := func(p string) int64 {
				fi, err := os.Stat(p)
				if err != nil {
					b.Fatal(err)
				}
				return fi.Size()
			}
			return size(path), size(path+"-wal") + size(path+"-shm")
		}, func() []part { return sqliteParts(b, path) }})
	})
	b.Run("postgres", func(b *testing.B) {
		s := openTest(b, Options{})
		runIndexBench(b, n, benchIndex{s, func() (db, wal int64) {
			ctx := context.Background()
			if _, err := s.pool.Exec(ctx, `VACUUM ANALYZE entries`); err != nil {
				b.Fatal(err)
			}
			if s.Substrings() {
				if _, err := s.pool.Exec(ctx, `VACUUM ANALYZE vocabulary`); err != nil {
					b.Fatal(err)
				}
			}
			var total int64
			err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
				JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`, s.Schema()).Scan(&total)
			if err != nil {
				b.Fatal(err)
			}
			return total, 0
		}, func() []part { return s.parts(b) }})
	})
}

func runIndexBench(b *testing.B, n int, ix benchIndex) {
	ctx := context.Background()
	c := newLogCorpus(1)
	var index, cpu time.Duration
	text := 0
	for start := 0; start < n; start += benchBatch {
		es, bytes := c.batch(start, min(benchBatch, n-start))
		text += bytes
		t0, c0 := time.Now(), cpuTime()
		if _, err := ix.IndexBatch(ctx, es); err != nil {
			b.Fatal(err)
		}
		index += time.Since(t0)
		cpu += cpuTime() - c0
	}
	disk, wal := ix.disk()
	for _, p := range ix.parts() {
		b.Logf("%-32s %12d bytes %6.3f× text", p.name, p.bytes, float64(p.bytes)/float64(text))
	}
	q := newLogCorpus(7)
	queries := make([]string, benchQueries)
	for i := range queries {
		ws := make([]string, 1+i%3)
		for j := range ws {
			ws[j] = q.word()
		}
		queries[i] = strings.Join(ws, " ")
	}
	var lat []time.Duration
	hits := 0
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		h, err := ix.Search(ctx, history.Query{Text: queries[i%len(queries)], Limit: 10})
		lat = append(lat, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		hits += len(h)
	}
	slices.Sort(lat)
	ms := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
	b.ReportMetric(float64(hits)/float64(len(lat)), "hits/op")
	b.ReportMetric(float64(n)/index.Seconds(), "ingest-entries/s")
	// Per CPU-second of this process, which does not depend on what else
	// the machine runs: all of SQLite's work, only the client's share of
	// PostgreSQL's.
	b.ReportMetric(float64(n)/cpu.Seconds(), "ingest-entries/cpu-s")
	b.ReportMetric(float64(disk)/float64(text), "disk/text")
	b.ReportMetric(float64(wal)/float64(text), "wal/text")
	b.ReportMetric(float64(text)/float64(n), "text-bytes/entry")
}

// sqliteParts answers the bytes of each table and index of the SQLite
// database at path (FTS5 shadow tables included), from dbstat.
func sqliteParts(b *testing.B, path string) []part {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var out []part
	for rows.Next() {
		var p part
		if err := rows.Scan(&p.name, &p.bytes); err != nil {
			b.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// parts answers the bytes of each table (its heap and TOAST) and index
// of the schema.
func (s *Store) parts(b *testing.B) []part {
	rows, err := s.pool.Query(context.Background(), `SELECT c.relname || CASE c.relkind WHEN 'r' THEN ' (heap+toast)' ELSE '' END,
			CASE c.relkind WHEN 'r' THEN pg_table_size(c.oid) ELSE pg_relation_size(c.oid) END
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind IN ('r', 'i') ORDER BY 2 DESC`, s.Schema())
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var out []part
	for rows.Next() {
		var p part
		if err := rows.Scan(&p.name, &p.bytes); err != nil {
			b.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// BenchmarkFloors measures what the indexes cannot go below: the same log
// (LOOM_BENCH_HISTORY_ENTRIES entries, batches of 2,000, one transaction
// each) stored with nothing but the text, and with nothing but the word
// index, in ingest entries/s and bytes per text byte. SQLite's word index
// alone is a contentless FTS5 table declared and tuned as the store's;
// PostgreSQL's is a table of the tsvector column (positions included, as
// phrases need) under GIN, the vectors computed before the clock starts.
// Run it with -benchtime=1x.
func BenchmarkFloors(b *testing.B) {
	n := benchEntries(b)
	c := newLogCorpus(1)
	var batches [][]history.Entry
	text := 0
	for start := 0; start < n; start += benchBatch {
		es, bytes := c.batch(start, min(benchBatch, n-start))
		batches = append(batches, es)
		text += bytes
	}
	report := func(b *testing.B, took, cpu time.Duration, disk int64) {
		b.ReportMetric(float64(n)/took.Seconds(), "ingest-entries/s")
		b.ReportMetric(float64(n)/cpu.Seconds(), "ingest-entries/cpu-s")
		b.ReportMetric(float64(disk)/float64(text), "disk/text")
	}
	for _, tc := range []struct{ name, create, insert string }{
		{"sqlite-text-only", `CREATE TABLE t(text TEXT NOT NULL)`, `INSERT INTO t(rowid, text) VALUES(?, ?)`},
		{"sqlite-fts5-only", `CREATE VIRTUAL TABLE t USING fts5(text, content='', columnsize=0, tokenize='unicode61 remove_diacritics 2');
			INSERT INTO t(t, rank) VALUES('hashsize', 16777216); INSERT INTO t(t, rank) VALUES('automerge', 8)`, `INSERT INTO t(rowid, text) VALUES(?, ?)`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				path := filepath.Join(b.TempDir(), "floor.db")
				db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
				if err != nil {
					b.Fatal(err)
				}
				for _, q := range strings.Split(tc.create, ";") {
					if _, err := db.Exec(q); err != nil {
						b.Fatal(err)
					}
				}
				t0, c0 := time.Now(), cpuTime()
				seq := 0
				for _, es := range batches {
					tx, err := db.Begin()
					if err != nil {
						b.Fatal(err)
					}
					st, err := tx.Prepare(tc.insert)
					if err != nil {
						b.Fatal(err)
					}
					for _, e := range es {
						seq++
						if _, err := st.Exec(seq, e.Text); err != nil {
							b.Fatal(err)
						}
					}
					if err := tx.Commit(); err != nil {
						b.Fatal(err)
					}
				}
				took, cpu := time.Since(t0), cpuTime()-c0
				if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
					b.Fatal(err)
				}
				db.Close()
				fi, err := os.Stat(path)
				if err != nil {
					b.Fatal(err)
				}
				report(b, took, cpu, fi.Size())
			}
		})
	}
	for _, tc := range []struct{ name, create string }{
		{"postgres-text-only", `CREATE TABLE floor(text text NOT NULL)`},
		{"postgres-gin-only", `CREATE TABLE floor(words tsvector NOT NULL); CREATE INDEX floor_words ON floor USING gin(words)`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := openTest(b, Options{NoSubstrings: true})
			ctx := context.Background()
			for b.Loop() {
				if _, err := s.pool.Exec(ctx, `DROP TABLE IF EXISTS floor; `+tc.create); err != nil {
					b.Fatal(err)
				}
				insert := `INSERT INTO floor(text) SELECT unnest($1::text[])`
				if strings.Contains(tc.create, "tsvector") {
					insert = `INSERT INTO floor(words) SELECT unnest($1::text[])::tsvector`
				}
				values := make([][]string, len(batches))
				for i, es := range batches {
					for _, e := range es {
						if strings.Contains(tc.create, "tsvector") {
							values[i] = append(values[i], vector(e.Text))
						} else {
							values[i] = append(values[i], e.Text)
						}
					}
				}
				t0, c0 := time.Now(), cpuTime()
				for _, v := range values {
					if _, err := s.pool.Exec(ctx, insert, v); err != nil {
						b.Fatal(err)
					}
				}
				took, cpu := time.Since(t0), cpuTime()-c0
				if _, err := s.pool.Exec(ctx, `VACUUM ANALYZE floor`); err != nil {
					b.Fatal(err)
				}
				var disk int64
				if err := s.pool.QueryRow(ctx, `SELECT pg_total_relation_size('floor')`).Scan(&disk); err != nil {
					b.Fatal(err)
				}
				report(b, took, cpu, disk)
			}
		})
	}
}
