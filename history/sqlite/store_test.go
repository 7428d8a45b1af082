package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/tool"
)

func TestOpenRefusals(t *testing.T) {
	junk := filepath.Join(t.TempDir(), "junk.db")
	if err := os.WriteFile(junk, []byte(strings.Repeat("not a database ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"", ":memory:", "a?b", "a%20b", junk, filepath.Join(t.TempDir(), "missing", "dir", "h.db")} {
		_, err := Open(p, Options{})
		wantCode(t, err, history.CodeIndexUnavailable)
	}
	path := filepath.Join(t.TempDir(), "future.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", schemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(path, Options{})
	wantCode(t, err, history.CodeIndexUnavailable)
}

func TestReopenKeepsSchemaAndSettings(t *testing.T) {
	if len(migrations) != schemaVersion {
		t.Fatalf("%d migrations for schema version %d", len(migrations), schemaVersion)
	}
	path := filepath.Join(t.TempDir(), "h.db")
	s, err := Open(path, Options{NoSubstrings: true})
	if err != nil {
		t.Fatal(err)
	}
	mustIndex(t, s, entry("s", "e", "persisted words"))
	s.Close()
	s, err = Open(path, Options{}) // asks for substrings; the file's choice wins
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Substrings() {
		t.Error("reopen changed the substring setting")
	}
	hits, err := s.Search(context.Background(), history.Query{Text: "persisted", Limit: 1})
	if err != nil || len(hits) != 1 {
		t.Errorf("after reopen: %v %v", hits, err)
	}
	var v int
	if err := s.writer.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != schemaVersion {
		t.Errorf("user_version %d %v", v, err)
	}
}

func TestBusyWriterIsRefusedBusy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	s, err := Open(path, Options{BusyTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	ctx := context.Background()
	wantCode(t, s.Index(ctx, entry("s", "e", "x")), history.CodeIndexBusy)
	wantCode(t, second(s.Remember(ctx, testNote())), history.CodeMemoryBusy)
	// Readers are not blocked by a writer under WAL.
	if _, err := s.Search(ctx, history.Query{Text: "x", Limit: 1}); err != nil {
		t.Errorf("search during a write: %v", err)
	}
	tx.Rollback()
	if err := s.Index(ctx, entry("s", "e", "x")); err != nil {
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

// TestOptionsZeroValueWorks holds Options' defaults: a zero BusyTimeout is
// defaultBusyTimeout, a negative one does not wait, any other is kept.
func TestOptionsZeroValueWorks(t *testing.T) {
	for _, tc := range []struct {
		in, want time.Duration
	}{
		{0, defaultBusyTimeout},
		{-1, 0},
		{-time.Hour, 0},
		{time.Millisecond, time.Millisecond},
		{time.Minute, time.Minute},
	} {
		if got := (Options{BusyTimeout: tc.in}).busyTimeout(); got != tc.want {
			t.Errorf("Options{BusyTimeout: %v}.busyTimeout() = %v, want %v", tc.in, got, tc.want)
		}
	}
	if s := openTest(t, Options{}); !s.Substrings() {
		t.Error("the zero Options dropped the substring fallback")
	}
}
