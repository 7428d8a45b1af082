package tool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/broker"
)

// Jobs is the seam a background job plane fills: a command started now
// and watched, fed and stopped later, possibly by other calls. It is
// declared here rather than in package job because bash starts jobs (its
// mode argument) and package job imports this one; package job re-exports
// every name under its own and holds the job_* tools and the reference
// plane (job.NewPlane).
//
// Identity is always the JobOwner the host derived from the Call, never a
// model argument: an implementation answers a job that another strand
// started as if it did not exist (JobUnknown). Every failure is an error
// a caller can inspect with errors.As: *JobError (one of the five
// JobRefusalCode values), *CursorError, or *LifetimeError. Methods must be
// safe for concurrent use and must not panic.
type Jobs interface {
	// Start clears spec and starts it as a job the owner is notified
	// about when it ends: what bash's background mode calls.
	Start(ctx context.Context, o JobOwner, spec JobSpec) (Started, error)
	// Attend clears spec and starts it as a job the calling tool watches;
	// the owner is notified about nothing until Release answers Released.
	// It is what bash's auto mode calls.
	Attend(ctx context.Context, o JobOwner, spec JobSpec) (Started, error)
	// Poll answers what arrived after cur on both streams and the job's
	// state, waiting up to wait (clamped to [0, MaxWait]; tools refuse a
	// negative wait in band before asking) for something new or for the
	// job to end. A poll of a live job that saw nothing new is a success,
	// not an error. A cursor that could not have been minted for the job
	// is refused with a *CursorError, never rewound.
	Poll(ctx context.Context, o JobOwner, id JobID, cur Cursors, wait time.Duration) (Polled, error)
	// Release hands an attended job to its owner. The answer is
	// serialized against the job's own settlement, so exactly one of the
	// watcher (AlreadyEnded) and the owner's notice (Released) reports
	// the end.
	Release(ctx context.Context, o JobOwner, id JobID) (Releasing, error)
	// Kill ends the job's whole process tree and answers its final row.
	// Killing a job that already ended answers that end.
	Kill(ctx context.Context, o JobOwner, id JobID) (JobRow, error)
	// Send writes data to the job's standard input and, with CloseStdin,
	// closes it afterwards.
	Send(ctx context.Context, o JobOwner, id JobID, data []byte, end StdinEnd) (Sent, error)
	// List answers the owner's strand's jobs, oldest first.
	List(ctx context.Context, o JobOwner) (Listed, error)
	// MaxWait is the longest Poll waits: the clamp a tool states in its
	// description and applies, so the promise and the behaviour are one
	// number. 0 means Poll never waits.
	MaxWait() time.Duration
}

// JobID names one job. The plane mints it; a model sees it as an opaque
// handle.
type JobID string

// JobOwner is who asks: the calling strand (whose jobs it may see) and the
// operation and step it calls from. A job's budget is pooled in the
// sibling step {OpID, "job/<id>"}, so the calling step's teardown does not
// reap it while an abort of the whole operation does.
type JobOwner struct {
	Strand string
	OpID   string
	StepID string
}

// JobOwner returns the caller identity of c.
func (c *Call) JobOwner() JobOwner {
	return JobOwner{Strand: c.Strand, OpID: c.OpID, StepID: c.StepID}
}

// SubagentPrefix begins the strand name of every sub-agent. A strand with
// it may not ask for LifetimeSession.
const SubagentPrefix = "sub:"

// IsSubagent reports whether strand names a sub-agent.
func IsSubagent(strand string) bool { return strings.HasPrefix(strand, SubagentPrefix) }

// JobLifetime says how long a job may run.
type JobLifetime string

const (
	// LifetimeDefault (also the empty value) bounds a job by a finite
	// wall: JobSpec.Wall, else the plane's default, clamped to the
	// plane's maximum.
	LifetimeDefault JobLifetime = "default"
	// LifetimeSession asks for no wall deadline: the job runs until it
	// ends, its owner kills it, its operation is aborted or the plane
	// closes. Sub-agents may not ask for it.
	LifetimeSession JobLifetime = "session"
)

// CheckLifetime refuses a LifetimeSession asked by a sub-agent strand. It
// runs ahead of every other check, so such a request raises no approval
// and starts nothing; anything other than the two lifetimes is refused too.
func CheckLifetime(strand string, l JobLifetime) error {
	switch l {
	case "", LifetimeDefault:
		return nil
	case LifetimeSession:
		if IsSubagent(strand) {
			return &LifetimeError{Lifetime: l, Reason: "a sub-agent's jobs end with it, so it may not start a session-lifetime job; use the default lifetime"}
		}
		return nil
	}
	return &LifetimeError{Lifetime: l, Reason: fmt.Sprintf("unknown lifetime %q; use %q or %q", l, LifetimeDefault, LifetimeSession)}
}

// LifetimeError refuses a lifetime before anything runs.
type LifetimeError struct {
	Lifetime JobLifetime
	Reason   string
}

// LifetimeRefusedCode is LifetimeError's stable code.
const LifetimeRefusedCode = "lifetime_refused"

// Code returns LifetimeRefusedCode.
func (e *LifetimeError) Code() string { return LifetimeRefusedCode }

// Error renders the refusal with its reason.
func (e *LifetimeError) Error() string {
	return "lifetime " + string(e.Lifetime) + " refused: " + e.Reason
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

// JobSpec is one command to run as a job. The caller (bash) has already
// composed Policy from the base policy, its requirements and the call's
// grants; the plane clears it through the broker under the job's own step.
type JobSpec struct {
	// Command is what the model asked for, shown in listings.
	Command string
	// Argv is what runs (bash: the shell and the command).
	Argv []string
	// Dir is the absolute working directory.
	Dir string
	// Env is offered to the command; Policy.EnvAllow filters it.
	Env map[string]string
	// Policy is the composed policy the job runs under.
	Policy broker.Policy
	// Lifetime chooses a finite wall (default) or none (session).
	Lifetime JobLifetime
	// Wall is the finite lifetime's wall; 0 means the plane's default.
	// The plane clamps it to its maximum. Ignored for LifetimeSession.
	Wall time.Duration
	// Wake asks for idle heartbeats.
	Wake IdleWake
}

// Started is a job that cleared and runs.
type Started struct {
	ID JobID
	// Deadline is when the plane kills the job; zero for LifetimeSession.
	Deadline time.Time
	// Enforcement is how the broker confined it.
	Enforcement broker.Enforcement
}

// JobState is a job's place in its lifecycle. Starting and Running are
// live; the other four are terminal and final.
type JobState string

const (
	// JobStarting: admitted, its clearance in progress.
	JobStarting JobState = "starting"
	// JobRunning: cleared and running.
	JobRunning JobState = "running"
	// JobExited: ended by itself; Exit says how.
	JobExited JobState = "exited"
	// JobKilled: the harness ended it; Cause says why, Exit how.
	JobKilled JobState = "killed"
	// JobLost: the plane can no longer vouch for it; Lost says why.
	JobLost JobState = "lost"
	// JobRefused: admitted but never ran; Refusal says why.
	JobRefused JobState = "refused"
)

// Pending reports whether s is live (Starting or Running). It alone
// decides whether a poll is pending, in the text and in the details.
func (s JobState) Pending() bool { return s == JobStarting || s == JobRunning }

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
)

// LostReason says why a plane can no longer vouch for a job.
type LostReason string

const (
	// LostUnsettled: the plane closed and the job had not settled within
	// its drain bound after the kill.
	LostUnsettled LostReason = "unsettled"
	// LostRestart: the host restarted and the job's process did not
	// survive it; a job is never replayed.
	LostRestart LostReason = "restart"
)

// Cursors is where a reader stands in a job's two streams. It travels to
// a model only as the opaque token of Token and ParseCursor; the zero
// value is the start of both streams.
type Cursors struct {
	Stdout int64
	Stderr int64
}

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

// JobSpill is where a terminal job's whole output went when it outgrew the
// plane's window (nil streams fitted).
type JobSpill struct {
	Stdout *blob.Overflow `json:"stdout,omitempty"`
	Stderr *blob.Overflow `json:"stderr,omitempty"`
}

// JobRow is one job's identity and state without output: a listing row
// and Kill's answer. State licenses the fields beside it: Exit only for
// Exited and Killed, Cause only for Killed, Lost only for Lost, Refusal
// only for Refused.
type JobRow struct {
	ID       JobID           `json:"id"`
	Command  string          `json:"command"`
	State    JobState        `json:"state"`
	Started  time.Time       `json:"started"`
	Deadline time.Time       `json:"deadline,omitzero"`
	Lifetime JobLifetime     `json:"lifetime"`
	Exit     *broker.Settled `json:"exit,omitempty"`
	Cause    StopCause       `json:"cause,omitempty"`
	Lost     LostReason      `json:"lost,omitempty"`
	Refusal  string          `json:"refusal,omitempty"`
	Spill    *JobSpill       `json:"spill,omitempty"`
}

// Polled is one poll's answer.
type Polled struct {
	JobRow
	Stdout Streamed `json:"stdout"`
	Stderr Streamed `json:"stderr"`
	// Next is where the next poll continues.
	Next Cursors `json:"-"`
}

// Listed is a strand's jobs, oldest first.
type Listed struct {
	Jobs []JobRow `json:"jobs"`
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

// JobRefusalCode is one of five stable strings a job plane refuses with.
// A model reads them in a tool result and a code-mode program in a
// denial: one contract.
type JobRefusalCode string

const (
	// JobUnknown: no job of this strand has the handle (never minted,
	// pruned, or another strand's).
	JobUnknown JobRefusalCode = "unknown_job"
	// JobCeilingReached: the strand already has its plane's maximum of
	// live jobs.
	JobCeilingReached JobRefusalCode = "ceiling_reached"
	// JobClearanceRefused: the broker refused to clear the command;
	// JobError.Denial is the structured refusal an escalation reads.
	JobClearanceRefused JobRefusalCode = "clearance_refused"
	// NoJobsPlane: this host runs no job plane.
	NoJobsPlane JobRefusalCode = "no_jobs_plane"
	// JobsUnavailable: the plane cannot serve the request now (closed,
	// the job's standard input is closed, a write timed out).
	JobsUnavailable JobRefusalCode = "unavailable"
)

// JobRefusalCodes returns the five codes, in the order declared.
func JobRefusalCodes() []JobRefusalCode {
	return []JobRefusalCode{JobUnknown, JobCeilingReached, JobClearanceRefused, NoJobsPlane, JobsUnavailable}
}

// JobError is a job plane's refusal.
type JobError struct {
	Code   JobRefusalCode
	Reason string
	// Denial is the broker's refusal for JobClearanceRefused.
	Denial *broker.Denial
}

// Error renders "job: <code>: <reason>".
func (e *JobError) Error() string { return "job: " + string(e.Code) + ": " + e.Reason }

// Unwrap returns the broker denial, if any.
func (e *JobError) Unwrap() error {
	if e.Denial == nil {
		return nil
	}
	return e.Denial
}

// Is matches any *JobError with the same Code.
func (e *JobError) Is(target error) bool {
	t, ok := target.(*JobError)
	return ok && t.Code == e.Code
}

// JobRefusal returns the refusal code err carries, if it is (or wraps) a
// *JobError.
func JobRefusal(err error) (JobRefusalCode, bool) {
	var je *JobError
	if errors.As(err, &je) {
		return je.Code, true
	}
	return "", false
}

// NoJobs returns a Jobs for a host that runs no job plane: every call is
// refused with NoJobsPlane, and MaxWait is 0.
func NoJobs() Jobs { return noJobs{} }

type noJobs struct{}

func noPlane() error {
	return &JobError{Code: NoJobsPlane, Reason: "this host runs no background jobs"}
}

func (noJobs) Start(context.Context, JobOwner, JobSpec) (Started, error) { return Started{}, noPlane() }
func (noJobs) Attend(context.Context, JobOwner, JobSpec) (Started, error) {
	return Started{}, noPlane()
}
func (noJobs) Poll(context.Context, JobOwner, JobID, Cursors, time.Duration) (Polled, error) {
	return Polled{}, noPlane()
}
func (noJobs) Release(context.Context, JobOwner, JobID) (Releasing, error) { return 0, noPlane() }
func (noJobs) Kill(context.Context, JobOwner, JobID) (JobRow, error)       { return JobRow{}, noPlane() }
func (noJobs) Send(context.Context, JobOwner, JobID, []byte, StdinEnd) (Sent, error) {
	return Sent{}, noPlane()
}
func (noJobs) List(context.Context, JobOwner) (Listed, error) { return Listed{}, noPlane() }
func (noJobs) MaxWait() time.Duration                         { return 0 }
