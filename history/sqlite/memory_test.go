package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/history"
)

func TestRememberIsSearchableAsNote(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	n := testNote()
	n.Text = "Deploy with token ghp_" + strings.Repeat("x", 36) + " to staging"
	if _, err := s.Remember(ctx, n); err != nil {
		t.Fatal(err)
	}
	mustIndex(t, s, entry("s1", "m1", "staging is flaky"))
	hits, err := s.Search(ctx, history.Query{Text: "staging", Kind: history.KindNote, Limit: 10})
	if err != nil || len(hits) != 1 {
		t.Fatalf("hits %v err %v", hits, err)
	}
	if hits[0].Kind != history.KindNote || hits[0].Role != string(history.Fact) {
		t.Errorf("note hit %+v", hits[0])
	}
	got, err := s.Read(ctx, hits[0].Session, hits[0].Entry, 0)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got[0].Text, "ghp_") || !strings.Contains(got[0].Text, "[REDACTED]") {
		t.Errorf("stored note was not redacted: %q", got[0].Text)
	}
	if hits, _ := s.Search(ctx, history.Query{Text: "ghp_*", Limit: 10}); len(hits) != 0 {
		t.Errorf("secret is searchable: %v", hits)
	}
}

func TestRememberCeiling(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	s, err := Open(path, Options{NoSubstrings: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The ceiling counts distinct notes (an identical one is already
	// stored), so each note differs.
	for i := range history.MaxNotes - 1 {
		if r, err := s.Remember(ctx, numberedNote(i)); err != nil || r.AlreadyStored {
			t.Fatalf("note %d: %+v, %v", i+1, r, err)
		}
	}
	s.Close()
	// The count is durable: it survives a reopen.
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Remember(ctx, numberedNote(history.MaxNotes-1)); err != nil {
		t.Fatalf("note at the ceiling: %v", err)
	}
	if n, err := s.Notes(ctx); err != nil || n != history.MaxNotes {
		t.Fatalf("Notes = %d, %v", n, err)
	}
	wantCode(t, second(s.Remember(ctx, numberedNote(history.MaxNotes))), history.CodeMemoryCeilingReached)
	// A refused note spends nothing.
	if n, _ := s.Notes(ctx); n != history.MaxNotes {
		t.Errorf("Notes after refusal = %d", n)
	}
	// Invalid notes are refused before the ceiling is consulted.
	bad := testNote()
	bad.Text = ""
	wantCode(t, second(s.Remember(ctx, bad)), history.CodeNothingToRemember)
}
