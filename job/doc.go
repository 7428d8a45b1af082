// Package job is the model's door onto background jobs: a command that
// keeps running after the call that started it returns, which the model
// watches, feeds and stops with later calls.
//
// It owns the Jobs seam's names for a host (aliases of the declarations in
// package tool, which bash needs and which cannot import this package),
// the job_poll, job_kill and job_send tools, the job:// virtual namespace
// (ReadURI), and Plane, a reference implementation over a broker that a
// host may use as is or replace with its own.
//
// It does not own starting a job from a model's request (bash's mode
// argument does that), what a command may touch (package broker composes
// and enforces the policy), how long-lived state survives a restart (the
// reference plane is in memory; a job is never replayed), or when an idle
// owner is woken (the host decides what to do with a Notice).
//
// Invariants:
//   - Identity comes from the tool.Call, never from arguments: a strand
//     sees only its own jobs, and another strand's handle is refused
//     exactly like one never minted (unknown_job).
//   - A job's budget is pooled in the sibling step {operation,
//     "job/<id>"}: tearing down the step that started it (AbortStep) does
//     not reap it; aborting the whole operation does.
//   - A cursor travels as one opaque token bound to its job. A token that
//     could not have been minted (malformed, edited, another job's, or
//     past what the job wrote) is refused, never rewound.
//   - A poll of a running job is a success. Its text and
//     PollDetails.Pending are decided by one predicate, State.Pending.
//   - Every job ends: a default-lifetime job at a finite, clamped wall; a
//     session-lifetime job (never a sub-agent's) when its owner kills it,
//     its operation is aborted or the plane closes. A kill takes the
//     whole process tree.
//   - Memory is bounded: each stream keeps a fixed window
//     (Options.TailBytes), each strand at most MaxLive live and MaxEnded
//     ended jobs; output past the window goes to the blob store when one
//     is set.
//   - Output is bounded too: one job writes at most Options.MaxOutputBytes
//     (DefaultMaxOutputBytes, the bound bash states) to its two streams
//     together; at the bound the broker stops the whole tree and the row
//     says Killed with cause StopOutputBound, so no job can fill the disk
//     through its spill.
//   - Refusals carry one of five stable codes (unknown_job,
//     ceiling_reached, clearance_refused, no_jobs_plane, unavailable) that
//     code mode reuses; argument problems carry invalid_arguments,
//     invalid_cursor or lifetime_refused.
package job
