package job

import (
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// The refusal codes of a job plane: an Error's Code. A model reads them
// in a tool result and a code-mode program in its error: one contract,
// fixed by this package.
const (
	// CodeUnknownJob: no job of the calling strand has the handle (never
	// minted, pruned past Options.MaxEnded, or another strand's).
	CodeUnknownJob tool.Code = "unknown_job"
	// CodeJobCeilingReached: the strand already has its plane's maximum
	// of live jobs (Options.MaxLive); wait for one to end or kill one.
	CodeJobCeilingReached tool.Code = "job_ceiling_reached"
	// CodeJobClearanceRefused: the broker refused to clear the job's
	// command; Error.Denial is the structured refusal an escalation reads.
	CodeJobClearanceRefused tool.Code = "job_clearance_refused"
	// CodeNoJobPlane: this host runs no job plane (NoPlane, or a tool
	// built with a nil Jobs).
	CodeNoJobPlane tool.Code = "no_job_plane"
	// CodeJobPlaneUnavailable: the plane cannot serve the request now. It
	// is closed or has no broker, or the call ended before the job
	// started, or the job's standard input is closed, still being set up,
	// or not read within the plane's send bound.
	CodeJobPlaneUnavailable tool.Code = "job_plane_unavailable"
)

// The codes of what a job tool refuses before asking the plane.
const (
	// CodeInvalidCursor: a cursor token that could not have been minted
	// for the job (malformed, edited, another job's, or past what the job
	// wrote); a CursorError's Code. It is never rewound.
	CodeInvalidCursor tool.Code = "invalid_cursor"
	// CodeLifetimeRefused: a lifetime other than LifetimeDefault and
	// LifetimeSession, or LifetimeSession asked by a sub-agent; a
	// LifetimeError's Code. Nothing was started and no approval raised.
	CodeLifetimeRefused tool.Code = "lifetime_refused"
	// CodeMalformedJobURI: an fs_read path under "job://" that names
	// no job (something follows the handle).
	CodeMalformedJobURI tool.Code = "malformed_job_uri"
)

// The codes of how a bash command ended, beside the broker's denial
// codes and the path and argument codes of package tool.
const (
	// CodeNonzeroExit: the command ran and exited non-zero or was killed
	// by a signal.
	CodeNonzeroExit tool.Code = "nonzero_exit"
	// CodeTimeout: the command outlived its timeout_ms and its whole tree
	// was killed.
	CodeTimeout tool.Code = "timeout"
	// CodeExecFailed: the command could not be started in its jail.
	CodeExecFailed tool.Code = "exec_failed"
	// CodeOutputLimited: the output bound (tool.MaxCommandOutputBytes, or
	// the call's lower Call.MaxOutputBytes) ended the command.
	CodeOutputLimited tool.Code = "output_limited"
)

// Error is a job plane's refusal.
type Error struct {
	// Code is one of the five plane refusal codes: CodeUnknownJob,
	// CodeJobCeilingReached, CodeJobClearanceRefused, CodeNoJobPlane or
	// CodeJobPlaneUnavailable.
	Code tool.Code
	// Reason says why, for the model.
	Reason string
	// Denial is the broker's refusal for CodeJobClearanceRefused.
	Denial *sandbox.Denial
}

// Error renders "job: <code>: <reason>".
func (e *Error) Error() string { return "job: " + string(e.Code) + ": " + e.Reason }

// ErrorCode returns e.Code as a string, so tool.CodeOf reads it (see
// tool.CodedError).
func (e *Error) ErrorCode() string { return string(e.Code) }

// Unwrap returns the broker denial, if any.
func (e *Error) Unwrap() error {
	if e.Denial == nil {
		return nil
	}
	return e.Denial
}

// Is matches any *Error with the same Code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// refusalCode is the code a tool reports err with: tool.CodeOf's, else
// CodeJobPlaneUnavailable (a plane that failed without saying why).
func refusalCode(err error) tool.Code {
	if code := tool.CodeOf(err); code != "" {
		return code
	}
	return CodeJobPlaneUnavailable
}
