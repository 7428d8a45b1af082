package job

import (
	"context"
	"time"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// Jobs is the seam a background job plane fills: a command started now
// and watched, fed and stopped later, possibly by other calls. Plane is
// the reference implementation; a host may bring its own. The tools that
// use it (bash, job_poll, job_kill, job_send and the job:// scheme) are
// handed it at construction.
//
// Identity is always the Owner the host derived from the Call (OwnerOf),
// never a model argument: an implementation answers a job that another
// strand started as if it did not exist (CodeUnknownJob). Every failure
// is an error a caller inspects with errors.As or tool.CodeOf: *Error
// (one of the five plane refusal codes), *CursorError, or
// *LifetimeError. Methods must be safe for concurrent use and must not
// panic.
type Jobs interface {
	// Start clears spec and starts it as a job the owner is notified
	// about when it ends: what bash's background mode calls.
	Start(ctx context.Context, o Owner, spec Spec) (Started, error)
	// Attend clears spec and starts it as a job the calling tool watches;
	// the owner is notified about nothing until Release answers Released.
	// It is what bash's auto mode calls.
	Attend(ctx context.Context, o Owner, spec Spec) (Started, error)
	// Poll answers what arrived after cur on both streams and the job's
	// state, waiting up to wait (clamped to [0, MaxWait]; tools refuse a
	// negative wait in band before asking) for something new or for the
	// job to end. A poll of a live job that saw nothing new is a success,
	// not an error. A cursor that could not have been minted for the job
	// is refused with a *CursorError, never rewound.
	Poll(ctx context.Context, o Owner, id ID, cur Cursors, wait time.Duration) (Polled, error)
	// Release hands an attended job to its owner. The answer is
	// serialized against the job's own settlement, so exactly one of the
	// watcher (AlreadyEnded) and the owner's notice (Released) reports
	// the end.
	Release(ctx context.Context, o Owner, id ID) (Releasing, error)
	// Kill ends the job's whole process tree and answers its final row.
	// Killing a job that already ended answers that end.
	Kill(ctx context.Context, o Owner, id ID) (Row, error)
	// Send writes data to the job's standard input and, with CloseStdin,
	// closes it afterwards.
	Send(ctx context.Context, o Owner, id ID, data []byte, end StdinEnd) (Sent, error)
	// List answers the owner's strand's jobs, oldest first.
	List(ctx context.Context, o Owner) (Listed, error)
	// MaxWait is the longest Poll waits: the clamp a tool states in its
	// description and applies, so the promise and the behaviour are one
	// number. 0 means Poll never waits.
	MaxWait() time.Duration
}

// ID names one job. The plane mints it; a model sees it as an opaque
// handle.
type ID string

// Owner is who asks: the calling strand (whose jobs it may see) and the
// operation and step it calls from. A job's budget is pooled in the
// sibling step {OpID, "job/<id>"}, so the calling step's teardown does not
// reap it while an abort of the whole operation does.
type Owner struct {
	// Strand is the calling strand (tool.Call.Strand).
	Strand string
	// OpID and StepID are the calling operation and step
	// (tool.Call.OpID and StepID).
	OpID   string
	StepID string
}

// OwnerOf returns the caller identity of c: its strand, operation and
// step, never anything a model wrote.
func OwnerOf(c *tool.Call) Owner {
	return Owner{Strand: c.Strand, OpID: c.OpID, StepID: c.StepID}
}

// IdleWake says whether a running job may wake its idle owner: bash's
// heartbeat argument, without a bare boolean.
type IdleWake int

const (
	// QuietUntilDone: the job says nothing until it ends.
	QuietUntilDone IdleWake = iota
	// WakeWhenIdle: the plane sends the owner a heartbeat notice at its
	// interval while the job runs.
	WakeWhenIdle
)

// StdinEnd says whether a send closes the job's standard input: job_send's
// eof argument, without a bare boolean.
type StdinEnd int

const (
	// KeepStdinOpen leaves standard input open for later sends.
	KeepStdinOpen StdinEnd = iota
	// CloseStdin closes standard input after the data; the job reads
	// end-of-file.
	CloseStdin
)

// Spec is one command to run as a job. The caller (bash) has already
// composed Policy from the base policy, its requirements and the call's
// grants; the plane clears it through the broker under the job's own step.
type Spec struct {
	// Command is what the model asked for, shown in listings.
	Command string
	// Argv is what runs (bash: the shell and the command).
	Argv []string
	// Dir is the absolute working directory.
	Dir string
	// Env is offered to the command; Policy.EnvAllow filters it.
	Env map[string]string
	// Policy is the composed policy the job runs under.
	Policy sandbox.Policy
	// Lifetime chooses a finite wall (default) or none (session).
	Lifetime Lifetime
	// Wall is the finite lifetime's wall; 0 means the plane's default.
	// The plane clamps it to its maximum. Ignored for LifetimeSession.
	Wall time.Duration
	// Wake asks for idle heartbeats.
	Wake IdleWake
}

// Started is a job that cleared and runs.
type Started struct {
	// ID is the job's handle.
	ID ID
	// Deadline is when the plane kills the job; zero for LifetimeSession.
	Deadline time.Time
	// Enforcement is how the broker confined it.
	Enforcement sandbox.Enforcement
}

// State is a job's place in its lifecycle. Starting and Running are
// live; the other four are terminal and final.
type State string

const (
	// Starting: admitted, its clearance in progress.
	Starting State = "starting"
	// Running: cleared and running.
	Running State = "running"
	// Exited: ended by itself; Exit says how.
	Exited State = "exited"
	// Killed: the harness ended it; Cause says why, Exit how.
	Killed State = "killed"
	// Lost: the plane can no longer vouch for it; Lost says why.
	Lost State = "lost"
	// Refused: admitted but never ran; Refusal says why.
	Refused State = "refused"
)

// Pending reports whether s is live (Starting or Running). It alone
// decides whether a poll is pending, in the text and in the details.
func (s State) Pending() bool { return s == Starting || s == Running }

// StopCause says why the harness killed a job.
type StopCause string

const (
	// StopOwner: job_kill (or the host) asked.
	StopOwner StopCause = "owner"
	// StopWall: the job reached its wall deadline.
	StopWall StopCause = "wall"
	// StopAbort: its operation (or the job's own step) was aborted.
	StopAbort StopCause = "abort"
	// StopShutdown: the plane closed (the session ended).
	StopShutdown StopCause = "shutdown"
	// StopOutputBound: the broker stopped the job because its output
	// reached the plane's bound (Options.MaxOutputBytes): the row is
	// Killed, its Exit says OutputLimited.
	StopOutputBound StopCause = "output_bound"
)

// LostReason says why a plane can no longer vouch for a job.
type LostReason string

const (
	// LostUnsettled: the plane closed and the job had not settled within
	// its drain bound after the kill.
	LostUnsettled LostReason = "unsettled"
)

// Streamed is what one stream returned to a poll.
type Streamed struct {
	// Text is what arrived after the cursor (possibly bytes that are not
	// UTF-8, passed through as they are).
	Text string `json:"text"`
	// Dropped counts bytes between the cursor and Text that fell out of
	// the plane's window unseen.
	Dropped int64 `json:"dropped,omitempty"`
	// Received is the stream's length so far.
	Received int64 `json:"received"`
}

// Spill is where a terminal job's whole output went when it outgrew the
// plane's window.
type Spill struct {
	// Stdout and Stderr name each stream's blob; nil when the stream
	// fitted the window.
	Stdout *blob.Overflow `json:"stdout,omitempty"`
	Stderr *blob.Overflow `json:"stderr,omitempty"`
}

// Row is one job's identity and state without output: a listing row and
// Kill's answer. State licenses the fields beside it: Exit only for
// Exited and Killed, Cause only for Killed, Lost only for Lost, Refusal
// only for Refused.
type Row struct {
	// ID is the job's handle.
	ID ID `json:"id"`
	// Command is what the model asked for (Spec.Command).
	Command string `json:"command"`
	// State is where the job is.
	State State `json:"state"`
	// Started is when the plane admitted the job.
	Started time.Time `json:"started"`
	// Deadline is when the plane kills the job; zero for LifetimeSession.
	Deadline time.Time `json:"deadline,omitzero"`
	// Lifetime is the job's lifetime.
	Lifetime Lifetime `json:"lifetime"`
	// Exit is how the process ended, for Exited and Killed.
	Exit *sandbox.Settled `json:"exit,omitempty"`
	// Cause is why the harness killed the job, for Killed.
	Cause StopCause `json:"cause,omitempty"`
	// Lost is why the plane can no longer vouch for the job, for Lost.
	Lost LostReason `json:"lost,omitempty"`
	// Refusal says why the job never ran, for Refused.
	Refusal string `json:"refusal,omitempty"`
	// Spill names where the whole output went, once the job ended, when
	// it outgrew the window and the plane has a blob store.
	Spill *Spill `json:"spill,omitempty"`
}

// Polled is one poll's answer.
type Polled struct {
	Row
	Stdout Streamed `json:"stdout"`
	Stderr Streamed `json:"stderr"`
	// Next is where the next poll continues.
	Next Cursors `json:"-"`
}

// Listed is a strand's jobs, oldest first.
type Listed struct {
	Jobs []Row `json:"jobs"`
}

// Releasing is Release's answer.
type Releasing int

const (
	// Released: the job still runs and now belongs to its owner, who is
	// notified when it ends.
	Released Releasing = iota + 1
	// AlreadyEnded: the job ended first; the watcher reports the end.
	AlreadyEnded
)

// Sent is Send's answer.
type Sent struct {
	// Bytes is how many bytes reached standard input.
	Bytes int `json:"bytes"`
	// Closed says standard input is now closed.
	Closed bool `json:"closed"`
}
