package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/tool"
)

// Tuning of the store.
const (
	// defaultBusyTimeout is Options.BusyTimeout's default.
	defaultBusyTimeout = 5 * time.Second
	// defaultSchema is Options.Schema's default.
	defaultSchema = "loom_history"
	// maxConns bounds the connections one Store keeps open.
	maxConns = 8
	// lockClass is the first key of the advisory locks this package
	// takes; the second is the hash of the schema name, so indexes in
	// different schemas of one database never wait for each other.
	lockClass = 0x4c6f6f6d // "Loom"
	// migrateClass keys the advisory lock migrations hold.
	migrateClass = lockClass + 1
)

// Store is a history.History and history.Memory on one PostgreSQL schema.
// It is safe for concurrent use, and many Stores (in many processes, on
// many hosts) may share one schema: writes are serialised through a
// transaction-scoped advisory lock, so seq follows commit order across
// all of them and the note ceiling holds across them; reads never wait.
type Store struct {
	pool       *pgxpool.Pool
	schema     string
	lockKey    int32
	substrings bool
	known      knownWords
	closed     atomic.Bool
}

var (
	_ history.History = (*Store)(nil)
	_ history.Memory  = (*Store)(nil)
)

// Options configures Open. The zero value is the default configuration.
type Options struct {
	// Schema is the PostgreSQL schema holding the index's tables, created
	// when missing: a lowercase SQL identifier of at most 63 bytes
	// (letters, digits, '_', not starting with a digit). "" means
	// "loom_history". One schema is one index: every host opening it
	// shares its entries, notes and note ceiling.
	Schema string
	// BusyTimeout is how long a write waits for the writer of another
	// Store before it is refused history.CodeIndexBusy or
	// history.CodeMemoryBusy. Zero means 5 s; a negative value means not
	// waiting (1 ms).
	BusyTimeout time.Duration
	// NoSubstrings creates the index without the vocabulary and its
	// trigram index, so words-syntax searches have no substring fallback
	// and pg_trgm is not needed. The choice is fixed when the schema is
	// created; for an existing index the field is ignored and
	// Store.Substrings reports the index's choice.
	NoSubstrings bool
}

func (o Options) busyTimeout() time.Duration {
	switch {
	case o.BusyTimeout == 0:
		return defaultBusyTimeout
	case o.BusyTimeout < 0:
		return time.Millisecond
	}
	return max(o.BusyTimeout, time.Millisecond)
}

var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Open connects to the database at url (a libpq connection URL or
// key=value string, as pgx reads it), creates the schema when missing and
// migrates it to this library's version. A bad URL or schema name, an
// unreachable server, missing privileges, a missing pg_trgm (unless
// NoSubstrings) and a schema newer than this library's are refused
// history.CodeIndexUnavailable. Close the Store when done.
func Open(ctx context.Context, url string, o Options) (*Store, error) {
	schema := o.Schema
	if schema == "" {
		schema = defaultSchema
	}
	if !identifier.MatchString(schema) {
		return nil, refuse(history.CodeIndexUnavailable, "the schema name %q is not a lowercase SQL identifier of at most 63 bytes", schema)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, &history.Refusal{Code: history.CodeIndexUnavailable, Message: "the database URL is not valid", Err: err}
	}
	cfg.MaxConns = maxConns
	rp := cfg.ConnConfig.RuntimeParams
	rp["search_path"] = schema + ", public"
	rp["lock_timeout"] = strconv.FormatInt(o.busyTimeout().Milliseconds(), 10)
	rp["application_name"] = "loom-history"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, &history.Refusal{Code: history.CodeIndexUnavailable, Message: "cannot open the database", Err: err}
	}
	s := &Store{pool: pool, schema: schema, lockKey: schemaKey(schema)}
	if err := s.migrate(ctx, o); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
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

// Close closes the Store's connections; the index stays in the database.
// Calls after Close are refused history.CodeIndexUnavailable or
// history.CodeMemoryUnavailable.
func (s *Store) Close() error {
	if !s.closed.Swap(true) {
		s.pool.Close()
	}
	return nil
}

// Schema returns the name of the index's schema.
func (s *Store) Schema() string { return s.schema }

// Substrings reports whether the index keeps the vocabulary that backs
// the substring fallback.
func (s *Store) Substrings() bool { return s.substrings }

// write runs fn in one transaction holding the schema's writer lock, and
// classifies its failure with the caller's codes.
func (s *Store) write(ctx context.Context, busy, unavailable tool.Code, what string, fn func(pgx.Tx) (int, error)) (int, error) {
	if s.closed.Load() {
		return 0, refuse(unavailable, "the index is closed")
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, classify(ctx, err, busy, unavailable, what)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, int32(lockClass), s.lockKey); err != nil {
		return 0, classify(ctx, err, busy, unavailable, what)
	}
	n, err := fn(tx)
	if err != nil {
		return 0, classify(ctx, err, busy, unavailable, what)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, classify(ctx, err, busy, unavailable, what)
	}
	return n, nil
}

// classify turns a database error into a *history.Refusal with the
// calling seam's codes. An error of a context that ended is
// tool.CodeCancelled.
func classify(ctx context.Context, err error, busy, unavailable tool.Code, what string) error {
	if err == nil {
		return nil
	}
	var r *history.Refusal
	if errors.As(err, &r) {
		return err
	}
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &history.Refusal{Code: tool.CodeCancelled, Message: what + " stopped: the call's context ended (cancelled, or past its deadline) before it finished", Err: err}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "55P03", "40001", "40P01": // lock_not_available, serialization_failure, deadlock_detected
			return &history.Refusal{Code: busy, Message: "another writer held the index past the busy timeout; send the same call again", Err: err}
		case "57P03": // cannot_connect_now: starting up or recovering
			return &history.Refusal{Code: history.CodeIndexNotReady, Message: "the database is starting up or recovering; send the same call again", Err: err}
		}
	}
	return &history.Refusal{Code: unavailable, Message: what + " failed", Err: err}
}

// check answers a refusal when the store is closed.
func (s *Store) check(code tool.Code) error {
	if s.closed.Load() {
		return refuse(code, "the index is closed")
	}
	return nil
}

// refuse returns a *history.Refusal coded code whose Message is format
// applied to args.
func refuse(code tool.Code, format string, args ...any) error {
	return &history.Refusal{Code: code, Message: fmt.Sprintf(format, args...)}
}
