package history

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func testNote() Note {
	return Note{Title: "Run tests with -race", Description: "The CI gate runs go test -race", Text: "Always run go test -race before handing work back.", Kind: Fact, Session: "s1"}
}

func TestPrepareNoteBounds(t *testing.T) {
	with := func(f func(*Note)) Note { n := testNote(); f(&n); return n }
	title := strings.Repeat("t", MaxTitleChars)
	desc := strings.Repeat("d", MaxDescriptionChars)
	body := strings.Repeat("n", MaxNoteChars)
	tests := []struct {
		name string
		n    Note
		want Code
	}{
		{"valid", testNote(), ""},
		{"title at bound", with(func(n *Note) { n.Title = title }), ""},
		{"title one past", with(func(n *Note) { n.Title = title + "t" }), FieldInvalid},
		{"title at bound in runes", with(func(n *Note) { n.Title = strings.Repeat("é", MaxTitleChars) }), ""},
		{"title blank", with(func(n *Note) { n.Title = "  " }), FieldInvalid},
		{"title two lines", with(func(n *Note) { n.Title = "a\nb" }), FieldInvalid},
		{"title control char", with(func(n *Note) { n.Title = "a\x1bb" }), FieldInvalid},
		{"description at bound", with(func(n *Note) { n.Description = desc }), ""},
		{"description one past", with(func(n *Note) { n.Description = desc + "d" }), FieldInvalid},
		{"description two lines", with(func(n *Note) { n.Description = "a\r\nb" }), FieldInvalid},
		{"description line separator", with(func(n *Note) { n.Description = "a\u2028b" }), FieldInvalid},
		{"description blank", with(func(n *Note) { n.Description = "" }), FieldInvalid},
		{"note at bound", with(func(n *Note) { n.Text = body }), ""},
		{"note one past", with(func(n *Note) { n.Text = body + "n" }), NoteTooLong},
		{"note at bound untrimmed", with(func(n *Note) { n.Text = "  " + body + "\n" }), ""},
		{"note blank", with(func(n *Note) { n.Text = " \n\t" }), NothingToRemember},
		{"note invalid utf8", with(func(n *Note) { n.Text = "a\xffb" }), FieldInvalid},
		{"unknown kind", with(func(n *Note) { n.Kind = "opinion" }), FieldInvalid},
		{"empty kind", with(func(n *Note) { n.Kind = "" }), FieldInvalid},
		{"no session", with(func(n *Note) { n.Session = "" }), FieldInvalid},
		{"session one past", with(func(n *Note) { n.Session = strings.Repeat("s", MaxIDBytes+1) }), FieldInvalid},
		{"title only a secret", with(func(n *Note) { n.Title = "sk-" + strings.Repeat("A", MaxTitleChars) }), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := PrepareNote(tt.n)
			wantCode(t, err, tt.want)
		})
	}
}

func TestRememberIsSearchableAsNote(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	n := testNote()
	n.Text = "Deploy with token ghp_" + strings.Repeat("x", 36) + " to staging"
	if err := s.Remember(ctx, n); err != nil {
		t.Fatal(err)
	}
	mustIndex(t, s, entry("s1", "m1", "staging is flaky"))
	hits, err := s.Search(ctx, Query{Text: "staging", Kind: KindNote, Limit: 10})
	if err != nil || len(hits) != 1 {
		t.Fatalf("hits %v err %v", hits, err)
	}
	if hits[0].Kind != KindNote || hits[0].Role != string(Fact) {
		t.Errorf("note hit %+v", hits[0])
	}
	got, err := s.Read(ctx, hits[0].Session, hits[0].Entry, 0)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got[0].Text, "ghp_") || !strings.Contains(got[0].Text, RedactedMark) {
		t.Errorf("stored note was not redacted: %q", got[0].Text)
	}
	if hits, _ := s.Search(ctx, Query{Text: "ghp_*", Limit: 10}); len(hits) != 0 {
		t.Errorf("secret is searchable: %v", hits)
	}
}

func TestRememberCeiling(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	s, err := OpenSQLite(path, WithoutSubstrings())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range MaxNotes - 1 {
		if err := s.Remember(ctx, testNote()); err != nil {
			t.Fatalf("note %d: %v", i+1, err)
		}
	}
	s.Close()
	// The count is durable: it survives a reopen.
	s, err = OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Remember(ctx, testNote()); err != nil {
		t.Fatalf("note at the ceiling: %v", err)
	}
	if n, err := s.Notes(ctx); err != nil || n != MaxNotes {
		t.Fatalf("Notes = %d, %v", n, err)
	}
	wantCode(t, s.Remember(ctx, testNote()), CeilingReached)
	// A refused note spends nothing.
	if n, _ := s.Notes(ctx); n != MaxNotes {
		t.Errorf("Notes after refusal = %d", n)
	}
	// Invalid notes are refused before the ceiling is consulted.
	bad := testNote()
	bad.Text = ""
	wantCode(t, s.Remember(ctx, bad), NothingToRemember)
}
