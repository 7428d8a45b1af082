package schedule

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/tool"
)

// Wake is what a schedule may do to an idle target. On the wire it is a
// JSON boolean: true is WakesIdle.
type Wake bool

// The two answers of Wake.
const (
	// SteersOnly: a fire reaches the target's running turn, or waits for
	// its next run; it never starts one.
	SteersOnly Wake = false
	// WakesIdle: a fire on an idle target starts a run.
	WakesIdle Wake = true
)

// Spec is a schedule request as a model or a program writes it: the
// arguments of schedule_create and of cap/schedule's Create. Decode
// turns it into a Request. Exactly one of EverySeconds, Cron, At and
// InSeconds is given (a zero number or an empty string is not given).
type Spec struct {
	EverySeconds int64  `json:"every_seconds,omitempty" jsonschema:"repeat every this many seconds, aligned to the Unix epoch"`
	Cron         string `json:"cron,omitempty" jsonschema:"five-field cron: minute hour day-of-month month day-of-week, read in UTC unless utc_offset is given"`
	UTCOffset    string `json:"utc_offset,omitempty" jsonschema:"only with cron: a fixed offset [+-]HH:MM the cron fields are read against; not a time zone, it does not follow daylight saving"`
	At           string `json:"at,omitempty" jsonschema:"fire once at this RFC 3339 time"`
	InSeconds    int64  `json:"in_seconds,omitempty" jsonschema:"fire once, this many seconds from now"`
	MaxFires     int    `json:"max_fires,omitempty" jsonschema:"stop after this many fires; omitted means until it expires"`
	ExpiresAfter int64  `json:"expires_after_s,omitempty" jsonschema:"repeating only: stop this many seconds from now"`
	Wake         bool   `json:"wake,omitempty" jsonschema:"true to start a run when the target is idle; otherwise a fire waits for its next run"`
	Target       string `json:"target,omitempty" jsonschema:"you (the default) or a sub-agent you spawned"`
	Message      string `json:"message" jsonschema:"what each fire tells the target"`
}

// Timings counts the timings s gives: every_seconds, cron, at and
// in_seconds, each given when non-zero. A request is well formed only
// with exactly one.
func (s Spec) Timings() int {
	n := 0
	for _, given := range []bool{s.EverySeconds != 0, s.Cron != "", s.At != "", s.InSeconds != 0} {
		if given {
			n++
		}
	}
	return n
}

// CheckShape refuses the two mistakes of a Spec's shape that need no
// clock, no grammar and no Limits: not exactly one timing
// (CodeOneTiming), and a utc_offset beside a timing other than cron
// (CodeOffsetWithoutCron). Decode checks it first; code mode checks it
// before the host sees a program's request.
func (s Spec) CheckShape() error {
	switch n := s.Timings(); {
	case n == 0:
		return Refuse(CodeOneTiming, "no timing given; give exactly one of every_seconds, cron, at or in_seconds")
	case n > 1:
		return Refuse(CodeOneTiming, "%d timings given (%s); give exactly one of every_seconds, cron, at or in_seconds", n, strings.Join(s.timingNames(), ", "))
	}
	if s.UTCOffset != "" && s.Cron == "" {
		return Refuse(CodeOffsetWithoutCron, "utc_offset is read only beside cron; drop it, or give the timing as cron")
	}
	return nil
}

func (s Spec) timingNames() []string {
	var names []string
	if s.EverySeconds != 0 {
		names = append(names, "every_seconds")
	}
	if s.Cron != "" {
		names = append(names, "cron")
	}
	if s.At != "" {
		names = append(names, "at")
	}
	if s.InSeconds != 0 {
		names = append(names, "in_seconds")
	}
	return names
}

// Request is one admitted schedule request crossing the Schedules seam.
type Request struct {
	// Strand is the calling strand, from the tool.Call (never from an
	// argument): the schedule's owner.
	Strand string
	// Target is where the schedule's fires land: Strand itself or a
	// strand it spawned (Admits).
	Target string
	// Timing is the decoded timing; in_seconds is a Once.
	Timing Timing
	// MaxFires bounds the fires; 0 means no count (the expiry bounds it).
	// A Once fires at most once whatever it says.
	MaxFires int
	// Expires is when a repeating schedule stops (it never fires at or
	// after it); for a Once, its instant.
	Expires time.Time
	// Wake is what the request asked for; the seam answers what it
	// granted (Created.Wake).
	Wake Wake
	// Message is what each fire tells the target.
	Message string
	// At is the call's clock when the request was decoded.
	At time.Time
}

// Admits reports whether strand may put a schedule on target: target is
// strand itself, or a strand it spawned or they spawned. A sub-agent's
// name is minted "sub:{parent}/..." (agent.MintName), so the name is its
// lineage and the check needs no ledger; a root strand's name holds no
// '/'.
//
// A descendant's name must also be one a strand could have: at most
// maxTargetBytes of printable UTF-8, with no empty segment.
func Admits(strand, target string) bool {
	if strand == "" || target == "" {
		return false
	}
	if target == strand {
		return true
	}
	prefix := tool.SubagentPrefix + strings.TrimPrefix(strand, tool.SubagentPrefix) + "/"
	rest, ok := strings.CutPrefix(target, prefix)
	if !ok || len(target) > maxTargetBytes || !utf8.ValidString(rest) {
		return false
	}
	for seg := range strings.SplitSeq(rest, "/") {
		if seg == "" || strings.IndexFunc(seg, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
			return false
		}
	}
	return true
}

// maxTargetBytes bounds a descendant target's name: far past any a
// sub-agent is minted (a segment is at most a few dozen bytes).
const maxTargetBytes = 4096

// Decode decodes s for the calling strand at the clock now under limits
// l (normalized first). It is total: any Spec that is not an admissible
// request is refused with a *Refusal, each mistake with its own code,
// checked in this order: CheckShape, the timing (its grammar, then its
// bounds), max_fires, expires_after_s, the message, the target.
func Decode(s Spec, strand string, now time.Time, l Limits) (Request, error) {
	l = l.Normalized()
	now = now.UTC()
	if err := s.CheckShape(); err != nil {
		return Request{}, err
	}
	r := Request{Strand: strand, Target: s.Target, MaxFires: s.MaxFires, Wake: Wake(s.Wake), Message: s.Message, At: now}
	var err error
	if r.Timing, err = decodeTiming(s, now, l); err != nil {
		return Request{}, err
	}
	oneShot := r.Timing.Kind == Once
	switch {
	case s.MaxFires < 0 || s.MaxFires > l.MaxFires:
		return Request{}, Refuse(CodeMaxFiresOutOfBounds, "max_fires is %d; give 1 to %d, or omit it to fire until the schedule expires", s.MaxFires, l.MaxFires)
	case oneShot && s.MaxFires > 1:
		return Request{}, Refuse(CodeMaxFiresOutOfBounds, "a one-shot fires once; max_fires is %d", s.MaxFires)
	case oneShot && s.ExpiresAfter != 0:
		return Request{}, Refuse(CodeExpiryOutOfBounds, "a one-shot ends when it fires; drop expires_after_s")
	case s.ExpiresAfter < 0 || s.ExpiresAfter > int64(l.MaxLifetime/time.Second):
		return Request{}, Refuse(CodeExpiryOutOfBounds, "expires_after_s is %d; give 1 to %d, or omit it to expire after %d", s.ExpiresAfter, int64(l.MaxLifetime/time.Second), int64(l.MaxLifetime/time.Second))
	}
	switch {
	case oneShot:
		r.Expires = r.Timing.At
	case s.ExpiresAfter > 0:
		r.Expires = now.Add(time.Duration(s.ExpiresAfter) * time.Second)
	default:
		r.Expires = now.Add(l.MaxLifetime)
	}
	if !oneShot {
		if next := r.Timing.Next(now); next.IsZero() || !next.Before(r.Expires) {
			return Request{}, Refuse(CodeExpiryOutOfBounds, "the schedule would expire before it first fires; give a later expiry or a closer timing")
		}
	}
	if strings.TrimSpace(s.Message) == "" || len(s.Message) > MaxMessageBytes || !utf8.ValidString(s.Message) {
		return Request{}, Refuse(CodeMessageOutOfBounds, "message is %d bytes; say what each fire is for in 1 to %d bytes of UTF-8", len(s.Message), MaxMessageBytes)
	}
	if r.Target == "" {
		r.Target = strand
	}
	if !Admits(strand, r.Target) {
		return Request{}, Refuse(agent.CodeNotDescendant, "target %s is neither you nor a sub-agent you spawned; omit target to schedule yourself", quote(r.Target))
	}
	return r, nil
}

// decodeTiming decodes the one timing s gives.
func decodeTiming(s Spec, now time.Time, l Limits) (Timing, error) {
	maxLife := int64(l.MaxLifetime / time.Second)
	switch {
	case s.EverySeconds != 0:
		if lo := int64(l.MinInterval / time.Second); s.EverySeconds < lo || s.EverySeconds > maxLife {
			return Timing{}, Refuse(CodeIntervalOutOfBounds, "every_seconds is %d; give %d to %d", s.EverySeconds, lo, maxLife)
		}
		return Timing{Kind: Interval, Every: time.Duration(s.EverySeconds) * time.Second}, nil
	case s.Cron != "":
		offset, err := ParseOffset(s.UTCOffset)
		if err != nil {
			return Timing{}, err
		}
		if _, err := ParseCron(s.Cron, offset); err != nil {
			return Timing{}, err
		}
		return Timing{Kind: Cron, Expr: strings.TrimSpace(s.Cron), Offset: offset}, nil
	case s.At != "":
		at, err := time.Parse(time.RFC3339, s.At)
		if err != nil {
			return Timing{}, Refuse(CodeBadAt, "at %s is not an RFC 3339 time such as 2030-01-02T15:04:05Z", quote(s.At))
		}
		return once(at.Truncate(time.Second), now, l)
	default:
		if s.InSeconds < 1 {
			return Timing{}, Refuse(CodeAtInPast, "in_seconds is %d; give at least 1", s.InSeconds)
		}
		if s.InSeconds > maxLife {
			return Timing{}, Refuse(CodeTooFarAhead, "in_seconds is %d; give at most %d", s.InSeconds, maxLife)
		}
		return once(now.Add(time.Duration(s.InSeconds)*time.Second).Truncate(time.Second), now, l)
	}
}

// once admits a one-shot at at.
func once(at, now time.Time, l Limits) (Timing, error) {
	at = at.UTC()
	if !at.After(now) {
		return Timing{}, Refuse(CodeAtInPast, "at %s is not after now (%s); give a later time", at.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	if at.Sub(now) > l.MaxLifetime {
		return Timing{}, Refuse(CodeTooFarAhead, "at %s is more than %s ahead; give a closer time", at.Format(time.RFC3339), l.MaxLifetime)
	}
	return Timing{Kind: Once, At: at}, nil
}

// Check refuses a Request that Decode under l could not have answered:
// what a seam applies before it admits one, since the bounds are its
// own. Times are judged against r.At, the clock Decode read.
func (r Request) Check(l Limits) error {
	l = l.Normalized()
	life := l.MaxLifetime
	switch r.Timing.Kind {
	case Interval:
		if r.Timing.Every < l.MinInterval || r.Timing.Every > life || r.Timing.Every%time.Second != 0 {
			return Refuse(CodeIntervalOutOfBounds, "the interval %s is outside %s to %s", r.Timing.Every, l.MinInterval, life)
		}
	case Cron:
		if _, err := ParseCron(r.Timing.Expr, r.Timing.Offset); err != nil {
			return err
		}
		if r.Timing.Offset%time.Minute != 0 || r.Timing.Offset > 14*time.Hour || r.Timing.Offset < -12*time.Hour {
			return Refuse(CodeBadUTCOffset, "the offset %s is not whole minutes within -12:00 to +14:00", r.Timing.Offset)
		}
	case Once:
		if !r.Timing.At.After(r.At) {
			return Refuse(CodeAtInPast, "the one-shot at %s is not after %s", r.Timing.At.UTC().Format(time.RFC3339), r.At.UTC().Format(time.RFC3339))
		}
		if r.Timing.At.Sub(r.At) > life {
			return Refuse(CodeTooFarAhead, "the one-shot is more than %s ahead", life)
		}
		if r.MaxFires > 1 {
			return Refuse(CodeMaxFiresOutOfBounds, "a one-shot fires once; max_fires is %d", r.MaxFires)
		}
	default:
		return Refuse(CodeOneTiming, "the timing kind %s is not interval, cron or once", quote(string(r.Timing.Kind)))
	}
	switch {
	case r.MaxFires < 0 || r.MaxFires > l.MaxFires:
		return Refuse(CodeMaxFiresOutOfBounds, "max_fires is %d; at most %d", r.MaxFires, l.MaxFires)
	case r.Expires.Sub(r.At) > life || !r.Expires.After(r.At):
		return Refuse(CodeExpiryOutOfBounds, "the schedule expires %s after it was asked; at most %s", r.Expires.Sub(r.At), life)
	case strings.TrimSpace(r.Message) == "" || len(r.Message) > MaxMessageBytes || !utf8.ValidString(r.Message):
		return Refuse(CodeMessageOutOfBounds, "message is %d bytes; 1 to %d bytes of UTF-8", len(r.Message), MaxMessageBytes)
	case !Admits(r.Strand, r.Target):
		return Refuse(agent.CodeNotDescendant, "target %s is neither %s nor a strand it spawned", quote(r.Target), quote(r.Strand))
	}
	return nil
}
