package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/agentloom/loom/tool"
)

// The schedule vocabulary's codes (tool.Code values, declared once in the
// module). Each names a condition a model can act on differently; a
// target that is neither the caller nor a strand it spawned is refused
// with agent.CodeNotDescendant, the module's one code for that.
const (
	// CodeSchedulesUnavailable: the host offers no Schedules seam, or it
	// failed.
	CodeSchedulesUnavailable tool.Code = "schedules_unavailable"
	// CodeOneTiming: a request giving no timing, or more than one, of
	// every_seconds, cron, at and in_seconds.
	CodeOneTiming tool.Code = "one_timing"
	// CodeOffsetWithoutCron: a utc_offset beside a timing other than
	// cron; the offset shifts the clock cron's fields are read against
	// and means nothing to the others.
	CodeOffsetWithoutCron tool.Code = "offset_without_cron"
	// CodeBadUTCOffset: a utc_offset that is not [+-]HH:MM within
	// -12:00 to +14:00.
	CodeBadUTCOffset tool.Code = "bad_utc_offset"
	// CodeBadCron: a cron expression outside the five-field grammar, or
	// one that never fires.
	CodeBadCron tool.Code = "bad_cron"
	// CodeBadAt: an at that is not an RFC 3339 time.
	CodeBadAt tool.Code = "bad_at"
	// CodeAtInPast: a one-shot (at, or in_seconds below 1) that is not
	// after the call's clock.
	CodeAtInPast tool.Code = "at_in_past"
	// CodeTooFarAhead: a one-shot further ahead than Limits.MaxLifetime.
	CodeTooFarAhead tool.Code = "too_far_ahead"
	// CodeIntervalOutOfBounds: every_seconds below Limits.MinInterval or
	// above Limits.MaxLifetime.
	CodeIntervalOutOfBounds tool.Code = "interval_out_of_bounds"
	// CodeMaxFiresOutOfBounds: max_fires negative or above
	// Limits.MaxFires, or above 1 for a one-shot.
	CodeMaxFiresOutOfBounds tool.Code = "max_fires_out_of_bounds"
	// CodeExpiryOutOfBounds: expires_after_s negative or above
	// Limits.MaxLifetime, or given for a one-shot.
	CodeExpiryOutOfBounds tool.Code = "expiry_out_of_bounds"
	// CodeMessageOutOfBounds: a message that is blank, longer than
	// MaxMessageBytes, or not UTF-8.
	CodeMessageOutOfBounds tool.Code = "message_out_of_bounds"
	// CodeScheduleLimit: the target already holds Limits.MaxLive live
	// schedules; cancel one first.
	CodeScheduleLimit tool.Code = "schedule_limit"
	// CodeUnknownSchedule: a cancel naming no live schedule the caller
	// may see (one it or a strand it spawned created).
	CodeUnknownSchedule tool.Code = "unknown_schedule"
)

// Refusal is every failure the schedule vocabulary reports. It crosses
// the Schedules seam as an error and reaches the model as an in-band
// outcome whose Code is the refusal's.
type Refusal struct {
	// Code is stable; switch on it. It is one of this package's codes,
	// agent.CodeNotDescendant, or tool.CodeCancelled.
	Code tool.Code
	// Reason is one sentence a model can act on.
	Reason string
	// Err is the underlying cause, if any.
	Err error
}

// Error returns "code: reason".
func (r *Refusal) Error() string { return string(r.Code) + ": " + r.Reason }

// Unwrap returns the underlying cause.
func (r *Refusal) Unwrap() error { return r.Err }

// ErrorCode returns r.Code as a string, so tool.CodeOf reads it.
func (r *Refusal) ErrorCode() string { return string(r.Code) }

// Refuse builds a *Refusal with a formatted reason. A Schedules
// implementation outside this package answers with it.
func Refuse(code tool.Code, format string, args ...any) error {
	return &Refusal{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// RefusalDetails is the Details of an outcome reporting a Refusal; the
// code is the outcome's Code, never repeated here.
type RefusalDetails struct {
	// Reason is the Refusal's Reason.
	Reason string `json:"reason"`
}

// ReasonOf returns the sentence of err's *Refusal without the code, or
// err's text when it holds none: what code mode maps onto its
// capability answer.
func ReasonOf(err error) string {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Reason
	}
	return err.Error()
}

// refusalOutcome renders err as an in-band error outcome of the tool
// named name. An error holding no code is the host failing, answered
// CodeSchedulesUnavailable.
func refusalOutcome(name string, err error) tool.Outcome {
	var r *Refusal
	if !errors.As(err, &r) {
		code := tool.Code(tool.CodeOf(err))
		if code == "" {
			code = CodeSchedulesUnavailable
		}
		r = &Refusal{Code: code, Reason: clip("the host failed: "+err.Error(), maxReasonBytes), Err: err}
	}
	return tool.Fail(r.Code, fmt.Sprintf("%s refused (%s): %s", name, r.Code, clip(r.Reason, maxReasonBytes))).
		WithDetails(RefusalDetails{Reason: clip(r.Reason, maxReasonBytes)})
}

// maxReasonBytes bounds a refusal's sentence as the tools render it.
const maxReasonBytes = 1000

// quote renders s Go-quoted, cut to tool.MaxQuotedBytes, so a refusal
// never echoes a long value whole.
func quote(s string) string {
	if len(s) <= tool.MaxQuotedBytes {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(clip(s, tool.MaxQuotedBytes)), len(s))
}

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
