package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentloom/loom/history"
)

// schemaVersion is the schema this library writes. The schema_version
// table holds one row per migration applied; its largest version is the
// schema's. Opening an index migrates it up to this version under an
// advisory lock, so hosts opening one schema at once migrate it once; a
// newer schema is refused.
const schemaVersion = 2

// migration moves the schema from version i to i+1 inside tx.
type migration func(ctx context.Context, tx pgx.Tx, o Options) error

// migrations[i] migrates version i to i+1.
var migrations = []migration{
	migrateCreate,
	migratePacked,
}

// migrateCreate creates the version-1 schema: the entries table (the
// content, with seq as the repository-wide position and words as its
// word index value, under GIN), the settings (the note counter and the
// substring choice), the partial index that finds an identical note, and
// unless disabled the vocabulary with its pg_trgm index (the substring
// fallback).
func migrateCreate(ctx context.Context, tx pgx.Tx, o Options) error {
	stmts := []string{
		`CREATE TABLE entries(
			seq bigint PRIMARY KEY,
			session text NOT NULL,
			entry text NOT NULL,
			kind text NOT NULL,
			role text NOT NULL,
			at bigint NOT NULL,
			text text NOT NULL,
			words tsvector NOT NULL,
			UNIQUE(session, entry)
		)`,
		`CREATE INDEX entries_by_session ON entries(session, seq)`,
		`CREATE INDEX entries_words ON entries USING gin(words)`,
		// Ten times the default statistics keep 10,000 lexemes with their
		// frequencies, so the planner tells a rare word (read through the
		// GIN index) from a common one (read newest first by seq until
		// the limit); with the default, a rare word is guessed common and
		// a search walks most of the table.
		`ALTER TABLE entries ALTER COLUMN words SET STATISTICS 1000`,
		fmt.Sprintf(`CREATE INDEX entries_notes ON entries(role, md5(text)) WHERE kind = '%s'`, history.KindNote),
		`CREATE TABLE settings(name text PRIMARY KEY, value bigint NOT NULL)`,
		`INSERT INTO settings(name, value) VALUES('notes', 0)`,
	}
	if !o.NoSubstrings {
		stmts = append(stmts,
			`CREATE TABLE vocabulary(id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, word text NOT NULL UNIQUE)`,
			`CREATE INDEX vocabulary_grams ON vocabulary USING gin(word gin_trgm_ops)`,
			`INSERT INTO settings(name, value) VALUES('substrings', 1)`,
		)
	}
	for _, q := range stmts {
		if _, err := tx.Exec(ctx, q); err != nil {
			return fmt.Errorf("schema v1: %w", err)
		}
	}
	return nil
}

// migratePacked (version 2) adds the column packed, which holds an
// entry's text compressed when that saves (see pack). Rows stored before
// keep their text; adding a column without a default rewrites nothing.
func migratePacked(ctx context.Context, tx pgx.Tx, _ Options) error {
	if _, err := tx.Exec(ctx, `ALTER TABLE entries ADD COLUMN packed bytea`); err != nil {
		return fmt.Errorf("schema v2: %w", err)
	}
	return nil
}

// migrate brings the schema to schemaVersion and reads the settings. It
// holds the schema's migration lock (a session advisory lock) throughout,
// so a second host waits and then finds the work done; each step is one
// transaction recorded in schema_version.
func (s *Store) migrate(ctx context.Context, o Options) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return classify(ctx, err, history.CodeIndexBusy, history.CodeIndexUnavailable, "connecting")
	}
	defer conn.Release()
	fail := func(err error, what string) error {
		return classify(ctx, err, history.CodeIndexBusy, history.CodeIndexUnavailable, what)
	}
	// Migration may wait for another host's migration however long it
	// takes, within ctx.
	if _, err := conn.Exec(ctx, `SET lock_timeout = 0`); err != nil {
		return fail(err, "migrating the schema")
	}
	defer conn.Exec(context.WithoutCancel(ctx), `RESET lock_timeout`)
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, $2)`, int32(migrateClass), s.lockKey); err != nil {
		return fail(err, "taking the migration lock")
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, $2)`, int32(migrateClass), s.lockKey)
	stmts := []string{`CREATE SCHEMA IF NOT EXISTS ` + s.schema,
		`CREATE TABLE IF NOT EXISTS schema_version(version int PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())`}
	for _, q := range stmts {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fail(err, "creating the schema")
		}
	}
	for {
		var v int
		if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&v); err != nil {
			return fail(err, "reading the schema version")
		}
		if v > schemaVersion {
			return refuse(history.CodeIndexUnavailable, "the index has schema version %d, newer than this library's %d", v, schemaVersion)
		}
		if v == schemaVersion {
			break
		}
		if v == 0 && !o.NoSubstrings {
			if err := ensureTrigrams(ctx, conn.Conn()); err != nil {
				return err
			}
		}
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if err := migrations[v](ctx, tx, o); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_version(version) VALUES($1)`, v+1)
			return err
		}); err != nil {
			return fail(err, "migrating the schema")
		}
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM settings WHERE name = 'substrings' AND value = 1`).Scan(&n); err != nil {
		return fail(err, "reading the index settings")
	}
	s.substrings = n == 1
	return nil
}

// ensureTrigrams installs pg_trgm in schema public when the database
// lacks it, under a database-wide advisory lock (CREATE EXTENSION IF NOT
// EXISTS is not safe from two sessions at once).
func ensureTrigrams(ctx context.Context, conn *pgx.Conn) error {
	var have bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS(SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm')`).Scan(&have); err != nil {
		return classify(ctx, err, history.CodeIndexBusy, history.CodeIndexUnavailable, "looking for pg_trgm")
	}
	if have {
		return nil
	}
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, 0)`, int32(migrateClass)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public`)
		return err
	})
	if err != nil {
		return &history.Refusal{Code: history.CodeIndexUnavailable, Message: "the substring fallback needs the pg_trgm extension, which cannot be created here (install postgresql-contrib, or have a superuser run CREATE EXTENSION pg_trgm, or open with NoSubstrings)", Err: err}
	}
	return nil
}
