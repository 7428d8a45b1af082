package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/tool"
)

// An identical note (same kind, title, description and text once
// PrepareNote has trimmed and redacted it, whatever its session or time)
// is already stored: Remember says so, stores nothing and spends no slot
// of the lifetime ceiling. A note differing in any of those is new.
func TestRememberIdenticalNoteIsAlreadyStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t, Options{})
	first, err := s.Remember(ctx, testNote())
	if err != nil || first.AlreadyStored {
		t.Fatalf("first Remember = %+v, %v", first, err)
	}
	same := []func(n *history.Note){
		func(*history.Note) {},
		func(n *history.Note) { n.Session = "s2" },
		func(n *history.Note) { n.Time = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC) },
		func(n *history.Note) { n.Title = "  " + n.Title + "\t" },
		func(n *history.Note) { n.Text = "\n" + n.Text + "  " },
	}
	for i, change := range same {
		n := testNote()
		change(&n)
		r, err := s.Remember(ctx, n)
		if err != nil || !r.AlreadyStored {
			t.Errorf("identical note %d: %+v, %v; want AlreadyStored", i, r, err)
		}
	}
	if n, err := s.Notes(ctx); err != nil || n != 1 {
		t.Fatalf("Notes = %d, %v after identical notes; want 1", n, err)
	}
	hits, err := s.Search(ctx, history.Query{Text: "race", Kind: history.KindNote, Limit: 10})
	if err != nil || len(hits) != 1 {
		t.Fatalf("identical notes are searchable %d times (%v)", len(hits), err)
	}
	distinct := []func(n *history.Note){
		func(n *history.Note) { n.Kind = history.Decision },
		func(n *history.Note) { n.Title += "!" },
		func(n *history.Note) { n.Description += "!" },
		func(n *history.Note) { n.Text += "!" },
	}
	for i, change := range distinct {
		n := testNote()
		change(&n)
		r, err := s.Remember(ctx, n)
		if err != nil || r.AlreadyStored {
			t.Errorf("distinct note %d: %+v, %v; want stored", i, r, err)
		}
	}
	if n, _ := s.Notes(ctx); n != 1+len(distinct) {
		t.Errorf("Notes = %d, want %d", n, 1+len(distinct))
	}
}

// At the ceiling, a note identical to one stored is still answered as
// already stored; a new one is refused.
func TestRememberIdenticalNoteAtTheCeiling(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t, Options{NoSubstrings: true})
	for i := range history.MaxNotes {
		n := testNote()
		n.Text = fmt.Sprintf("note %d", i)
		if _, err := s.Remember(ctx, n); err != nil {
			t.Fatalf("note %d: %v", i, err)
		}
	}
	n := testNote()
	n.Text = "note 0"
	if r, err := s.Remember(ctx, n); err != nil || !r.AlreadyStored {
		t.Errorf("identical note at the ceiling: %+v, %v", r, err)
	}
	n.Text = "note new"
	_, err := s.Remember(ctx, n)
	wantCode(t, err, history.CodeMemoryCeilingReached)
}

// The remember tool says a second identical call stored nothing.
func TestRememberToolSaysAlreadyStored(t *testing.T) {
	t.Parallel()
	s := openTest(t, Options{})
	c := &tool.Call{Strand: "main", Now: func() time.Time { return day0 }}
	args := `{"title":"Tests need -race","description":"CI runs the race detector","note":"Run go test -race.","kind":"fact"}`
	o := run(t, history.RememberTool(s, nil), c, args)
	if o.IsError || strings.Contains(o.Text, "already") || o.Details.(history.RememberDetails).AlreadyStored {
		t.Fatalf("first remember: %+v", o)
	}
	o = run(t, history.RememberTool(s, nil), c, args)
	if o.IsError || !strings.Contains(o.Text, "already stored") || !o.Details.(history.RememberDetails).AlreadyStored {
		t.Fatalf("second remember: %+v", o)
	}
	if n, _ := s.Notes(context.Background()); n != 1 {
		t.Errorf("Notes = %d after two identical calls, want 1", n)
	}
}

// A version-1 database is migrated to the note index on open, and the
// search for an identical note uses that index, not a scan of entries.
func TestNoteIndexMigrationAndPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrateCreate(ctx, tx, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `PRAGMA user_version = 1`); err != nil {
		t.Fatal(err)
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
	for i, want := range []bool{false, true} {
		if r, err := s.Remember(ctx, testNote()); err != nil || r.AlreadyStored != want {
			t.Fatalf("Remember %d on the migrated database: %+v, %v", i, r, err)
		}
	}
	rows, err := s.writer.QueryContext(ctx, "EXPLAIN QUERY PLAN "+findNote, "fact", "x")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if !strings.Contains(strings.Join(plan, "; "), "entries_notes") {
		t.Errorf("the identical-note search does not use the note index: %q", plan)
	}
}
