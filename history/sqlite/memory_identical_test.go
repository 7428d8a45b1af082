package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

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
