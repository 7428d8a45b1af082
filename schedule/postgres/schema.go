package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentloom/loom/schedule"
)

// schemaVersion is the schema this library writes. The schedule_version
// table holds one row per migration applied; its largest version is the
// schema's. Opening migrates the schema up to this version under an
// advisory lock, so hosts opening one schema at once migrate it once; a
// newer schema is refused.
const schemaVersion = 1

// migration moves the schema from version i to i+1 inside tx, whose
// tables are qualified by q.
type migration func(ctx context.Context, tx pgx.Tx, q func(table string) string) error

// migrations[i] migrates version i to i+1.
var migrations = []migration{
	migrateCreate,
}

// migrateCreate creates the version-1 schema: the schedules, with their
// next fire indexed for Tick, their target and owner for the live
// counts. Times
// are Unix nanoseconds of the host's clock.
func migrateCreate(ctx context.Context, tx pgx.Tx, q func(string) string) error {
	stmts := []string{
		`CREATE TABLE ` + q("schedules") + `(
			id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
			owner text NOT NULL,
			target text NOT NULL,
			kind text NOT NULL,
			every_s bigint NOT NULL DEFAULT 0,
			cron text NOT NULL DEFAULT '',
			offset_s bigint NOT NULL DEFAULT 0,
			at_ns bigint NOT NULL DEFAULT 0,
			expires_ns bigint NOT NULL,
			max_fires integer NOT NULL,
			fires integer NOT NULL DEFAULT 0,
			wake boolean NOT NULL,
			message text NOT NULL,
			created_ns bigint NOT NULL,
			next_ns bigint NOT NULL
		)`,
		`CREATE INDEX schedules_next ON ` + q("schedules") + `(next_ns, id)`,
		`CREATE INDEX schedules_target ON ` + q("schedules") + `(target)`,
		`CREATE INDEX schedules_owner ON ` + q("schedules") + `(owner)`,
	}
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("schema v1: %w", err)
		}
	}
	return nil
}

// migrate brings the schema to schemaVersion. It holds the schema's
// migration lock (a session advisory lock) throughout, so a second host
// waits and then finds the work done; each step is one transaction
// recorded in schedule_version.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return classify(ctx, err, "connecting")
	}
	defer conn.Release()
	fail := func(err error, what string) error { return classify(ctx, err, what) }
	// Migration may wait for another host's migration however long it
	// takes, within ctx.
	if _, err := conn.Exec(ctx, `SET lock_timeout = 0`); err != nil {
		return fail(err, "migrating the schema")
	}
	defer conn.Exec(context.WithoutCancel(ctx), `RESET lock_timeout`)
	key := schemaKey(schema)
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, $2)`, int32(migrateClass), key); err != nil {
		return fail(err, "taking the migration lock")
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, $2)`, int32(migrateClass), key)
	q := func(table string) string { return pgx.Identifier{schema, table}.Sanitize() }
	// The schema may be created at this moment by a history index
	// opening it under its own lock: losing that race is no failure.
	if _, err := conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()); err != nil && !created(err) {
		return fail(err, "creating the schema")
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+q("schedule_version")+`(version int PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fail(err, "creating the schema")
	}
	for {
		var v int
		if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+q("schedule_version")).Scan(&v); err != nil {
			return fail(err, "reading the schema version")
		}
		if v > schemaVersion {
			return schedule.Refuse(schedule.CodeSchedulesUnavailable, "the schedules have schema version %d, newer than this library's %d", v, schemaVersion)
		}
		if v == schemaVersion {
			return nil
		}
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if err := migrations[v](ctx, tx, q); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO `+q("schedule_version")+`(version) VALUES($1)`, v+1)
			return err
		}); err != nil {
			return fail(err, "migrating the schema")
		}
	}
}

// created reports whether err says another session created the schema
// first (duplicate_schema, or unique_violation on the catalogue).
func created(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "42P06" || pe.Code == "23505")
}

// schemaKey is the second key of the schema's advisory locks: FNV-1a of
// its name.
func schemaKey(schema string) int32 {
	h := uint32(2166136261)
	for i := 0; i < len(schema); i++ {
		h ^= uint32(schema[i])
		h *= 16777619
	}
	return int32(h)
}
