package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/history/historytest"
	"github.com/agentloom/loom/history/internal/packed"

	"pgregory.net/rapid"

	"github.com/agentloom/loom/history"
)

// Every text reads back as it was given, whether storedText compressed it
// or not, invalid UTF-8 and NUL bytes included.
func TestStoredTextRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := rapid.OneOf(
			rapid.String(),
			rapid.StringMatching(`(word[0-9]{1,3} ){10,200}`),
			rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) }),
		).Draw(t, "text")
		switch v := storedText(text).(type) {
		case string:
			if v != text {
				t.Fatalf("kept %q as %q", text, v)
			}
		case []byte:
			if len(v) > len(text)-len(text)/8 {
				t.Fatalf("compressed %d bytes to %d, saving less than an eighth", len(text), len(v))
			}
			got, err := packed.Unpack(v)
			if err != nil || got != text {
				t.Fatalf("Unpack: %q, %v; want %q", got, err, text)
			}
		default:
			t.Fatalf("storedText answered %T", v)
		}
	})
}

// An entry's text is stored compressed when that saves (a control: a
// short one is not; that it reads back whole is the conformance suite's
// LongTextReadsWhole); a note is stored as it is, for the note index.
func TestEntryTextIsStoredCompressed(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	mustIndex(t, s, entry("s", "long", historytest.LongText()), entry("s", "short", "a short zebra"))
	if _, err := s.Remember(ctx, testNote()); err != nil {
		t.Fatal(err)
	}
	var page int
	if err := s.readers.QueryRow(`PRAGMA page_size`).Scan(&page); err != nil || page != pageBytes {
		t.Errorf("a new database's page size is %d (%v), want %d", page, err, pageBytes)
	}
	for id, want := range map[string]string{"long": "blob", "short": "text", "note-1": "text"} {
		var typ string
		if err := s.readers.QueryRow(`SELECT typeof(text) FROM entry_rows WHERE entry = ?`, id).Scan(&typ); err != nil || typ != want {
			t.Errorf("entry %s stored as %q (%v), want %q", id, typ, err, want)
		}
	}
}

// A version-2 database (texts stored as they are, in the table entries)
// is migrated on open: what it held is still found, read and snippeted,
// and what is indexed after is stored compressed beside it.
func TestCompressedTextMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v2.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range migrations[:2] {
		if err := m(ctx, tx, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	old := strings.Repeat("an old entry about backoff and retries ", 20)
	if _, err := tx.ExecContext(ctx, `INSERT INTO entries(seq, session, entry, kind, role, at, text) VALUES(1, 's', 'old', 'message', 'assistant', 0, ?)`, old); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO entries_words(rowid, text) SELECT seq, text FROM entries`,
		`INSERT INTO vocabulary(word) VALUES('backoff')`,
		`INSERT INTO vocabulary_grams(rowid, word) SELECT id, word FROM vocabulary`,
		`PRAGMA user_version = 2`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var v int
	if err := s.writer.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != schemaVersion {
		t.Fatalf("user_version %d %v, want %d", v, err, schemaVersion)
	}
	fresh := strings.Repeat("a new entry about backoff and jitter ", 20)
	mustIndex(t, s, entry("s", "new", fresh))
	hits, err := s.Search(ctx, history.Query{Text: "backoff", Limit: 10})
	if err != nil || strings.Join(entryIDs(hits), ",") != "new,old" {
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
	var typ string
	if err := s.readers.QueryRow(`SELECT group_concat(typeof(text), ',') FROM (SELECT text FROM entry_rows ORDER BY seq)`).Scan(&typ); err != nil || typ != "text,blob" {
		t.Errorf("stored types %q (%v), want the old text as it was and the new compressed", typ, err)
	}
	if r, err := s.Remember(ctx, testNote()); err != nil || r.AlreadyStored {
		t.Fatalf("Remember after the migration: %+v, %v", r, err)
	}
}

// A damaged compressed text (a blob that does not inflate) reads as
// packed.Damaged through Recent and Read, and a search that does not hit
// it, and the session's other entries, still read as they are. (A search
// that hits it fails index_unavailable: its snippet needs the text.)
func TestDamagedTextReadsAsDamaged(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	long := strings.Repeat("the quick brown fox jumps over the lazy dog ", 40) + "zebra"
	mustIndex(t, s, entry("s", "long", long), entry("s", "plain", "a plain zebra"))
	if _, err := s.writer.Exec(`UPDATE entry_rows SET text = x'ffffffffffffffff' WHERE entry = 'long'`); err != nil {
		t.Fatal(err)
	}
	hits, err := s.Search(ctx, history.Query{Text: "plain", Limit: 10})
	if err != nil || len(hits) != 1 || hits[0].Entry != "plain" {
		t.Fatalf("Search: %+v, %v", hits, err)
	}
	recent, err := s.Recent(ctx, "s", 10)
	if err != nil || len(recent) != 2 || !strings.Contains(fmt.Sprint(recent), packed.Damaged) {
		t.Fatalf("Recent: %+v, %v", recent, err)
	}
	got, err := s.Read(ctx, "s", "long", 0)
	if err != nil || len(got) != 1 || got[0].Text != packed.Damaged {
		t.Fatalf("Read: %+v, %v", got, err)
	}
	got, err = s.Read(ctx, "s", "plain", 0)
	if err != nil || len(got) != 1 || got[0].Text != "a plain zebra" {
		t.Fatalf("control: Read of the plain row: %+v, %v", got, err)
	}
}
