// Package job runs the model's commands: the bash tool, and background
// jobs, commands that keep running after the call that started them
// returns, which the model watches, feeds and stops with later calls.
//
// It owns the Jobs seam and its whole vocabulary (Spec, Owner, State,
// Cursors, Polled, Row, the refusal codes and error types, …). It owns
// the bash tool (BashTool), the job_poll, job_kill and job_send tools
// (Tools) and the job:// virtual namespace for fs_read (Scheme). Plane is
// a reference implementation over a broker that a host may use as is or
// replace with its own. Every tool here is handed its Jobs value at
// construction; package tool's Call carries the call's identity and
// session, and knows nothing of jobs.
//
// It does not own what a command may touch: package broker composes and
// enforces the policy. Nor does it own how long-lived state survives a
// restart (the reference plane is in memory; a job is never replayed), or
// when an idle owner is woken (the host decides what to do with a
// Notice).
//
// Invariants:
//   - Identity comes from the tool.Call (OwnerOf), never from arguments:
//     a strand sees only its own jobs, and another strand's handle is
//     refused exactly like one never minted (CodeUnknownJob).
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
//   - Output is bounded too: one job writes at most
//     Options.MaxOutputBytes to its two streams together. At the bound the
//     broker stops the whole tree (Options.MaxOutputBytes says how), so no
//     job can fill the disk through its spill.
//   - Every failing outcome carries one tool.Code in Outcome.Code. A
//     plane's refusal carries one of the five plane refusal codes
//     (CodeUnknownJob, CodeJobCeilingReached, CodeJobClearanceRefused,
//     CodeNoJobPlane, CodeJobPlaneUnavailable), which code mode hands to
//     programs as they are. An argument problem carries
//     tool.CodeInvalidArguments, CodeInvalidCursor or CodeLifetimeRefused;
//     how a bash command ended, CodeNonzeroExit, CodeTimeout,
//     CodeExecFailed or CodeOutputLimited. Error types carry their code in
//     a Code field and implement tool.CodedError, so tool.CodeOf finds it.
package job
