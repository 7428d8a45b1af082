package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/agentloom/loom/schedule"
	"github.com/agentloom/loom/schedule/internal/stored"
	"github.com/agentloom/loom/schedule/internal/waker"
	"github.com/agentloom/loom/tool"
)

// schemaVersion is the PRAGMA user_version this library writes.
const schemaVersion = 1

// maxBatch bounds the fires one transaction of Tick claims; Tick goes on
// until nothing is due.
const maxBatch = 256

// defaultBusyTimeout is how long a call waits for another writer.
const defaultBusyTimeout = 5 * time.Second

// Fire is one fire of a schedule, handed to Options.Fire after it is
// recorded.
type Fire struct {
	// ID names the schedule.
	ID string
	// Owner created it; Target is where the fire lands.
	Owner, Target string
	// Message is what the fire tells the target.
	Message string
	// Wake is what the policy granted when it was created.
	Wake schedule.Wake
	// Due is when it was due; the fire may be late (the host was down,
	// or Tick ran late), never early.
	Due time.Time
	// N counts this schedule's fires, from 1.
	N int
	// Last says no fire of this schedule follows.
	Last bool
}

// Options configures Open. The zero value keeps the default Limits,
// lets every schedule only steer, uses the wall clock, and drops fires.
type Options struct {
	// Limits are the bounds Create enforces and the tools state.
	Limits schedule.Limits
	// Wake is the most the host's policy grants: WakesIdle lets a
	// schedule that asks start runs; SteersOnly (the zero value) answers
	// every schedule SteersOnly, and its create still succeeds.
	Wake schedule.Wake
	// Fire is the host's callback, called by Tick once per fire, in due
	// order, after the fire is recorded and outside any lock (it may
	// call the Scheduler). Nil drops fires.
	Fire func(ctx context.Context, f Fire)
	// Now is the clock schedules are read against. Nil means time.Now.
	Now func() time.Time
	// BusyTimeout is how long a call waits for another writer of the
	// file. Zero means 5 s.
	BusyTimeout time.Duration
}

// Scheduler is the reference schedule.Schedules: schedules kept in one
// SQLite file, fired through Options.Fire by Tick (or Run). It is safe
// for concurrent use.
type Scheduler struct {
	path string
	db   *sql.DB
	o    Options
	wake *waker.Waker

	mu     sync.Mutex // serialises writes in this process
	closed bool
}

var _ schedule.Schedules = (*Scheduler)(nil)

// Open opens the schedules at path, creating the file if needed. path is
// a plain file path (not ":memory:", without '?', '#' or '%'). A file
// that is no database, or one with a newer schema, is refused
// schedule.CodeSchedulesUnavailable. Close the Scheduler when done.
func Open(path string, o Options) (*Scheduler, error) {
	if path == "" || path == ":memory:" || strings.ContainsAny(path, "?#%") {
		return nil, schedule.Refuse(schedule.CodeSchedulesUnavailable, "the schedules path %q must be a plain file path", path)
	}
	o.Limits = o.Limits.Normalized()
	if o.Now == nil {
		o.Now = time.Now
	}
	busy := o.BusyTimeout
	if busy <= 0 {
		busy = defaultBusyTimeout
	}
	db, err := sql.Open("sqlite", fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate", path, busy.Milliseconds()))
	if err != nil {
		return nil, stored.Unavailable("cannot open the schedules", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	s := &Scheduler{path: path, db: db, o: o, wake: waker.New()}
	if err := s.migrate(context.Background()); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

func (s *Scheduler) migrate(ctx context.Context) error {
	var v int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return stored.Unavailable("cannot read the schedules' schema", err)
	}
	switch {
	case v == schemaVersion:
		return nil
	case v > schemaVersion:
		return schedule.Refuse(schedule.CodeSchedulesUnavailable, "the schedules file has schema %d, newer than this library's %d", v, schemaVersion)
	}
	_, err := s.db.ExecContext(ctx, `
CREATE TABLE IF NOT EXISTS schedules (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	owner      TEXT    NOT NULL,
	target     TEXT    NOT NULL,
	kind       TEXT    NOT NULL,
	every_s    INTEGER NOT NULL DEFAULT 0,
	cron       TEXT    NOT NULL DEFAULT '',
	offset_s   INTEGER NOT NULL DEFAULT 0,
	at_ns      INTEGER NOT NULL DEFAULT 0,
	expires_ns INTEGER NOT NULL,
	max_fires  INTEGER NOT NULL,
	fires      INTEGER NOT NULL DEFAULT 0,
	wake       INTEGER NOT NULL,
	message    TEXT    NOT NULL,
	created_ns INTEGER NOT NULL,
	next_ns    INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS schedules_next ON schedules(next_ns, id);
CREATE INDEX IF NOT EXISTS schedules_target ON schedules(target);
CREATE INDEX IF NOT EXISTS schedules_owner ON schedules(owner);
PRAGMA user_version = 1;`)
	if err != nil {
		return stored.Unavailable("cannot create the schedules' schema", err)
	}
	return nil
}

// Close closes the file. Calls after Close are refused
// schedule.CodeSchedulesUnavailable, and Run returns.
func (s *Scheduler) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.wake.Close()
	return s.db.Close()
}

// Path returns the file's path.
func (s *Scheduler) Path() string { return s.path }

// Limits implements schedule.Schedules.
func (s *Scheduler) Limits() schedule.Limits { return s.o.Limits }

// Create implements schedule.Schedules: it checks r against the Limits
// again (schedule.Request.Check), refuses a target already holding
// Limits.MaxLive live schedules, or a strand that already created that
// many, with schedule.CodeScheduleLimit, and
// grants Wake only as far as Options.Wake allows.
func (s *Scheduler) Create(ctx context.Context, r schedule.Request) (schedule.Created, error) {
	nr, err := stored.Admit(r, s.o.Limits, s.o.Wake)
	if err != nil {
		return schedule.Created{}, err
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		var live, made int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM schedules WHERE target = ?", r.Target).Scan(&live); err != nil {
			return err
		}
		if live >= s.o.Limits.MaxLive {
			return stored.TargetFull(r.Target, live)
		}
		// A target need only name a descendant, spawned or not, so the
		// count per target alone would not bound what one strand holds.
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM schedules WHERE owner = ?", r.Strand).Scan(&made); err != nil {
			return err
		}
		if made >= s.o.Limits.MaxLive {
			return stored.OwnerFull(made)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO schedules (owner, target, kind, every_s, cron, offset_s, at_ns, expires_ns, max_fires, wake, message, created_ns, next_ns)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			nr.Owner, nr.Target, string(nr.Timing.Kind), int64(nr.Timing.Every/time.Second), nr.Timing.Expr, int64(nr.Timing.Offset/time.Second), nr.AtNS(),
			nr.Expires.UnixNano(), nr.MaxFires, bool(nr.Wake), nr.Message, s.o.Now().UnixNano(), nr.Next.UnixNano())
		if err != nil {
			return err
		}
		nr.ID, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return schedule.Created{}, err
	}
	s.wake.Poke()
	return nr.Admitted(), nil
}

// visible is the WHERE clause of the schedules strand may see: those it
// or a strand it spawned created (schedule.Admits over the owner).
func visible(strand string) (string, []any) {
	prefix := tool.SubagentPrefix + strings.TrimPrefix(strand, tool.SubagentPrefix) + "/"
	return "(owner = ? OR substr(owner, 1, ?) = ?)", []any{strand, len(prefix), prefix}
}

// List implements schedule.Schedules: the live schedules strand or a
// strand it spawned created, soonest first, at most schedule.MaxListed.
func (s *Scheduler) List(ctx context.Context, strand string) (schedule.Listed, error) {
	if err := s.open(); err != nil {
		return schedule.Listed{}, err
	}
	where, args := visible(strand)
	var total int
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM schedules WHERE "+where, args...).Scan(&total); err != nil {
		return schedule.Listed{}, classify(err)
	}
	rows, err := s.db.QueryContext(ctx, "SELECT "+stored.Columns+" FROM schedules WHERE "+where+" ORDER BY next_ns, id LIMIT ?", append(args, schedule.MaxListed)...)
	if err != nil {
		return schedule.Listed{}, classify(err)
	}
	defer rows.Close()
	ls := schedule.Listed{Schedules: []schedule.Row{}}
	for rows.Next() {
		r, err := stored.Scan(rows)
		if err != nil {
			return schedule.Listed{}, classify(err)
		}
		ls.Schedules = append(ls.Schedules, r.Listed())
	}
	if err := rows.Err(); err != nil {
		return schedule.Listed{}, classify(err)
	}
	ls.More = max(total-len(ls.Schedules), 0)
	return ls, nil
}

// Cancel implements schedule.Schedules.
func (s *Scheduler) Cancel(ctx context.Context, strand, id string) (schedule.Cancelled, error) {
	n, ok := stored.ParseID(id)
	unknown := stored.Unknown(id)
	if !ok {
		return schedule.Cancelled{}, unknown
	}
	var c schedule.Cancelled
	err := s.write(ctx, func(tx *sql.Tx) error {
		where, args := visible(strand)
		err := tx.QueryRowContext(ctx, "SELECT target, fires FROM schedules WHERE id = ? AND "+where, append([]any{n}, args...)...).Scan(&c.Target, &c.Fires)
		if errors.Is(err, sql.ErrNoRows) {
			return unknown
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "DELETE FROM schedules WHERE id = ?", n)
		return err
	})
	if err != nil {
		return schedule.Cancelled{}, err
	}
	c.ID = id
	return c, nil
}

// Tick fires every schedule due at the clock (Options.Now) and answers
// how many fires it delivered. Each fire is recorded (the schedule's
// count raised, its next fire planned, or the schedule removed after its
// last) and committed before Options.Fire hears of it, so a fire is
// delivered at most once: a process that dies between the commit and
// the callback loses that fire, and a reopened file never repeats it.
func (s *Scheduler) Tick(ctx context.Context) (int, error) {
	return waker.Drain(ctx, maxBatch, func(ctx context.Context) ([]Fire, error) { return s.claim(ctx, s.o.Now().UTC()) }, s.o.Fire)
}

// claim records the fires due at now, at most maxBatch, in one
// transaction.
func (s *Scheduler) claim(ctx context.Context, now time.Time) ([]Fire, error) {
	var fires []Fire
	err := s.write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, "SELECT "+stored.Columns+" FROM schedules WHERE next_ns <= ? ORDER BY next_ns, id LIMIT ?", now.UnixNano(), maxBatch)
		if err != nil {
			return err
		}
		var due []stored.Row
		for rows.Next() {
			r, err := stored.Scan(rows)
			if err != nil {
				rows.Close()
				return err
			}
			due = append(due, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, r := range due {
			next := r.Fire(now, s.o.Limits.MinInterval)
			if next.IsZero() {
				_, err = tx.ExecContext(ctx, "DELETE FROM schedules WHERE id = ?", r.ID)
			} else {
				_, err = tx.ExecContext(ctx, "UPDATE schedules SET fires = ?, next_ns = ? WHERE id = ?", r.Fires, next.UnixNano(), r.ID)
			}
			if err != nil {
				return err
			}
			fires = append(fires, Fire{ID: stored.FormatID(r.ID), Owner: r.Owner, Target: r.Target, Message: r.Message, Wake: r.Wake, Due: r.Next, N: r.Fires, Last: next.IsZero()})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return fires, nil
}

// NextDue answers the soonest fire of any schedule; false when there is
// none.
func (s *Scheduler) NextDue(ctx context.Context) (time.Time, bool, error) {
	if err := s.open(); err != nil {
		return time.Time{}, false, err
	}
	var next sql.NullInt64
	if err := s.db.QueryRowContext(ctx, "SELECT min(next_ns) FROM schedules").Scan(&next); err != nil {
		return time.Time{}, false, classify(err)
	}
	if !next.Valid {
		return time.Time{}, false, nil
	}
	return time.Unix(0, next.Int64).UTC(), true, nil
}

// Run calls Tick whenever a schedule falls due, until ctx ends or the
// Scheduler is closed; it returns ctx's error, or nil after Close. It
// waits on the wall clock for the time Options.Now says is left, at
// most a minute at a time, and looks again at once when Create adds a
// schedule. A Tick that fails is tried again after that wait.
func (s *Scheduler) Run(ctx context.Context) error {
	return s.wake.Run(ctx, s.o.Now, func(ctx context.Context) { s.Tick(ctx) }, s.NextDue)
}

func (s *Scheduler) open() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return stored.Closed()
	}
	return nil
}

// write runs f in one immediate transaction, serialised in this process.
func (s *Scheduler) write(ctx context.Context, f func(*sql.Tx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return stored.Closed()
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return classify(err)
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return classify(err)
	}
	return classify(tx.Commit())
}

// classify turns a database error into a *schedule.Refusal.
func classify(err error) error {
	var r *schedule.Refusal
	switch {
	case err == nil:
		return nil
	case errors.As(err, &r):
		return err
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return stored.Cancelled(err)
	}
	return stored.Unavailable("the schedules file failed", err)
}
