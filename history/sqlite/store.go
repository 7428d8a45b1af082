package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	driver "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/tool"
)

// Tuning of the store.
const (
	// defaultBusyTimeout is Options.BusyTimeout's default.
	defaultBusyTimeout = 5 * time.Second
	// maxReaders bounds the read connections kept open.
	maxReaders = 8
	// writerCacheKiB and readerCacheKiB size each connection's page cache;
	// the writer's is large because batched inserts touch many pages.
	writerCacheKiB = 64 << 10
	readerCacheKiB = 8 << 10
	// walCheckpointPages is how large (in pages) the WAL may grow before
	// the writer's commit itself copies it back into the database. Batched
	// ingest is normally checkpointed sooner, in the background (see
	// checkpointer); this bound is the backstop for small writes and for a
	// background checkpointer that falls behind. Far above SQLite's default
	// of 1000, so an index page rewritten by several commits is copied
	// back once. The WAL file keeps its high-water mark, about this many
	// pages plus one batch: 128 MiB of pageBytes pages (32 MiB in a
	// database created with 4 KiB pages by an earlier version).
	walCheckpointPages = 8192
	// mmapBytes is how much of the file each connection maps into memory
	// rather than reading it through system calls.
	mmapBytes = 256 << 20
	// pageBytes is the page size of a new database. Pages four times
	// SQLite's default hold a few more entries each, and a text that
	// spills onto overflow pages less often, so the file is smaller; an
	// existing database keeps the page size it was created with.
	pageBytes = 16 << 10
	// indexHashBytes is FTS5's in-memory buffer per index before a segment
	// is flushed; bigger batches merge less.
	indexHashBytes = 16 << 20
	// indexAutomerge is how many segments of one level FTS5 lets build up
	// before merging them into one (SQLite's default is 4). Every commit
	// writes a segment, so merging drives ingest cost; 8 merges each
	// posting fewer times and leaves a query a few more segments to read.
	indexAutomerge = 8
)

// Store is the reference history.History and history.Memory on one
// SQLite database. It is safe for concurrent use: writes are serialised
// (one writer, also across processes through SQLite's lock), reads run in
// parallel on their own connections under WAL.
type Store struct {
	path       string
	writer     *sql.DB // one connection, BEGIN IMMEDIATE
	readers    *sql.DB
	probe      *tokenProbe
	checkpoint *checkpointer
	substrings bool

	mu      sync.Mutex // serialises writers in this process; guards known, pending, checkpoint.since
	known   knownWords // vocabulary words known to be stored
	pending []any      // vocabulary words the open transaction stored
	closed  atomic.Bool
}

var (
	_ history.History = (*Store)(nil)
	_ history.Memory  = (*Store)(nil)
)

// Options configures Open. The zero value is the default configuration.
type Options struct {
	// BusyTimeout is how long a call waits for another writer before it
	// is refused history.CodeIndexBusy or history.CodeMemoryBusy. Zero
	// means 5 s; a negative value means not waiting at all.
	BusyTimeout time.Duration
	// NoSubstrings creates the database without the vocabulary and its
	// trigram index, so words-syntax searches have no substring fallback;
	// ingest is faster and the file smaller. The choice is fixed when the
	// database is created: for an existing database the field is ignored
	// and Store.Substrings reports the file's choice. False (the default)
	// keeps the fallback.
	NoSubstrings bool
}

// busyTimeout answers the busy timeout o asks for.
func (o Options) busyTimeout() time.Duration {
	switch {
	case o.BusyTimeout == 0:
		return defaultBusyTimeout
	case o.BusyTimeout < 0:
		return 0
	}
	return o.BusyTimeout
}

// Open opens the index at path, creating it if needed, and migrates its
// schema to this library's version. path is a file path: not ":memory:",
// since readers and the writer share it, and without '?', '#' or '%',
// which SQLite would read as URI syntax. A bad path, a file that is no
// database, and a database with a newer schema are refused
// history.CodeIndexUnavailable. Close the Store when done.
func Open(path string, o Options) (*Store, error) {
	if path == "" || path == ":memory:" || strings.ContainsAny(path, "?#%") {
		return nil, refuse(history.CodeIndexUnavailable, "the index path %q must be a plain file path", path)
	}
	ms := o.busyTimeout().Milliseconds()
	if err := create(path, ms); err != nil {
		return nil, err
	}
	common := fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)", path, ms)
	writer, err := sql.Open("sqlite", common+fmt.Sprintf("&_txlock=immediate&_pragma=cache_size(-%d)&_pragma=wal_autocheckpoint(%d)&_pragma=mmap_size(%d)", writerCacheKiB, walCheckpointPages, mmapBytes))
	if err != nil {
		return nil, &history.Refusal{Code: history.CodeIndexUnavailable, Message: "cannot open the index", Err: err}
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	s := &Store{path: path, writer: writer, known: knownWords{}}
	if err := s.migrate(context.Background(), o); err != nil {
		writer.Close()
		return nil, err
	}
	readers, err := sql.Open("sqlite", common+fmt.Sprintf("&_pragma=query_only(1)&_pragma=cache_size(-%d)&_pragma=mmap_size(%d)", readerCacheKiB, mmapBytes))
	if err != nil {
		writer.Close()
		return nil, &history.Refusal{Code: history.CodeIndexUnavailable, Message: "cannot open the index for reading", Err: err}
	}
	readers.SetMaxOpenConns(maxReaders)
	readers.SetMaxIdleConns(maxReaders)
	s.readers = readers
	if s.probe, err = openProbe(context.Background()); err != nil {
		readers.Close()
		writer.Close()
		return nil, &history.Refusal{Code: history.CodeIndexUnavailable, Message: "cannot open the tokenizer probe", Err: err}
	}
	if s.checkpoint, err = startCheckpointer(common); err != nil {
		s.probe.close()
		readers.Close()
		writer.Close()
		return nil, &history.Refusal{Code: history.CodeIndexUnavailable, Message: "cannot open the checkpoint connection", Err: err}
	}
	return s, nil
}

// create gives a new database file its page size, which only a new file
// can take, and turns on WAL, which fixes it. The driver applies the
// connection string's pragmas in alphabetical order, journal_mode before
// page_size, so this is its own connection. On an existing database both
// pragmas change nothing.
func create(path string, busyMillis int64) error {
	db, err := sql.Open("sqlite", fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)", path, busyMillis))
	if err != nil {
		return &history.Refusal{Code: history.CodeIndexUnavailable, Message: "cannot open the index", Err: err}
	}
	defer db.Close()
	for _, q := range []string{fmt.Sprintf(`PRAGMA page_size = %d`, pageBytes), `PRAGMA journal_mode = WAL`} {
		if _, err := db.Exec(q); err != nil {
			return classify(err, history.CodeIndexBusy, history.CodeIndexUnavailable, "", "creating the index")
		}
	}
	return nil
}

// Close closes the database. Calls after Close are refused
// history.CodeIndexUnavailable or history.CodeMemoryUnavailable.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	return errors.Join(s.checkpoint.close(), s.probe.close(), s.readers.Close(), s.writer.Close())
}

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// Substrings reports whether the database keeps the vocabulary index that
// backs the substring fallback.
func (s *Store) Substrings() bool { return s.substrings }

// classify turns a database error into a *history.Refusal. busy and
// unavailable are the codes of the calling seam (history.CodeIndexBusy or
// history.CodeMemoryBusy, and history.CodeIndexUnavailable or
// history.CodeMemoryUnavailable); refusedSQL, when set, is the code a
// plain SQL error maps to (a raw query FTS5 rejected). An error of a
// context that ended is tool.CodeCancelled, whichever seam called.
func classify(err error, busy, unavailable, refusedSQL tool.Code, what string) error {
	if err == nil {
		return nil
	}
	var r *history.Refusal
	if errors.As(err, &r) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &history.Refusal{Code: tool.CodeCancelled, Message: what + " stopped: the call's context ended (cancelled, or past its deadline) before it finished", Err: err}
	}
	var se *driver.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_BUSY_RECOVERY:
			return &history.Refusal{Code: history.CodeIndexNotReady, Message: "the index is recovering; send the same call again", Err: err}
		}
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return &history.Refusal{Code: busy, Message: "another writer held the database past the busy timeout; send the same call again", Err: err}
		case sqlite3.SQLITE_ERROR:
			if refusedSQL != "" {
				return &history.Refusal{Code: refusedSQL, Message: "FTS5 refused the query: " + strings.TrimPrefix(se.Error(), "SQL logic error: "), Err: err}
			}
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
