package agent

import (
	"fmt"

	"github.com/agentloom/loom/tool"
)

// The agent vocabulary's refusal codes (tool.Code values, declared once in
// the module). Each names a distinct condition a model can act on;
// programs switch on them, and the wording of a Refusal's Reason may
// change while a code never does. A strand that does not hold a tool is
// refused with tool.CodeToolNotHeld, by the governed registry and by
// Holds and Spawn alike.
const (
	// CodeMalformedHandle: a handle that does not parse as
	// {strand}#{operation}.
	CodeMalformedHandle tool.Code = "malformed_handle"
	// CodeUnknownHandle: a well-formed handle naming no strand or no
	// operation this Agency knows.
	CodeUnknownHandle tool.Code = "unknown_handle"
	// CodeNotDescendant: a handle naming a strand that is not a
	// descendant of the caller. Only descendants may be addressed.
	CodeNotDescendant tool.Code = "not_descendant"
	// CodeDepthCap: a spawn that would nest deeper than Options.DepthCap.
	CodeDepthCap tool.Code = "depth_cap"
	// CodeFanOut: a spawn while the parent already has Options.FanOut
	// children running.
	CodeFanOut tool.Code = "fan_out"
	// CodeSessionStrands: a spawn or a continuation while
	// Options.SessionStrands strands are already running.
	CodeSessionStrands tool.Code = "session_strands"
	// CodeInvalidRequest: a request crossing the Agency seam whose fields
	// break a bound of the agent vocabulary (empty prompt, purpose too
	// long, too many handles, a negative deadline, a full inbox, ...). It
	// also refuses a calling root strand whose name could be mistaken for
	// a minted one. Arguments that do not fit a tool's schema are refused
	// earlier, by the registry, with tool.CodeInvalidArguments.
	CodeInvalidRequest tool.Code = "invalid_request"
	// CodeMalformedSchema: a result schema outside the enforceable subset.
	CodeMalformedSchema tool.Code = "malformed_schema"
	// CodeUnknownModel: a spawn naming a model the Agency does not offer.
	CodeUnknownModel tool.Code = "unknown_model"
	// CodeUnknownSpawnTool: a spawn's tools list naming a tool the host's
	// registry does not offer (see Reference.Govern). The spawn itself is
	// a registered tool; tool.CodeUnknownTool is the registry's refusal
	// of a call to an unregistered one.
	CodeUnknownSpawnTool tool.Code = "unknown_spawn_tool"
	// CodeBadNoteKey: a note key outside the key grammar.
	CodeBadNoteKey tool.Code = "bad_note_key"
	// CodeNoteTooLarge: a note value larger than MaxNoteBytes, or not JSON.
	CodeNoteTooLarge tool.Code = "note_too_large"
	// CodeNoteExists: a write to a key already holding a different value;
	// notes are write-once.
	CodeNoteExists tool.Code = "note_exists"
	// CodeNoteLimit: a strand that already wrote the most notes the
	// Agency allows (256 in the reference Agency).
	CodeNoteLimit tool.Code = "note_limit"
	// CodeWaitTooLong: a wait longer than the published MaxWaitMs, or
	// negative.
	CodeWaitTooLong tool.Code = "wait_too_long"
	// CodeTodoConflict: the todo cell kept changing under the caller for
	// every attempt the Agency allows (8 in the reference Agency).
	CodeTodoConflict tool.Code = "todo_conflict"
	// CodeAgencyClosed: the Agency was closed; nothing new starts.
	CodeAgencyClosed tool.Code = "agency_closed"
	// CodeAgencyUnavailable: the host offers no Agency, or it failed.
	CodeAgencyUnavailable tool.Code = "agency_unavailable"
)

// Refusal is every failure the agent vocabulary reports. It crosses the
// Agency seam as an error and reaches the model as an in-band outcome.
type Refusal struct {
	// Code is stable; switch on it. It is one of this package's codes,
	// tool.CodeToolNotHeld, or tool.CodeCancelled (the call's context
	// ended).
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

// ErrorCode returns r.Code as a string, so tool.CodeOf reads it (see
// tool.CodedError).
func (r *Refusal) ErrorCode() string { return string(r.Code) }

// refuse builds a Refusal with a formatted reason.
func refuse(code tool.Code, format string, args ...any) error {
	return &Refusal{Code: code, Reason: fmt.Sprintf(format, args...)}
}
