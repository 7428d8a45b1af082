package schedule

import (
	"context"
	"fmt"
	"time"
)

// CadenceKind is the shape of a Cadence.
type CadenceKind string

// The cadences.
const (
	CadenceInterval CadenceKind = "interval"
	CadenceCron     CadenceKind = "cron"
	CadenceOneShot  CadenceKind = "one_shot"
)

// Cadence is a schedule's admitted timing in structured form, carried
// beside the sentence that describes it so a program reads it without
// parsing prose. Kind licenses the fields beside it: interval has
// EverySeconds and Expires, cron has Cron, UTCOffset and Expires,
// one_shot has At. Times are Unix seconds.
type Cadence struct {
	Kind         CadenceKind `json:"kind"`
	EverySeconds int64       `json:"every_seconds,omitempty"`
	Cron         string      `json:"cron,omitempty"`
	UTCOffset    string      `json:"utc_offset,omitempty"`
	At           int64       `json:"at,omitempty"`
	Expires      int64       `json:"expires,omitempty"`
}

// CadenceOf is the Cadence of timing t expiring at expires.
func CadenceOf(t Timing, expires time.Time) Cadence {
	switch t.Kind {
	case Interval:
		return Cadence{Kind: CadenceInterval, EverySeconds: int64(t.Every / time.Second), Expires: expires.Unix()}
	case Cron:
		return Cadence{Kind: CadenceCron, Cron: t.Expr, UTCOffset: FormatOffset(t.Offset), Expires: expires.Unix()}
	}
	return Cadence{Kind: CadenceOneShot, At: t.At.Unix()}
}

// String is the sentence describing c, in UTC.
func (c Cadence) String() string {
	until := func() string { return time.Unix(c.Expires, 0).UTC().Format(time.RFC3339) }
	switch c.Kind {
	case CadenceInterval:
		return fmt.Sprintf("every %d s until %s", c.EverySeconds, until())
	case CadenceCron:
		return fmt.Sprintf("on cron %s at UTC%s until %s", quote(c.Cron), c.UTCOffset, until())
	case CadenceOneShot:
		return "once at " + time.Unix(c.At, 0).UTC().Format(time.RFC3339)
	}
	return "on an unknown cadence " + quote(string(c.Kind))
}

// Created is what a Schedules seam admitted.
type Created struct {
	// ID names the schedule for Cancel.
	ID string `json:"id"`
	// Target is where its fires land.
	Target string `json:"target"`
	// Wake is what the host's policy granted, which may be less than the
	// request asked: a steer-only host answers SteersOnly to a request
	// for WakesIdle.
	Wake Wake `json:"wake"`
	// Cadence is the admitted timing.
	Cadence Cadence `json:"cadence"`
	// Next is its first fire.
	Next time.Time `json:"next"`
	// MaxFires is its count bound; 0 means none.
	MaxFires int `json:"max_fires,omitempty"`
}

// Row is one live schedule in a listing.
type Row struct {
	ID string `json:"id"`
	// Owner is the strand that created it.
	Owner   string  `json:"owner"`
	Target  string  `json:"target"`
	Wake    Wake    `json:"wake"`
	Cadence Cadence `json:"cadence"`
	// Next is its next fire.
	Next time.Time `json:"next"`
	// Fires is how many times it fired; MaxFires its bound (0: none).
	Fires    int `json:"fires"`
	MaxFires int `json:"max_fires,omitempty"`
	// Message is what each fire tells the target, cut to
	// MaxListedMessageBytes.
	Message string `json:"message"`
}

// MaxListedMessageBytes bounds the message a Row shows.
const MaxListedMessageBytes = 200

// Listed is a listing: the live schedules that the caller, or a strand
// it spawned, created, soonest first, at most MaxListed of them.
type Listed struct {
	Schedules []Row `json:"schedules"`
	// More is how many live schedules were not shown.
	More int `json:"more,omitempty"`
}

// Cancelled is the receipt of a cancel.
type Cancelled struct {
	ID     string `json:"id"`
	Target string `json:"target"`
	// Fires is how many times it fired before it was cancelled.
	Fires int `json:"fires"`
}

// Schedules is the seam behind the schedule tools, filled by the host.
// Every strand argument is the calling strand, from the tool.Call. A
// failure is an error whose chain holds a *Refusal (read it with
// tool.CodeOf); any other error is the host failing. The reference is
// package schedule/sqlite's Scheduler.
type Schedules interface {
	// Limits are the bounds the seam enforces.
	Limits() Limits
	// Create admits r (already decoded, and checked again here: the seam
	// owns its bounds) and answers what it granted. It refuses a target
	// holding Limits.MaxLive live schedules, or r.Strand having created
	// that many, with CodeScheduleLimit.
	Create(ctx context.Context, r Request) (Created, error)
	// List answers the live schedules strand or a strand it spawned
	// created.
	List(ctx context.Context, strand string) (Listed, error)
	// Cancel ends the schedule id if strand or a strand it spawned
	// created it, and refuses any other id with CodeUnknownSchedule.
	Cancel(ctx context.Context, strand, id string) (Cancelled, error)
}
