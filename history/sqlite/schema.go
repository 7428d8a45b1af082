package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/agentloom/loom/history"
)

// schemaVersion is the schema this library writes, kept in PRAGMA
// user_version. Opening a database migrates it up to this version, one
// step per transaction; a newer database is refused.
const schemaVersion = 3

// migration moves the schema from version i to i+1 inside tx.
type migration func(ctx context.Context, tx *sql.Tx, o Options) error

// migrations[i] migrates version i to i+1.
var migrations = []migration{
	migrateCreate,
	migrateNoteIndex,
	migrateCompressedText,
}

// migrateCreate creates the version-1 schema: the entries table (the
// content, with seq as the repository-wide position), the word index (an
// external-content FTS5 table keyed by seq), unless disabled the
// vocabulary and its trigram index (the substring fallback), and a small
// settings table holding the note counter and the substring choice.
func migrateCreate(ctx context.Context, tx *sql.Tx, o Options) error {
	stmts := []string{
		`CREATE TABLE entries(
			seq INTEGER PRIMARY KEY,
			session TEXT NOT NULL,
			entry TEXT NOT NULL,
			kind TEXT NOT NULL,
			role TEXT NOT NULL,
			at INTEGER NOT NULL,
			text TEXT NOT NULL,
			UNIQUE(session, entry)
		)`,
		`CREATE INDEX entries_by_session ON entries(session, seq)`,
		`CREATE TABLE settings(name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID`,
		`CREATE VIRTUAL TABLE entries_words USING fts5(text, content='entries', content_rowid='seq', tokenize='unicode61 remove_diacritics 2', columnsize=0)`,
		fmt.Sprintf(`INSERT INTO entries_words(entries_words, rank) VALUES('hashsize', %d)`, indexHashBytes),
		fmt.Sprintf(`INSERT INTO entries_words(entries_words, rank) VALUES('automerge', %d)`, indexAutomerge),
		`INSERT INTO settings(name, value) VALUES('notes', 0)`,
	}
	if !o.NoSubstrings {
		stmts = append(stmts,
			`CREATE TABLE vocabulary(id INTEGER PRIMARY KEY, word TEXT NOT NULL UNIQUE)`,
			`CREATE VIRTUAL TABLE vocabulary_grams USING fts5(word, content='vocabulary', content_rowid='id', tokenize='trigram remove_diacritics 1')`,
			`INSERT INTO settings(name, value) VALUES('substrings', 1)`,
		)
	}
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("schema v1: %w", err)
		}
	}
	return nil
}

// migrateNoteIndex (version 2) indexes the notes by kind and text, so
// that Remember finds an identical note without reading every entry. The
// index is partial: it holds the notes only (at most history.MaxNotes).
func migrateNoteIndex(ctx context.Context, tx *sql.Tx, _ Options) error {
	q := fmt.Sprintf(`CREATE INDEX entries_notes ON entries(role, text) WHERE kind = '%s'`, history.KindNote)
	if _, err := tx.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("schema v2: %w", err)
	}
	return nil
}

// migrateCompressedText (version 3) lets entry texts be stored
// compressed (see storedText): the table becomes entry_rows, and entries
// is a view showing every text as indexed, which the word index, declared
// with content='entries', reads from then on. Texts stored before stay as
// they are, so the step rewrites nothing.
func migrateCompressedText(ctx context.Context, tx *sql.Tx, _ Options) error {
	for _, q := range []string{
		`ALTER TABLE entries RENAME TO entry_rows`,
		`CREATE VIEW entries AS SELECT seq, session, entry, kind, role, at, ` + textFunc + `(text) AS text FROM entry_rows`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("schema v3: %w", err)
		}
	}
	return nil
}

// migrate brings the schema to schemaVersion and reads the settings.
func (s *Store) migrate(ctx context.Context, o Options) error {
	for {
		var v int
		if err := s.writer.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
			return classify(err, history.CodeIndexBusy, history.CodeIndexUnavailable, "", "reading the schema version")
		}
		if v > schemaVersion {
			return refuse(history.CodeIndexUnavailable, "the index has schema version %d, newer than this library's %d", v, schemaVersion)
		}
		if v == schemaVersion {
			break
		}
		if err := s.step(ctx, v, o); err != nil {
			return err
		}
	}
	var n int
	err := s.writer.QueryRowContext(ctx, `SELECT count(*) FROM settings WHERE name = 'substrings' AND value = 1`).Scan(&n)
	if err != nil {
		return classify(err, history.CodeIndexBusy, history.CodeIndexUnavailable, "", "reading the index settings")
	}
	s.substrings = n == 1
	return nil
}

// step runs migrations[from] in one immediate transaction, re-checking the
// version inside it so two processes opening a new file at once migrate it
// once.
func (s *Store) step(ctx context.Context, from int, o Options) error {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return classify(err, history.CodeIndexBusy, history.CodeIndexUnavailable, "", "migrating the schema")
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return classify(err, history.CodeIndexBusy, history.CodeIndexUnavailable, "", "migrating the schema")
	}
	if v != from {
		return nil // another process got there first; the caller re-reads
	}
	if err := migrations[from](ctx, tx, o); err != nil {
		return classify(err, history.CodeIndexBusy, history.CodeIndexUnavailable, "", "migrating the schema")
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, from+1)); err != nil {
		return classify(err, history.CodeIndexBusy, history.CodeIndexUnavailable, "", "migrating the schema")
	}
	return classify(tx.Commit(), history.CodeIndexBusy, history.CodeIndexUnavailable, "", "migrating the schema")
}
