package stored

import (
	"strconv"
	"strings"

	"github.com/agentloom/loom/schedule"
	"github.com/agentloom/loom/tool"
)

// Unknown refuses id schedule.CodeUnknownSchedule: it names no live
// schedule the caller may cancel.
func Unknown(id string) error {
	return schedule.Refuse(schedule.CodeUnknownSchedule, "no live schedule %s that you or a sub-agent of yours created; schedule_list shows them", strconv.Quote(clip(id)))
}

// TargetFull refuses schedule.CodeScheduleLimit a create on target,
// which holds live schedules already, the most allowed.
func TargetFull(target string, live int) error {
	return schedule.Refuse(schedule.CodeScheduleLimit, "%s already holds %d live schedules, the most allowed; cancel one first", strconv.Quote(clip(target)), live)
}

// OwnerFull refuses schedule.CodeScheduleLimit a create by a strand
// that made live schedules already, the most allowed.
func OwnerFull(made int) error {
	return schedule.Refuse(schedule.CodeScheduleLimit, "you already created %d live schedules, the most allowed; cancel one first", made)
}

// Closed refuses a call on a closed scheduler
// schedule.CodeSchedulesUnavailable.
func Closed() error {
	return schedule.Refuse(schedule.CodeSchedulesUnavailable, "the scheduler is closed")
}

// Cancelled refuses tool.CodeCancelled a call whose context ended
// first; err is what the database answered.
func Cancelled(err error) error {
	return &schedule.Refusal{Code: tool.CodeCancelled, Reason: "the call's context ended before the schedules answered", Err: err}
}

// Unavailable refuses schedule.CodeSchedulesUnavailable a call the
// database failed: what happened, then err's text clipped.
func Unavailable(what string, err error) error {
	return &schedule.Refusal{Code: schedule.CodeSchedulesUnavailable, Reason: what + ": " + clip(err.Error()), Err: err}
}

// clip answers s, or when it is longer than tool.MaxQuotedBytes its
// first tool.MaxQuotedBytes bytes as valid UTF-8 and "…".
func clip(s string) string {
	if len(s) <= tool.MaxQuotedBytes {
		return s
	}
	return strings.ToValidUTF8(s[:tool.MaxQuotedBytes], "") + "…"
}
