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
	// CodeNoteTooLarge: a note value larger than its bound (MaxNoteBytes
	// from agent_note or for a result note, MaxProgramNoteBytes from a
	// program), or not JSON.
	CodeNoteTooLarge tool.Code = "note_too_large"
	// CodeNoteNotFound: a note:// read (ReadNoteView) of a key no note
	// is written under.
	CodeNoteNotFound tool.Code = "note_not_found"
	// CodeNoteExists: a write to a key already holding a different value;
	// notes are write-once.
	CodeNoteExists tool.Code = "note_exists"
	// CodeNoteLimit: a strand that already wrote the most notes the
	// Agency allows (256, or 16 MiB in all, in the reference Agency).
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

// The codes of advise, context_remaining and propose (tool.Code values,
// declared once in the module).
const (
	// CodeAdviceUnavailable: the host offers no Advice seam, or it failed
	// or answered an acknowledgement outside the vocabulary.
	CodeAdviceUnavailable tool.Code = "advice_unavailable"
	// CodeUnknownVerdict: a verdict that is not quiet, nudge or block.
	CodeUnknownVerdict tool.Code = "unknown_verdict"
	// CodeAdviceWithoutText: a nudge or a block with nothing to say.
	CodeAdviceWithoutText tool.Code = "advice_without_text"
	// CodeQuietWithText: a quiet verdict carrying text; quiet says
	// nothing.
	CodeQuietWithText tool.Code = "quiet_with_text"
	// CodeAdviceTooLong: advice text longer than MaxAdviceBytes, or not
	// UTF-8.
	CodeAdviceTooLong tool.Code = "advice_too_long"
	// CodeContextUnavailable: the host offers no Gauge, or it failed or
	// answered a report that breaks ContextReport's rules.
	CodeContextUnavailable tool.Code = "context_unavailable"
	// CodeProposalsUnavailable: the host offers no Proposals seam, or it
	// failed.
	CodeProposalsUnavailable tool.Code = "proposals_unavailable"
	// CodeProposalOutOfBounds: a proposal whose content is empty or
	// longer than MaxProposalBytes, whose reason is blank or longer than
	// MaxProposalReasonBytes, or either not UTF-8.
	CodeProposalOutOfBounds tool.Code = "proposal_out_of_bounds"
	// CodeNoConfiguration: a proposal to the configuration of a host that
	// names none.
	CodeNoConfiguration tool.Code = "no_configuration"
	// CodeProposalQueueFull: MaxProposalsQueued proposals already wait
	// for review.
	CodeProposalQueueFull tool.Code = "proposal_queue_full"
	// CodeProposalUnchanged: a proposal whose content is what the file
	// already holds.
	CodeProposalUnchanged tool.Code = "proposal_unchanged"
	// CodeProposalInvalid: the host's check of the proposed content
	// against its file refused it.
	CodeProposalInvalid tool.Code = "proposal_invalid"
	// CodeUnknownProposal: a review naming no pending proposal.
	CodeUnknownProposal tool.Code = "unknown_proposal"
	// CodeProposalStale: an accept of a proposal whose file changed
	// since it was proposed; propose again over the new file.
	CodeProposalStale tool.Code = "proposal_stale"
)
