package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentloom/loom/schedule"
	"github.com/agentloom/loom/schedule/internal/stored"
	"github.com/agentloom/loom/schedule/internal/waker"
	"github.com/agentloom/loom/tool"
)

// Tuning of the Scheduler.
const (
	// defaultSchema is Options.Schema's default.
	defaultSchema = "loom_schedules"
	// defaultBusyTimeout is Options.BusyTimeout's default.
	defaultBusyTimeout = 5 * time.Second
	// maxConns bounds the connections a Scheduler opened by Open keeps.
	maxConns = 4
	// maxBatch bounds the fires one transaction of Tick claims; Tick
	// goes on until nothing is due.
	maxBatch = 256
	// lockClass is the first key of the advisory locks this package
	// takes (history/postgres uses the two before it); the second is a
	// hash of the schema name, or of the schema and a target or owner.
	lockClass    = 0x4c6f6f6d + 2
	migrateClass = lockClass
	targetClass  = lockClass + 1
	ownerClass   = lockClass + 2
)

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
	// Due is when it was due; the fire may be late (every host was down,
	// or Tick ran late), never early.
	Due time.Time
	// N counts this schedule's fires, from 1.
	N int
	// Last says no fire of this schedule follows.
	Last bool
}

// Options configures Open and OpenPool. The zero value uses the schema
// "loom_schedules", keeps the default Limits, lets every schedule only
// steer, uses the wall clock, and drops fires.
type Options struct {
	// Schema is the PostgreSQL schema holding the schedules, created
	// when missing: a lowercase SQL identifier of at most 63 bytes. ""
	// means "loom_schedules". It may be the schema of a history/postgres
	// index. Every host opening one schema shares its schedules.
	Schema string
	// Limits are the bounds Create enforces and the tools state. Hosts
	// sharing a schema should agree on them.
	Limits schedule.Limits
	// Wake is the most the host's policy grants: WakesIdle lets a
	// schedule that asks start runs; SteersOnly (the zero value) answers
	// every schedule SteersOnly, and its create still succeeds.
	Wake schedule.Wake
	// Fire is the host's callback, called by Tick once per fire this
	// host claimed, in due order, after the fire is committed and
	// outside any transaction (it may call the Scheduler). Nil drops
	// fires.
	Fire func(ctx context.Context, f Fire)
	// Now is the clock schedules are read against. Nil means time.Now.
	// Hosts sharing a schema should keep their clocks close: a fire is
	// due by the clock of the host that claims it.
	Now func() time.Time
	// BusyTimeout is how long a write waits for a lock another host
	// holds. Zero means 5 s.
	BusyTimeout time.Duration
}

// Scheduler is a schedule.Schedules on one PostgreSQL schema, fired
// through Options.Fire by Tick (or Run). It is safe for concurrent use,
// and any number of Schedulers may share one schema.
type Scheduler struct {
	pool   *pgxpool.Pool
	owned  bool // the pool is the Scheduler's, closed by Close
	schema string
	table  string // the schedules table, qualified
	o      Options
	wake   *waker.Waker

	mu     sync.Mutex // guards closed
	closed bool

	// test holds hooks for this package's tests.
	test struct {
		// unclaimed selects due rows without locking them, so two hosts
		// may both record one fire: the control of the many-hosts test.
		unclaimed bool
		// selected is called after the due rows are read and before they
		// are recorded, inside the transaction.
		selected func()
	}
}

var _ schedule.Schedules = (*Scheduler)(nil)

var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Open connects to the database at url (a libpq connection URL or
// key=value string, as pgx reads it), creates the schema when missing
// and migrates it to this library's version. A bad URL or schema name,
// an unreachable server, missing privileges and a schema newer than
// this library's are refused schedule.CodeSchedulesUnavailable. Close
// the Scheduler when done; it closes its connections.
func Open(ctx context.Context, url string, o Options) (*Scheduler, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, &schedule.Refusal{Code: schedule.CodeSchedulesUnavailable, Reason: "the database URL is not valid", Err: err}
	}
	cfg.MaxConns = maxConns
	cfg.ConnConfig.RuntimeParams["application_name"] = "loom-schedule"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, stored.Unavailable("cannot open the database", err)
	}
	s, err := OpenPool(ctx, pool, o)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// OpenPool is Open on a pool the host keeps for its own queries: it
// creates and migrates the schema as Open does, names every
// table with its schema (the pool's search_path does not matter), and
// its Close leaves the pool open.
func OpenPool(ctx context.Context, pool *pgxpool.Pool, o Options) (*Scheduler, error) {
	if o.Schema == "" {
		o.Schema = defaultSchema
	}
	if !identifier.MatchString(o.Schema) {
		return nil, schedule.Refuse(schedule.CodeSchedulesUnavailable, "the schema name %q is not a lowercase SQL identifier of at most 63 bytes", o.Schema)
	}
	o.Limits = o.Limits.Normalized()
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = defaultBusyTimeout
	}
	if err := migrate(ctx, pool, o.Schema); err != nil {
		return nil, err
	}
	return &Scheduler{pool: pool, schema: o.Schema, table: pgx.Identifier{o.Schema, "schedules"}.Sanitize(), o: o, wake: waker.New()}, nil
}

// Close closes the Scheduler, and its connections when Open opened
// them; the schedules stay in the database. Calls after Close are
// refused schedule.CodeSchedulesUnavailable, and Run returns.
func (s *Scheduler) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.wake.Close()
	if s.owned {
		s.pool.Close()
	}
	return nil
}

// Schema returns the name of the schedules' schema.
func (s *Scheduler) Schema() string { return s.schema }

// Limits implements schedule.Schedules.
func (s *Scheduler) Limits() schedule.Limits { return s.o.Limits }

// Create implements schedule.Schedules: it checks r against the Limits
// again (schedule.Request.Check), refuses a target already holding
// Limits.MaxLive live schedules, or a strand that created as many, with
// schedule.CodeScheduleLimit (counted under locks on the target and the
// strand, so hosts creating at once cannot pass it), and grants Wake only as far as Options.Wake allows.
func (s *Scheduler) Create(ctx context.Context, r schedule.Request) (schedule.Created, error) {
	nr, err := stored.Admit(r, s.o.Limits, s.o.Wake)
	if err != nil {
		return schedule.Created{}, err
	}
	err = s.write(ctx, "creating the schedule", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, int32(targetClass), s.schema+"/"+r.Target); err != nil {
			return err
		}
		var live int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+s.table+" WHERE target = $1", r.Target).Scan(&live); err != nil {
			return err
		}
		if live >= s.o.Limits.MaxLive {
			return stored.TargetFull(r.Target, live)
		}
		// A target need only name a descendant, spawned or not, so the
		// count per target alone would not bound what one strand holds.
		// The owner's lock is taken after the target's, never before.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, int32(ownerClass), s.schema+"/"+r.Strand); err != nil {
			return err
		}
		var made int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+s.table+" WHERE owner = $1", r.Strand).Scan(&made); err != nil {
			return err
		}
		if made >= s.o.Limits.MaxLive {
			return stored.OwnerFull(made)
		}
		return tx.QueryRow(ctx, `INSERT INTO `+s.table+` (owner, target, kind, every_s, cron, offset_s, at_ns, expires_ns, max_fires, wake, message, created_ns, next_ns)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id`,
			nr.Owner, nr.Target, string(nr.Timing.Kind), int64(nr.Timing.Every/time.Second), nr.Timing.Expr, int64(nr.Timing.Offset/time.Second), nr.AtNS(),
			nr.Expires.UnixNano(), int32(nr.MaxFires), bool(nr.Wake), nr.Message, s.o.Now().UnixNano(), nr.Next.UnixNano()).Scan(&nr.ID)
	})
	if err != nil {
		return schedule.Created{}, err
	}
	s.wake.Poke()
	return nr.Admitted(), nil
}

// visible is the WHERE clause of the schedules strand may see, with its
// parameters numbered from n: those it or a strand it spawned created
// (schedule.Admits over the owner).
func visible(strand string, n int) (string, []any) {
	prefix := tool.SubagentPrefix + strings.TrimPrefix(strand, tool.SubagentPrefix) + "/"
	return fmt.Sprintf("(owner = $%d OR starts_with(owner, $%d))", n, n+1), []any{strand, prefix}
}

// List implements schedule.Schedules: the live schedules strand or a
// strand it spawned created, soonest first, at most schedule.MaxListed.
func (s *Scheduler) List(ctx context.Context, strand string) (schedule.Listed, error) {
	if err := s.open(); err != nil {
		return schedule.Listed{}, err
	}
	ls := schedule.Listed{Schedules: []schedule.Row{}}
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		where, args := visible(strand, 1)
		var total int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+s.table+" WHERE "+where, args...).Scan(&total); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT "+stored.Columns+" FROM "+s.table+" WHERE "+where+" ORDER BY next_ns, id LIMIT $3", append(args, schedule.MaxListed)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := stored.Scan(rows)
			if err != nil {
				return err
			}
			ls.Schedules = append(ls.Schedules, r.Listed())
		}
		if err := rows.Err(); err != nil {
			return err
		}
		ls.More = max(total-len(ls.Schedules), 0)
		return nil
	})
	if err != nil {
		return schedule.Listed{}, classify(ctx, err, "listing the schedules")
	}
	return ls, nil
}

// Cancel implements schedule.Schedules. A cancel meeting a fire another
// host is recording waits for it; if that was the last fire, the id is
// no longer live.
func (s *Scheduler) Cancel(ctx context.Context, strand, id string) (schedule.Cancelled, error) {
	n, ok := stored.ParseID(id)
	unknown := stored.Unknown(id)
	if !ok {
		return schedule.Cancelled{}, unknown
	}
	var c schedule.Cancelled
	err := s.write(ctx, "cancelling the schedule", func(tx pgx.Tx) error {
		where, args := visible(strand, 2)
		var fires int32
		err := tx.QueryRow(ctx, "DELETE FROM "+s.table+" WHERE id = $1 AND "+where+" RETURNING target, fires", append([]any{n}, args...)...).Scan(&c.Target, &fires)
		if errors.Is(err, pgx.ErrNoRows) {
			return unknown
		}
		c.Fires = int(fires)
		return err
	})
	if err != nil {
		return schedule.Cancelled{}, err
	}
	c.ID = id
	return c, nil
}

// Tick fires every schedule due at the clock (Options.Now) that no
// other host is firing, and answers how many fires it delivered. Each
// fire is claimed and recorded (the schedule's count raised, its next
// fire planned, or the schedule removed after its last) and committed
// before Options.Fire hears of it, so a fire is delivered at most once
// across all hosts: a host that dies between the commit and the
// callback loses that fire, and no host repeats it.
func (s *Scheduler) Tick(ctx context.Context) (int, error) {
	return waker.Drain(ctx, maxBatch, func(ctx context.Context) ([]Fire, error) { return s.claim(ctx, s.o.Now().UTC()) }, s.o.Fire)
}

// claim records the fires due at now, at most maxBatch, in one
// transaction that locks their rows, skipping rows another host holds.
func (s *Scheduler) claim(ctx context.Context, now time.Time) ([]Fire, error) {
	var fires []Fire
	lock := " FOR UPDATE SKIP LOCKED"
	if s.test.unclaimed {
		lock = ""
	}
	err := s.write(ctx, "firing the schedules", func(tx pgx.Tx) error {
		fires = fires[:0]
		rows, err := tx.Query(ctx, "SELECT "+stored.Columns+" FROM "+s.table+" WHERE next_ns <= $1 ORDER BY next_ns, id LIMIT $2"+lock, now.UnixNano(), maxBatch)
		if err != nil {
			return err
		}
		due, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (stored.Row, error) { return stored.Scan(r) })
		if err != nil {
			return err
		}
		if s.test.selected != nil {
			s.test.selected()
		}
		for _, r := range due {
			next := r.Fire(now, s.o.Limits.MinInterval)
			if next.IsZero() {
				_, err = tx.Exec(ctx, "DELETE FROM "+s.table+" WHERE id = $1", r.ID)
			} else {
				_, err = tx.Exec(ctx, "UPDATE "+s.table+" SET fires = $1, next_ns = $2 WHERE id = $3", int32(r.Fires), next.UnixNano(), r.ID)
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
	var next *int64
	if err := s.pool.QueryRow(ctx, "SELECT min(next_ns) FROM "+s.table).Scan(&next); err != nil {
		return time.Time{}, false, classify(ctx, err, "reading the next fire")
	}
	if next == nil {
		return time.Time{}, false, nil
	}
	return time.Unix(0, *next).UTC(), true, nil
}

// Run calls Tick whenever a schedule falls due, until ctx ends or the
// Scheduler is closed; it returns ctx's error, or nil after Close. It
// waits on the wall clock for the time Options.Now says is left, at
// most a minute at a time, and looks again at once when this
// Scheduler's Create adds a schedule; one another host created is seen
// within that minute. A Tick that fails is tried again after that wait.
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

// write runs f in one transaction that waits at most
// Options.BusyTimeout for a lock.
func (s *Scheduler) write(ctx context.Context, what string, f func(pgx.Tx) error) error {
	if err := s.open(); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", max(s.o.BusyTimeout.Milliseconds(), 1))); err != nil {
			return err
		}
		return f(tx)
	})
	return classify(ctx, err, what)
}

// classify turns a database error into a *schedule.Refusal.
func classify(ctx context.Context, err error, what string) error {
	var r *schedule.Refusal
	switch {
	case err == nil:
		return nil
	case errors.As(err, &r):
		return err
	case ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return stored.Cancelled(err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "55P03", "40001", "40P01": // lock_not_available, serialization_failure, deadlock_detected
			return &schedule.Refusal{Code: schedule.CodeSchedulesUnavailable, Reason: what + ": another host held the schedules past the busy timeout; send the same call again", Err: err}
		}
	}
	return stored.Unavailable(what+" failed", err)
}
