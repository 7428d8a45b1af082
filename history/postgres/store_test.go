package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/history/historytest"
	"github.com/agentloom/loom/history/postgres/postgrestest"
	"github.com/agentloom/loom/tool"
)

func TestOpenRefusals(t *testing.T) {
	url := postgrestest.URL(t)
	ctx := context.Background()
	for _, tc := range []struct{ url, schema string }{
		{"postgres://%zz", "x"},
		{url, "Upper"},
		{url, "has space"},
		{url, "1digit"},
		{url, strings.Repeat("a", 64)},
		{"postgres://nobody@127.0.0.1:1/none?connect_timeout=2", "x"},
	} {
		s, err := Open(ctx, tc.url, Options{Schema: tc.schema})
		if err == nil {
			s.Close()
		}
		historytest.WantCode(t, err, history.CodeIndexUnavailable)
	}
	// A schema newer than this library's is refused, never written.
	schema := postgrestest.Schema(t, url)
	s := openTest(t, Options{Schema: schema})
	if _, err := s.pool.Exec(ctx, `INSERT INTO schema_version(version) VALUES($1)`, schemaVersion+1); err != nil {
		t.Fatal(err)
	}
	_, err := Open(ctx, url, Options{Schema: schema})
	historytest.WantCode(t, err, history.CodeIndexUnavailable)
}

// Hosts opening a new schema at once migrate it once: every Open
// succeeds and schema_version holds each version once.
func TestConcurrentMigrators(t *testing.T) {
	url := postgrestest.URL(t)
	schema := postgrestest.Schema(t, url)
	if len(migrations) != schemaVersion {
		t.Fatalf("%d migrations for schema version %d", len(migrations), schemaVersion)
	}
	const migrators = 4
	stores := make([]*Store, migrators)
	errs := make([]error, migrators)
	var wg sync.WaitGroup
	for i := range migrators {
		wg.Go(func() { stores[i], errs[i] = Open(context.Background(), url, Options{Schema: schema}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("migrator %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	rows, err := stores[0].pool.Query(context.Background(), `SELECT version FROM schema_version ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	for v := 1; v <= schemaVersion; v++ {
		want = append(want, v)
	}
	if fmt.Sprint(versions) != fmt.Sprint(want) {
		t.Errorf("schema_version holds %v, want %v", versions, want)
	}
	for _, s := range stores {
		if !s.Substrings() {
			t.Error("a migrator lost the substring setting")
		}
	}
}

func TestReopenKeepsSettings(t *testing.T) {
	url := postgrestest.URL(t)
	schema := postgrestest.Schema(t, url)
	s := openTest(t, Options{Schema: schema, NoSubstrings: true})
	historytest.WantCode(t, s.Index(context.Background(), historytest.Entry("s", "e", "persisted words")), "")
	s.Close()
	s = openTest(t, Options{Schema: schema}) // asks for substrings; the index's choice wins
	if s.Substrings() {
		t.Error("reopen changed the substring setting")
	}
	hits, err := s.Search(context.Background(), history.Query{Text: "persisted", Limit: 1})
	if err != nil || len(hits) != 1 {
		t.Errorf("after reopen: %v %v", hits, err)
	}
}

// A writer holding the schema's lock past the busy timeout makes a write
// busy, never a read.
func TestBusyWriterIsRefusedBusy(t *testing.T) {
	s := openTest(t, Options{BusyTimeout: 20 * time.Millisecond})
	ctx := context.Background()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, int32(lockClass), s.lockKey); err != nil {
		t.Fatal(err)
	}
	historytest.WantCode(t, s.Index(ctx, historytest.Entry("s", "e", "x")), history.CodeIndexBusy)
	_, err = s.Remember(ctx, historytest.Note())
	historytest.WantCode(t, err, history.CodeMemoryBusy)
	if _, err := s.Search(ctx, history.Query{Text: "x", Limit: 1}); err != nil {
		t.Errorf("search during a write: %v", err)
	}
	tx.Rollback(ctx)
	if err := s.Index(ctx, historytest.Entry("s", "e", "x")); err != nil {
		t.Errorf("after the writer left: %v", err)
	}
}

func TestIndexBatchAtBound(t *testing.T) {
	s := openTest(t, Options{NoSubstrings: true})
	es := make([]history.Entry, MaxBatchEntries)
	for i := range es {
		es[i] = history.Entry{Session: "s", ID: strconv.Itoa(i), Kind: "m"}
	}
	n, err := s.IndexBatch(context.Background(), es)
	if err != nil || n != MaxBatchEntries {
		t.Fatalf("batch at the bound: n=%d err=%v", n, err)
	}
	if _, err := s.IndexBatch(context.Background(), make([]history.Entry, MaxBatchEntries+1)); tool.CodeOf(err) != history.CodeIndexRefused {
		t.Errorf("batch one past bound: %v", err)
	}
}

// PostgreSQL text holds neither NUL bytes nor invalid UTF-8: a text keeps
// U+FFFD in their place, an id or kind with them is refused.
func TestTextPostgreSQLCannotHold(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	historytest.WantCode(t, s.Index(ctx, historytest.Entry("s", "e", "nul\x00byte bad\xffbyte")), "")
	got, err := s.Read(ctx, "s", "e", 0)
	if err != nil || got[0].Text != "nul\uFFFDbyte bad\uFFFDbyte" {
		t.Errorf("read %+v, %v", got, err)
	}
	for _, e := range []history.Entry{
		{Session: "s\x00", ID: "x", Kind: "m"},
		{Session: "s", ID: "x\xff", Kind: "m"},
		{Session: "s", ID: "x", Kind: "m\x00"},
	} {
		historytest.WantCode(t, s.Index(ctx, e), history.CodeIndexRefused)
	}
	if hits, err := s.Search(ctx, history.Query{Text: "nul", Kind: "m\x00", Limit: 5}); err != nil || len(hits) != 0 {
		t.Errorf("kind with NUL: %v %v", hits, err)
	}
	if _, err := s.Read(ctx, "s\x00", "e", 0); tool.CodeOf(err) != history.CodeIndexRefused {
		t.Errorf("read with NUL: %v", err)
	}
}

func TestRawToTSQuery(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{`retry`, `'retry'`},
		{`a b`, `('a' & 'b')`},
		{`a AND b OR c`, `(('a' & 'b') | 'c')`},
		{`a OR b c`, `('a' | ('b' & 'c'))`},
		{`a NOT b`, `('a' & !'b')`},
		{`"never backs"*`, `('never' <-> 'backs':*)`},
		{`"it's" + x`, `('it' <-> 's' <-> 'x')`},
		{`text : café`, `'cafe'`},
		{`(a OR b) NOT c`, `(('a' | 'b') & !'c')`},
	} {
		got, err := rawToTSQuery(tc.raw, &matcher{})
		if err != nil || got != tc.want {
			t.Errorf("rawToTSQuery(%q) = %q, %v; want %q", tc.raw, got, err, tc.want)
		}
	}
	for _, bad := range []string{`AND (`, `(a`, `a)`, `"x`, `a OR`, `NOT a`, `NEAR(a b)`, `col:x`, `a & b`, `^a`, `{text}: a`} {
		if _, err := rawToTSQuery(bad, &matcher{}); tool.CodeOf(err) != history.CodeIndexRefused {
			t.Errorf("rawToTSQuery(%q) = %v, want refused", bad, err)
		}
	}
}

func TestVectorBounds(t *testing.T) {
	if got := vector(`It's a Café, it's "ok"`); got != `'it':1,5 's':2,6 'a':3 'cafe':4 'ok':7` {
		t.Errorf("vector = %s", got)
	}
	if got := vector(`back\slash o'k`); got != `'back':1 'slash':2 'o':3 'k':4` {
		t.Errorf("vector = %s", got)
	}
	long := strings.Repeat("w ", 2*maxPositions)
	if n := strings.Count(vector(long), ","); n != maxPositions-1 {
		t.Errorf("%d positions kept, want %d", n+1, maxPositions)
	}
}
