package history

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// openTest opens a fresh store in a temporary directory, closed at cleanup.
func openTest(t testing.TB, opts ...Option) *SQLite {
	t.Helper()
	s, err := OpenSQLite(filepath.Join(t.TempDir(), "history.db"), opts...)
	if err != nil {
		t.Fatalf("OpenSQLite: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// day0 is the fixed time test entries are written at.
var day0 = time.Date(2026, 11, 30, 9, 30, 0, 0, time.UTC)

// entry builds a test entry of kind message.
func entry(session, id, text string) Entry {
	return Entry{Session: session, ID: id, Kind: "message", Role: "assistant", Text: text, Time: day0}
}

// mustIndex indexes entries or fails the test.
func mustIndex(t testing.TB, s *SQLite, entries ...Entry) {
	t.Helper()
	if _, err := s.IndexBatch(context.Background(), entries); err != nil {
		t.Fatalf("IndexBatch: %v", err)
	}
}

// entryIDs lists the entry ids of hits, in order.
func entryIDs(hits []Hit) []string {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.Entry
	}
	return ids
}

// wantCode fails the test unless err carries code.
func wantCode(t testing.TB, err error, code Code) {
	t.Helper()
	if got := CodeOf(err); got != code {
		t.Fatalf("got code %q (err %v), want %q", got, err, code)
	}
}
