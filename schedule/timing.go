package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// TimingKind is the shape of a schedule's timing.
type TimingKind string

// The timings a request may carry; in_seconds is decoded as Once.
const (
	// Interval fires every Every, aligned to the Unix epoch: at each
	// whole multiple of Every since 1970-01-01T00:00:00Z.
	Interval TimingKind = "interval"
	// Cron fires when the five-field cron expression matches the clock
	// shifted by a fixed UTC offset.
	Cron TimingKind = "cron"
	// Once fires once, at At.
	Once TimingKind = "once"
)

// Timing is a decoded, admitted timing. Build one with Decode (or, for
// a store reading its rows back, with ParseCron for Cron); the zero
// Timing never fires.
type Timing struct {
	Kind TimingKind
	// Every is Interval's period, a whole number of seconds.
	Every time.Duration
	// Expr is Cron's expression, as written.
	Expr string
	// Offset is Cron's fixed offset east of UTC, a whole number of
	// minutes. It is not a time zone: it never follows a daylight-saving
	// change.
	Offset time.Duration
	// At is Once's instant, to the second.
	At time.Time
}

// cronGrammar is the one cron grammar of the module: five fields
// (minute, hour, day of month, month, day of week), with ranges, lists,
// steps and month and day names; no seconds field, no @descriptors and
// no time zone prefix.
var cronGrammar = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// maxCronBytes bounds a cron expression: room for every value of every
// field listed one by one, and far short of what would cost anything to
// parse again at each planning.
const maxCronBytes = 512

// ParseCron parses expr under the module's one cron grammar, read
// against a clock offset from UTC by offset. It refuses with
// CodeBadCron one longer than maxCronBytes, a time zone prefix (a time zone would follow daylight
// saving, which a fixed offset never does), an @descriptor, anything
// else the grammar refuses, and an expression that never fires.
func ParseCron(expr string, offset time.Duration) (cron.Schedule, error) {
	if len(expr) > maxCronBytes {
		return nil, Refuse(CodeBadCron, "cron %s is %d bytes; five fields take at most %d", quote(expr), len(expr), maxCronBytes)
	}
	trimmed := strings.TrimSpace(expr)
	if strings.ContainsAny(trimmed, "=@") {
		return nil, Refuse(CodeBadCron, "cron %s holds a time zone or a @descriptor; write five fields (minute hour day-of-month month day-of-week) and give utc_offset for another clock", quote(expr))
	}
	var (
		s   cron.Schedule
		err error
	)
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("%v", p)
			}
		}()
		s, err = cronGrammar.Parse(trimmed)
	}()
	if err != nil {
		return nil, Refuse(CodeBadCron, "cron %s is not five fields of minute hour day-of-month month day-of-week: %s", quote(expr), clip(err.Error(), 200))
	}
	if spec, ok := s.(*cron.SpecSchedule); ok {
		spec.Location = time.FixedZone(FormatOffset(offset), int(offset/time.Second))
	}
	if s.Next(time.Unix(0, 0).UTC()).IsZero() {
		return nil, Refuse(CodeBadCron, "cron %s never fires (a day that no month has?)", quote(expr))
	}
	return s, nil
}

// ParseOffset parses a fixed UTC offset written [+-]HH:MM, from -12:00
// to +14:00 with minutes below 60; "Z" and "" are zero. Anything else is
// refused with CodeBadUTCOffset. It is an offset, not a time zone.
func ParseOffset(s string) (time.Duration, error) {
	if s == "" || s == "Z" {
		return 0, nil
	}
	bad := Refuse(CodeBadUTCOffset, "utc_offset %s is not [+-]HH:MM between -12:00 and +14:00 (a fixed offset, not a time zone name)", quote(s))
	if len(s) != 6 || (s[0] != '+' && s[0] != '-') || s[3] != ':' {
		return 0, bad
	}
	digit := func(b byte) (int, bool) { return int(b - '0'), b >= '0' && b <= '9' }
	h1, ok1 := digit(s[1])
	h2, ok2 := digit(s[2])
	m1, ok3 := digit(s[4])
	m2, ok4 := digit(s[5])
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return 0, bad
	}
	h, m := h1*10+h2, m1*10+m2
	d := time.Duration(h)*time.Hour + time.Duration(m)*time.Minute
	if s[0] == '-' {
		d = -d
	}
	if m >= 60 || d > 14*time.Hour || d < -12*time.Hour {
		return 0, bad
	}
	return d, nil
}

// FormatOffset writes offset as [+-]HH:MM, the form ParseOffset reads.
func FormatOffset(offset time.Duration) string {
	sign := '+'
	if offset < 0 {
		sign, offset = '-', -offset
	}
	m := int(offset / time.Minute)
	return fmt.Sprintf("%c%02d:%02d", sign, m/60, m%60)
}

// Next returns the first instant strictly after after at which t fires,
// in UTC, or the zero time when it never fires again (a Once at or
// before after, a zero Timing, a cron that no longer matches).
func (t Timing) Next(after time.Time) time.Time {
	switch t.Kind {
	case Interval:
		if t.Every < time.Second {
			return time.Time{}
		}
		every, sec := int64(t.Every/time.Second), after.Unix() // Unix is the floor
		q := sec / every
		if sec%every != 0 && sec < 0 {
			q--
		}
		return time.Unix((q+1)*every, 0).UTC()
	case Cron:
		s, err := ParseCron(t.Expr, t.Offset)
		if err != nil {
			return time.Time{}
		}
		return s.Next(after).UTC()
	case Once:
		if t.At.After(after) {
			return t.At.UTC()
		}
	}
	return time.Time{}
}

// FireAfter is when a schedule of timing t, expiring at expires and
// fired fires times of at most maxFires (zero: no bound), fires next
// after a fire due at due that is delivered at now. Missed fires are
// coalesced: a schedule behind its clock fires once, late, then keeps
// its cadence from now. A cron fire is at least minInterval after the
// last; none is at or after the expiry. Zero means none follows. Every
// durable store fires by this rule.
func FireAfter(t Timing, expires time.Time, maxFires, fires int, due, now time.Time, minInterval time.Duration) time.Time {
	if t.Kind == Once || (maxFires > 0 && fires >= maxFires) {
		return time.Time{}
	}
	after := now
	if t.Kind == Cron {
		if gap := due.Add(minInterval - time.Second); gap.After(after) {
			after = gap
		}
	}
	next := t.Next(after)
	if next.IsZero() || !next.Before(expires) {
		return time.Time{}
	}
	return next
}
