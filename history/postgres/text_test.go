package postgres

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/agentloom/loom/history/internal/packed"

	"github.com/jackc/pgx/v5"
	"pgregory.net/rapid"

	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/history/historytest"
	"github.com/agentloom/loom/history/postgres/postgrestest"
)

// Every text unpacks as it was packed; pack keeps only what saves an
// eighth.
func TestPackRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := rapid.OneOf(rapid.String(), rapid.StringMatching(`(word[0-9]{1,3} ){10,200}`)).Draw(t, "text")
		p := packed.Pack(text)
		if p == nil {
			return
		}
		if len(p) > len(text)-len(text)/8 {
			t.Fatalf("packed %d bytes to %d, saving less than an eighth", len(text), len(p))
		}
		if got := unpack("", p); got != text {
			t.Fatalf("unpack: %q; want %q", got, text)
		}
	})
}

func TestLeftChars(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{{"abc", 0, ""}, {"abc", 2, "ab"}, {"abc", 5, "abc"}, {"日本語", 2, "日本"}, {"", 3, ""}} {
		if got := leftChars(tc.s, tc.n); got != tc.want {
			t.Errorf("leftChars(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// An entry's text is stored packed when that saves (a control: a short
// one is not; that it reads back whole is the conformance suite's
// LongTextReadsWhole); a note is stored as it is, for the note index.
func TestEntryTextIsStoredPacked(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	historytest.WantCode(t, second(s.IndexBatch(ctx, []history.Entry{historytest.Entry("s", "long", historytest.LongText()), historytest.Entry("s", "short", "a short zebra")})), "")
	if _, err := s.Remember(ctx, history.Note{Title: "T", Description: "D", Text: "a note", Kind: history.Fact, Session: "notes"}); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"long": true, "short": false, "note-1": false} {
		var packed bool
		if err := s.pool.QueryRow(ctx, `SELECT packed IS NOT NULL FROM entries WHERE entry = $1`, id).Scan(&packed); err != nil || packed != want {
			t.Errorf("entry %s packed %v (%v), want %v", id, packed, err, want)
		}
	}
}

// A version-1 schema (texts in the column text only) is migrated on
// open: what it held is still found, read and snippeted, and what is
// indexed after is stored packed beside it.
func TestPackedMigration(t *testing.T) {
	url := postgrestest.URL(t)
	schema := postgrestest.Schema(t, url)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	old := strings.Repeat("an old entry about backoff and retries ", 20)
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, q := range []string{`CREATE SCHEMA ` + schema, `SET LOCAL search_path = ` + schema + `, public`,
			`CREATE TABLE schema_version(version int PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())`} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		if err := migrateCreate(ctx, tx, Options{}); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO entries(seq, session, entry, kind, role, at, text, words) VALUES(1, 's', 'old', 'message', 'assistant', 0, $1, $2::tsvector)`, old, vector(old)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO vocabulary(word) VALUES('backoff')`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO schema_version(version) VALUES(1)`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	s := openTest(t, Options{Schema: schema})
	var v int
	if err := s.pool.QueryRow(ctx, `SELECT max(version) FROM schema_version`).Scan(&v); err != nil || v != schemaVersion {
		t.Fatalf("schema version %d %v, want %d", v, err, schemaVersion)
	}
	fresh := strings.Repeat("a new entry about backoff and jitter ", 20)
	historytest.WantCode(t, s.Index(ctx, historytest.Entry("s", "new", fresh)), "")
	hits, err := s.Search(ctx, history.Query{Text: "backoff", Limit: 10})
	if err != nil || len(hits) != 2 || hits[0].Entry != "new" || hits[1].Entry != "old" {
		t.Fatalf("Search after the migration: %+v, %v", hits, err)
	}
	for _, h := range hits {
		if !strings.Contains(h.Snippet, "**backoff**") {
			t.Errorf("snippet of %s: %q", h.Entry, h.Snippet)
		}
	}
	hits, err = s.Search(ctx, history.Query{Text: "ackof", Limit: 10})
	if err != nil || len(hits) != 2 || !hits[0].Substring {
		t.Fatalf("substring search after the migration: %+v, %v", hits, err)
	}
	got, err := s.Read(ctx, "s", "old", 1)
	if err != nil || len(got) != 2 || got[0].Text != old || got[1].Text != fresh {
		t.Fatalf("Read after the migration: %+v, %v", got, err)
	}
	var packed string
	if err := s.pool.QueryRow(ctx, `SELECT string_agg((packed IS NOT NULL)::text, ',' ORDER BY seq) FROM entries`).Scan(&packed); err != nil || packed != "false,true" {
		t.Errorf("packed %q (%v), want the old text as it was and the new packed", packed, err)
	}
}

func second(_ int, err error) error { return err }

// A damaged or hostile row's packed column is read from the server only
// as far as a packed text of the longest entry text can reach: a search,
// Recent and Read hitting a row whose packed holds 48 MiB allocate a
// small part of that, and show the row as packed.Damaged instead of
// failing. The control is a plain row of the same session, which reads
// back.
func TestPackedColumnReadBounded(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	historytest.WantCode(t, s.Index(ctx, historytest.Entry("s", "plain", "a plain zebra")), "")
	const hostile = 48 << 20
	if _, err := s.pool.Exec(ctx, `INSERT INTO entries(seq, session, entry, kind, role, at, text, packed, words)
		VALUES(2, 's', 'bomb', 'message', 'assistant', 0, '', decode(repeat('ff', $1), 'hex'), 'zebra'::tsvector)`, hostile); err != nil {
		t.Fatal(err)
	}
	got, err := s.Read(ctx, "s", "plain", 0)
	if err != nil || len(got) != 1 || got[0].Text != "a plain zebra" {
		t.Fatalf("control: Read of the plain row: %+v, %v", got, err)
	}
	for name, call := range map[string]func() (string, error){
		"Search": func() (string, error) {
			hits, err := s.Search(ctx, history.Query{Text: "zebra", Limit: 10})
			return fmt.Sprint(hits), err
		},
		"Recent": func() (string, error) {
			hits, err := s.Recent(ctx, "s", 10)
			return fmt.Sprint(hits), err
		},
		"Read": func() (string, error) {
			es, err := s.Read(ctx, "s", "bomb", 0)
			return fmt.Sprint(es), err
		},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got, err := call()
		runtime.ReadMemStats(&after)
		// The damaged row reads as packed.Damaged; the others as they are.
		if err != nil || !strings.Contains(got, packed.Damaged) || (name != "Read" && !strings.Contains(got, "zebra")) {
			t.Errorf("%s: %s, %v; want the damaged row as packed.Damaged beside the plain one", name, got, err)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > hostile/4 {
			t.Errorf("%s allocated %d bytes for a row whose packed holds %d", name, n, hostile)
		}
	}
}
