package stored

import (
	"strconv"
	"strings"
	"time"

	"github.com/agentloom/loom/schedule"
)

// Columns are the schedules table's columns in the order Scan reads
// them.
const Columns = "id, owner, target, kind, every_s, cron, offset_s, at_ns, expires_ns, max_fires, fires, wake, message, created_ns, next_ns"

// idPrefix begins every schedule id.
const idPrefix = "sch-"

// Row is one stored schedule. The zero Row is no schedule.
type Row struct {
	// ID is the table's key, from 1; 0 before the row is inserted.
	ID int64
	// Owner is the strand that created it; Target is where it fires.
	Owner, Target string
	// Message is what each fire tells the target.
	Message string
	// Timing is when it fires; Expires is when a repeating schedule
	// stops (for a one-shot, its instant).
	Timing  schedule.Timing
	Expires time.Time
	// Created is when it was stored; Next is its next fire.
	Created, Next time.Time
	// MaxFires bounds Fires (0: no bound); Fires counts its fires.
	MaxFires, Fires int
	// Wake is what the policy granted.
	Wake schedule.Wake
}

// Scanner is a row of a query result: *sql.Rows, *sql.Row and
// pgx.Rows are.
type Scanner interface {
	Scan(dest ...any) error
}

// Scan reads one row selected with Columns. It answers sc's error as
// it is.
func Scan(sc Scanner) (Row, error) {
	var (
		r                                 Row
		kind, expr                        string
		every, offset, at, exp, cre, next int64
		maxFires, fires                   int64
		wake                              bool
	)
	if err := sc.Scan(&r.ID, &r.Owner, &r.Target, &kind, &every, &expr, &offset, &at, &exp, &maxFires, &fires, &wake, &r.Message, &cre, &next); err != nil {
		return Row{}, err
	}
	r.MaxFires, r.Fires = int(maxFires), int(fires)
	r.Wake = schedule.Wake(wake)
	r.Timing = schedule.Timing{Kind: schedule.TimingKind(kind), Every: time.Duration(every) * time.Second, Expr: expr, Offset: time.Duration(offset) * time.Second}
	if at != 0 {
		r.Timing.At = time.Unix(0, at).UTC()
	}
	r.Expires, r.Created, r.Next = time.Unix(0, exp).UTC(), time.Unix(0, cre).UTC(), time.Unix(0, next).UTC()
	return r, nil
}

// AtNS is r's at_ns column: a one-shot's instant in Unix nanoseconds,
// 0 for a repeating schedule.
func (r Row) AtNS() int64 {
	if r.Timing.Kind != schedule.Once {
		return 0
	}
	return r.Timing.At.UnixNano()
}

// FormatID is the id of the schedule with key n: "sch-{n}".
func FormatID(n int64) string { return idPrefix + strconv.FormatInt(n, 10) }

// ParseID reads an id FormatID wrote for a positive key, and only
// that: "sch-007" and "sch-+5" are no ids (each schedule has one
// spelling). It answers false for anything else.
func ParseID(id string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimPrefix(id, idPrefix), 10, 64)
	return n, err == nil && n > 0 && FormatID(n) == id
}

// Cadence is r's timing as schedule.CadenceOf states it.
func (r Row) Cadence() schedule.Cadence { return schedule.CadenceOf(r.Timing, r.Expires) }

// Admitted is what Create answers once r is inserted.
func (r Row) Admitted() schedule.Created {
	return schedule.Created{ID: FormatID(r.ID), Target: r.Target, Wake: r.Wake, Cadence: r.Cadence(), Next: r.Next, MaxFires: r.MaxFires}
}

// Listed is r as List shows it.
func (r Row) Listed() schedule.Row {
	return schedule.Row{ID: FormatID(r.ID), Owner: r.Owner, Target: r.Target, Wake: r.Wake, Cadence: r.Cadence(),
		Next: r.Next, Fires: r.Fires, MaxFires: r.MaxFires, Message: r.Message}
}

// Fire records one fire of r, due at r.Next and delivered at now: it
// raises r.Fires and answers the fire that follows
// (schedule.FireAfter, with cron fires at least minInterval apart),
// zero when this was the last.
func (r *Row) Fire(now time.Time, minInterval time.Duration) time.Time {
	r.Fires++
	return schedule.FireAfter(r.Timing, r.Expires, r.MaxFires, r.Fires, r.Next, now, minInterval)
}

// Admit checks req against l again (schedule.Request.Check), refuses
// it schedule.CodeExpiryOutOfBounds when it would never fire before it
// expires, and answers the row to insert: its first fire planned, Wake
// granted only as far as grant allows. The row's ID and Created are
// the store's to fill.
func Admit(req schedule.Request, l schedule.Limits, grant schedule.Wake) (Row, error) {
	if err := req.Check(l); err != nil {
		return Row{}, err
	}
	first := req.Timing.Next(req.At)
	if first.IsZero() || (req.Timing.Kind != schedule.Once && !first.Before(req.Expires)) {
		return Row{}, schedule.Refuse(schedule.CodeExpiryOutOfBounds, "the schedule would expire before it first fires")
	}
	return Row{Owner: req.Strand, Target: req.Target, Message: req.Message, Timing: req.Timing, Expires: req.Expires,
		Next: first, MaxFires: req.MaxFires, Wake: req.Wake && grant}, nil
}
