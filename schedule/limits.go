package schedule

import "time"

// The defaults of Limits, each taken by a field left zero (or negative).
const (
	// DefaultMinInterval is Limits.MinInterval's default.
	DefaultMinInterval = time.Minute
	// DefaultMaxLifetime is Limits.MaxLifetime's default.
	DefaultMaxLifetime = 7 * 24 * time.Hour
	// DefaultMaxFires is Limits.MaxFires's default.
	DefaultMaxFires = 1000
	// DefaultMaxLive is Limits.MaxLive's default.
	DefaultMaxLive = 16
)

// MaxMessageBytes bounds a schedule's message: what each fire tells its
// target.
const MaxMessageBytes = 2000

// MaxListed bounds the schedules one listing shows; Listed.More counts
// the rest.
const MaxListed = 64

// Limits are the bounds a Schedules implementation enforces. They are
// the host's, not this package's: the seam reports them (Schedules.Limits)
// and the tools read them once, at construction, to state them in their
// descriptions and to refuse a request past them before the seam is
// asked, so the number a description promises and the number a call
// meets are one fact. The zero value takes every default.
type Limits struct {
	// MinInterval is the shortest every_seconds, and the least time
	// between two fires of one cron schedule (a fire due sooner is
	// skipped). Zero means DefaultMinInterval; it is never below one
	// second.
	MinInterval time.Duration
	// MaxLifetime is the longest a schedule lives: a one-shot lies at
	// most this far ahead, expires_after_s is at most this, and a
	// repeating schedule that names no expiry expires after this. Zero
	// means DefaultMaxLifetime.
	MaxLifetime time.Duration
	// MaxFires is the largest max_fires a request may name. Zero means
	// DefaultMaxFires.
	MaxFires int
	// MaxLive is how many live schedules one target strand may hold,
	// and how many one strand may have created. Zero means
	// DefaultMaxLive.
	MaxLive int
}

// Normalized returns l with each zero or negative field replaced by its
// default, and MinInterval raised to one second and rounded down to a
// whole second (timings are in seconds).
func (l Limits) Normalized() Limits {
	if l.MinInterval <= 0 {
		l.MinInterval = DefaultMinInterval
	}
	l.MinInterval = max(l.MinInterval.Truncate(time.Second), time.Second)
	if l.MaxLifetime <= 0 {
		l.MaxLifetime = DefaultMaxLifetime
	}
	l.MaxLifetime = max(l.MaxLifetime.Truncate(time.Second), l.MinInterval)
	if l.MaxFires <= 0 {
		l.MaxFires = DefaultMaxFires
	}
	if l.MaxLive <= 0 {
		l.MaxLive = DefaultMaxLive
	}
	return l
}
