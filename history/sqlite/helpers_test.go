package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/tool"
)

// openTest opens a fresh store in a temporary directory, closed at cleanup.
func openTest(t testing.TB, o Options) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "history.db"), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// maxQueryTerms is history's bound on the words of one words-syntax
// query (history.ParseWords states it).
const maxQueryTerms = 32

// day0 is the fixed time test entries are written at.
var day0 = time.Date(2026, 11, 30, 9, 30, 0, 0, time.UTC)

// entry builds a test entry of kind message.
func entry(session, id, text string) history.Entry {
	return history.Entry{Session: session, ID: id, Kind: "message", Role: "assistant", Text: text, Time: day0}
}

// testNote is a valid note of session s1.
func testNote() history.Note {
	return history.Note{Title: "Run tests with -race", Description: "The CI gate runs go test -race", Text: "Always run go test -race before handing work back.", Kind: history.Fact, Session: "s1"}
}

// mustIndex indexes entries or fails the test.
func mustIndex(t testing.TB, s *Store, entries ...history.Entry) {
	t.Helper()
	if _, err := s.IndexBatch(context.Background(), entries); err != nil {
		t.Fatalf("IndexBatch: %v", err)
	}
}

// entryIDs lists the entry ids of hits, in order.
func entryIDs(hits []history.Hit) []string {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.Entry
	}
	return ids
}

// wantCode fails the test unless err carries code ("" for no error).
func wantCode(t testing.TB, err error, code tool.Code) {
	t.Helper()
	if got := tool.CodeOf(err); got != code || (code == "" && err != nil) {
		t.Fatalf("got code %q (err %v), want %q", got, err, code)
	}
}

// second returns the error of a Remember.
func second(_ history.Remembered, err error) error { return err }

// numberedNote is testNote with a text of its own for each i.
func numberedNote(i int) history.Note {
	n := testNote()
	n.Text = fmt.Sprintf("%s (note %d)", n.Text, i)
	return n
}

// run calls tl with args given as JSON.
func run(t *testing.T, tl tool.Tool, c *tool.Call, args string) tool.Outcome {
	t.Helper()
	return tl.Run(context.Background(), c, json.RawMessage(args))
}
