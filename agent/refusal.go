package agent

import (
	"errors"
	"fmt"
)

// Code is the stable name of a refusal. Programs switch on it; the wording
// of a Refusal's Reason may change, a Code never does.
type Code string

// The refusal codes. Each names a distinct condition a model can act on.
const (
	// CodeMalformedHandle: a handle that does not parse as
	// {strand}#{operation}.
	CodeMalformedHandle Code = "malformed_handle"
	// CodeUnknownHandle: a well-formed handle naming no strand or no
	// operation this Agency knows.
	CodeUnknownHandle Code = "unknown_handle"
	// CodeNotDescendant: a handle naming a strand that is not a
	// descendant of the caller. Only descendants may be addressed.
	CodeNotDescendant Code = "not_descendant"
	// CodeDepthCap: a spawn that would nest deeper than Limits.DepthCap.
	CodeDepthCap Code = "depth_cap"
	// CodeFanOut: a spawn while the parent already has Limits.FanOut
	// children running.
	CodeFanOut Code = "fan_out"
	// CodeSessionStrands: a spawn or a continuation while
	// Limits.SessionStrands strands are already running.
	CodeSessionStrands Code = "session_strands"
	// CodeInvalidRequest: a request whose fields break a stated bound
	// (empty prompt, purpose too long, too many handles, ...).
	CodeInvalidRequest Code = "invalid_request"
	// CodeMalformedSchema: a result schema outside the enforceable subset.
	CodeMalformedSchema Code = "malformed_schema"
	// CodeUnknownModel: a spawn naming a model the Agency does not offer.
	CodeUnknownModel Code = "unknown_model"
	// CodeToolNotHeld: a tool the caller's strand does not hold (asked by
	// Holds, or named in a spawn's tools list).
	CodeToolNotHeld Code = "tool_not_held"
	// CodeUnknownTool: a spawn's tools list naming a tool the host's
	// registry does not offer (see Reference.Govern).
	CodeUnknownTool Code = "unknown_tool"
	// CodeBadNoteKey: a note key outside the key grammar.
	CodeBadNoteKey Code = "bad_note_key"
	// CodeNoteTooLarge: a note value larger than MaxNoteBytes, or not JSON.
	CodeNoteTooLarge Code = "note_too_large"
	// CodeNoteExists: a write to a key already holding a different value;
	// notes are write-once.
	CodeNoteExists Code = "note_exists"
	// CodeNoteLimit: a strand that already wrote MaxNotesPerStrand notes.
	CodeNoteLimit Code = "note_limit"
	// CodeWaitTooLong: a wait longer than the published MaxWaitMs, or
	// negative.
	CodeWaitTooLong Code = "wait_too_long"
	// CodeTodoConflict: the todo cell kept changing under the caller for
	// MaxTodoRetries attempts.
	CodeTodoConflict Code = "todo_conflict"
	// CodeTodoUnknownTask: a task name matching no task.
	CodeTodoUnknownTask Code = "todo_unknown_task"
	// CodeTodoAmbiguousTask: a task name loosely matching several tasks.
	CodeTodoAmbiguousTask Code = "todo_ambiguous_task"
	// CodeTodoInvalid: a todo op whose arguments or result break the
	// board's bounds or rules.
	CodeTodoInvalid Code = "todo_invalid"
	// CodeAgencyClosed: the Agency was closed; nothing new starts.
	CodeAgencyClosed Code = "agency_closed"
	// CodeAgencyUnavailable: the host offers no Agency, or it failed.
	CodeAgencyUnavailable Code = "agency_unavailable"
)

// Refusal is every failure the agent vocabulary reports. It crosses the
// Agency seam as an error and reaches the model as an in-band outcome.
type Refusal struct {
	// Code is stable; switch on it.
	Code Code
	// Reason is one sentence a model can act on.
	Reason string
	// Err is the underlying cause, if any.
	Err error
}

// Error returns "code: reason".
func (r *Refusal) Error() string { return string(r.Code) + ": " + r.Reason }

// Unwrap returns the underlying cause.
func (r *Refusal) Unwrap() error { return r.Err }

// refuse builds a Refusal with a formatted reason.
func refuse(code Code, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// CodeOf returns the Code of the first Refusal in err's chain, or
// CodeAgencyUnavailable for any other non-nil error (a host Agency that
// failed without saying why), or "" for nil.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var r *Refusal
	if errors.As(err, &r) {
		return r.Code
	}
	return CodeAgencyUnavailable
}
