package job

import "github.com/agentloom/loom/tool"

// The seam and its vocabulary are declared in package tool, because bash
// starts jobs and package tool cannot import this one; they are restated
// here as aliases so a host reads one package. Each alias is the very
// same type: a value passes between the two names without conversion.
type (
	// Jobs is the seam a job plane fills; see tool.Jobs.
	Jobs = tool.Jobs
	// ID names one job; see tool.JobID.
	ID = tool.JobID
	// Owner is the caller identity; see tool.JobOwner.
	Owner = tool.JobOwner
	// Spec is one command to run as a job; see tool.JobSpec.
	Spec = tool.JobSpec
	// Started is a job that cleared; see tool.Started.
	Started = tool.Started
	// State is a job's lifecycle state; see tool.JobState.
	State = tool.JobState
	// StopCause says why the harness killed a job; see tool.StopCause.
	StopCause = tool.StopCause
	// LostReason says why a plane lost a job; see tool.LostReason.
	LostReason = tool.LostReason
	// Lifetime is default (finite) or session; see tool.JobLifetime.
	Lifetime = tool.JobLifetime
	// IdleWake is bash's heartbeat; see tool.IdleWake.
	IdleWake = tool.IdleWake
	// StdinEnd is job_send's eof; see tool.StdinEnd.
	StdinEnd = tool.StdinEnd
	// Cursors is a reader's place in both streams; see tool.Cursors.
	Cursors = tool.Cursors
	// Streamed is one stream's part of a poll; see tool.Streamed.
	Streamed = tool.Streamed
	// Spill is where outgrown output went; see tool.JobSpill.
	Spill = tool.JobSpill
	// Row is a job without output; see tool.JobRow.
	Row = tool.JobRow
	// Polled is a poll's answer; see tool.Polled.
	Polled = tool.Polled
	// Listed is a strand's jobs; see tool.Listed.
	Listed = tool.Listed
	// Releasing is Release's answer; see tool.Releasing.
	Releasing = tool.Releasing
	// Sent is Send's answer; see tool.Sent.
	Sent = tool.Sent
	// RefusalCode is one of the five refusal codes; see tool.JobRefusalCode.
	RefusalCode = tool.JobRefusalCode
	// Error is a plane's refusal; see tool.JobError.
	Error = tool.JobError
	// CursorError refuses a cursor; see tool.CursorError.
	CursorError = tool.CursorError
	// LifetimeError refuses a lifetime; see tool.LifetimeError.
	LifetimeError = tool.LifetimeError
)

// Lifecycle states; see tool.JobState.
const (
	Starting = tool.JobStarting
	Running  = tool.JobRunning
	Exited   = tool.JobExited
	Killed   = tool.JobKilled
	Lost     = tool.JobLost
	Refused  = tool.JobRefused
)

// Refusal codes; see tool.JobRefusalCode.
const (
	Unknown          = tool.JobUnknown
	CeilingReached   = tool.JobCeilingReached
	ClearanceRefused = tool.JobClearanceRefused
	NoJobsPlane      = tool.NoJobsPlane
	Unavailable      = tool.JobsUnavailable
)

// Release answers, lifetimes, wakes and stdin ends; see package tool.
const (
	Released        = tool.Released
	AlreadyEnded    = tool.AlreadyEnded
	LifetimeDefault = tool.LifetimeDefault
	LifetimeSession = tool.LifetimeSession
	QuietUntilDone  = tool.QuietUntilDone
	WakeWhenIdle    = tool.WakeWhenIdle
	KeepStdinOpen   = tool.KeepStdinOpen
	CloseStdin      = tool.CloseStdin
)

// Stop causes and lost reasons; see package tool.
const (
	StopOwner     = tool.StopOwner
	StopWall      = tool.StopWall
	StopAbort     = tool.StopAbort
	StopShutdown  = tool.StopShutdown
	LostUnsettled = tool.LostUnsettled
	LostRestart   = tool.LostRestart
)

// StopOutputBound is the cause of a job the broker stopped because its
// output reached the plane's bound (Options.MaxOutputBytes): the row is
// Killed, its Exit says OutputLimited.
const StopOutputBound StopCause = "output_bound"

// NoPlane returns a Jobs for a host with no job plane: every call is
// refused with NoJobsPlane. It is tool.NoJobs.
func NoPlane() Jobs { return tool.NoJobs() }

// ParseCursor reads a cursor token minted for id; see tool.ParseCursor.
func ParseCursor(id ID, token string) (Cursors, error) { return tool.ParseCursor(id, token) }
