package agent

import (
	"encoding/json"
	"strings"
	"time"
)

// Caller is who is asking: the strand making the call and the durable
// coordinates of the call itself. An Agency judges every request against
// it. It is built by the host from the call's own coordinates (see
// CallerOf); no field ever comes from model arguments, so a model that
// names another strand in its arguments does not become it.
type Caller struct {
	// Strand is the calling agent's durable name.
	Strand string
	// OpID names the calling run; StepID the batch of tool calls in it;
	// SourceIndex the call's position in that batch.
	OpID        string
	StepID      string
	SourceIndex int
	// Minter separates several spawns made under one call site (a
	// code-mode program's ordinals). The zero value is a tool call.
	Minter Minter
}

// SpawnRequest is what a parent asks of a new child.
type SpawnRequest struct {
	// Purpose says in a few words what the child is for. It becomes the
	// decorative slug of the child's name and is shown in the roster; it
	// never discriminates between children.
	Purpose string
	// Prompt is the child's first message.
	Prompt string
	// Tools, when non-nil, replaces the default child tool set. The
	// Agency adds the communication floor (FloorTools) back, limited to
	// what the parent holds, and never adds agent_spawn.
	Tools []string
	// Model is a catalogue name from ModelNames; "" keeps host routing.
	Model string
	// Result, when non-nil, is the contract the child's result note must
	// meet; a Wait on the child reports the verdict.
	Result *ResultSchema
	// Deadline bounds the child's first run; 0 takes the Agency's
	// default. An Agency clamps it to its maximum.
	Deadline time.Duration
	// Detach keeps the child running after its parent's run ends.
	Detach bool
}

// Check refuses a request breaking a bound every Agency shares. It
// refuses an empty or oversized purpose (200 bytes) or prompt (64 KiB),
// more than 64 tools, a tool name that is empty or longer than 64 bytes,
// and a negative deadline. The tools check it before asking the Agency;
// an Agency checks it again.
func (r SpawnRequest) Check() error {
	switch {
	case strings.TrimSpace(r.Purpose) == "":
		return refuse(CodeInvalidRequest, "purpose is empty; say in a few words what the child is for")
	case len(r.Purpose) > maxPurposeBytes:
		return refuse(CodeInvalidRequest, "purpose is %d bytes, more than %d", len(r.Purpose), maxPurposeBytes)
	case strings.TrimSpace(r.Prompt) == "":
		return refuse(CodeInvalidRequest, "prompt is empty; it is the child's first message")
	case len(r.Prompt) > maxPromptBytes:
		return refuse(CodeInvalidRequest, "prompt is %d bytes, more than %d", len(r.Prompt), maxPromptBytes)
	case len(r.Tools) > maxSpawnTools:
		return refuse(CodeInvalidRequest, "%d tools named, more than %d", len(r.Tools), maxSpawnTools)
	case r.Deadline < 0:
		return refuse(CodeInvalidRequest, "a deadline must not be negative")
	}
	for _, t := range r.Tools {
		if t == "" || len(t) > maxToolNameBytes {
			return refuse(CodeInvalidRequest, "tool name %s must be 1 to %d bytes", quote(t), maxToolNameBytes)
		}
	}
	return nil
}

// Spawned is the receipt of a spawn.
type Spawned struct {
	// Handle names the child's first run; wait on it.
	Handle Handle
	// Tools is the child's real tool set, floor included.
	Tools []string
	// Model is the model the child was configured with ("" = host routing).
	Model string
	// Deadline is when the first run is aborted if still running.
	Deadline time.Time
	// Budget is the first run's budget as the Agency granted it: the
	// request's Deadline, the Agency's default when none was asked, or its
	// maximum when more was asked. The tools compare it with the request
	// to announce a clamp, so an Agency must report what it applied.
	Budget time.Duration
	// Reconciled is true when this call site had already minted the
	// child (a replay): nothing new was started.
	Reconciled bool
	// Purpose is the purpose the child was started for, trimmed; on a
	// reconciled spawn it is the first spawn's, whatever this one asked.
	Purpose string
}

// SendRequest is a message from a parent to one of its descendants.
type SendRequest struct {
	// To is the strand addressed (a handle's Strand).
	To string
	// Message is the text delivered.
	Message string
	// Budget bounds the run a send to an idle strand starts; 0 takes the
	// Agency's default. Ignored when the strand is running.
	Budget time.Duration
}

// Check refuses an empty message or one longer than 64 KiB, and a
// negative budget.
func (r SendRequest) Check() error {
	switch {
	case strings.TrimSpace(r.Message) == "":
		return refuse(CodeInvalidRequest, "message is empty")
	case len(r.Message) > maxPromptBytes:
		return refuse(CodeInvalidRequest, "message is %d bytes, more than %d", len(r.Message), maxPromptBytes)
	case r.Budget < 0:
		return refuse(CodeInvalidRequest, "a budget must not be negative")
	}
	return nil
}

// DeliveryKind says what a send did.
type DeliveryKind string

const (
	// Delivered: the strand was running; the message waits in its inbox
	// for its next turn, and no new operation began.
	Delivered DeliveryKind = "delivered"
	// Started: the strand was idle; a new run (a continuation) began with
	// the message as its prompt, under a new handle. Earlier handles stay
	// historical: they keep reporting their own runs.
	Started DeliveryKind = "started"
)

// Delivery is the receipt of a send.
type Delivery struct {
	// Kind says whether the message reached a running run or started a
	// new one.
	Kind DeliveryKind
	// Handle is the run the message reached: the running one for
	// Delivered, the new one for Started.
	Handle Handle
	// Deadline is the reached run's deadline.
	Deadline time.Time
	// Budget is the new run's budget as the Agency granted it (see
	// Spawned.Budget) when Kind is Started; zero when the message reached
	// a running run, which keeps its own deadline.
	Budget time.Duration
}

// State is where one run is in its life.
type State string

const (
	// Running: not finished yet.
	Running State = "running"
	// Completed: the child gave its final answer.
	Completed State = "completed"
	// Failed: the host's runner reported an error.
	Failed State = "failed"
	// Aborted: the run was stopped; AbortReason says why.
	Aborted State = "aborted"
)

// AbortReason records why a run was aborted. The wire state stays
// "aborted"; the reason is reported beside it.
type AbortReason string

const (
	// AbortBudgetExpired: the run passed its deadline.
	AbortBudgetExpired AbortReason = "budget_expired"
	// AbortParentFinished: the parent's run ended and the child was not
	// detached.
	AbortParentFinished AbortReason = "parent_finished"
	// AbortClosed: the Agency was closed (the session ended).
	AbortClosed AbortReason = "agency_closed"
	// AbortCancelled: the host cancelled the run some other way.
	AbortCancelled AbortReason = "cancelled"
)

// Waited is one handle's answer to a Wait. A pending answer is a success:
// waiting again is the remedy.
type Waited struct {
	Handle Handle
	// Ready is false while the run is still going (State == Running).
	Ready bool
	State State
	// Report is the child's final text (Completed) or what went wrong
	// (Failed, Aborted).
	Report string
	// AbortReason is set when State == Aborted.
	AbortReason AbortReason
	// Result is the verdict on the result contract; meaningful when Ready.
	Result TerminalResult
	// Deadline is the run's deadline.
	Deadline time.Time
}

// Relation says how a peer relates to the caller.
type Relation string

const (
	// Child: spawned by the caller.
	Child Relation = "child"
	// Descendant: spawned by one of the caller's descendants.
	Descendant Relation = "descendant"
)

// Peer is one roster line: a descendant of the caller.
type Peer struct {
	// Strand is the descendant's durable name.
	Strand string
	// Relation says whether the caller spawned it.
	Relation Relation
	// Parent is the strand that spawned it.
	Parent string
	// Purpose is the purpose it was first spawned for.
	Purpose string
	// Depth is how deep it nests below its root (a root's child is 1).
	Depth int
	// Latest names the strand's most recent run; State, AbortReason and
	// Deadline are that run's.
	Latest Handle
	State  State
	// AbortReason is set when State is Aborted.
	AbortReason AbortReason
	// Model is the model it was configured with ("" = host routing).
	Model    string
	Deadline time.Time
	// Runs counts the strand's runs (1 + continuations).
	Runs int
}

// Note is one blackboard entry.
type Note struct {
	// Key is the full key, "agent/{strand}/{relative key}".
	Key string
	// Value is the note's JSON value, at most MaxNoteBytes.
	Value json.RawMessage
}

// NotesPage is the answer to a Notes read: matching entries in key order,
// at most MaxNotesListed of them.
type NotesPage struct {
	Notes []Note
	// Truncated is true when more entries matched than were returned.
	Truncated bool
}
