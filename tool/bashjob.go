package tool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentloom/loom/broker"
)

// sessionWallDenial is the refusal a session-lifetime job meets under a
// policy with a wall limit: lifting it is a grant an operator may approve.
func sessionWallDenial(wallMs int) *broker.Denial {
	return &broker.Denial{
		Code:   broker.DenialRequirementsNotCovered,
		Reason: fmt.Sprintf("a session-lifetime job runs without a wall deadline, and the session policy stops commands after %d ms", wallMs),
		Wanted: []broker.Grant{{Kind: broker.GrantWall}},
	}
}

// jobRefused renders a job plane's refusal of a bash call. A clearance
// refusal keeps the broker's structured denial.
func jobRefused(err error, notes []string, det BashDetails) Outcome {
	var je *JobError
	if !errors.As(err, &je) {
		return bashFail(Code(JobsUnavailable), "the job plane failed: "+err.Error(), det)
	}
	text := je.Reason
	if je.Denial != nil {
		det.Wanted = je.Denial.Wanted
		text = je.Denial.Explain()
	}
	return bashFail(Code(je.Code), withNotes(notes, text), det)
}

func withNotes(notes []string, text string) string {
	var b strings.Builder
	for _, n := range notes {
		b.WriteString("note: " + n + "\n")
	}
	b.WriteString(text)
	return b.String()
}

// wallSentence says when a job's wall ends it.
func wallSentence(deadline, now time.Time) string {
	if deadline.IsZero() {
		return "It has no wall deadline: it runs until it ends, job_kill stops it, or the session ends."
	}
	return fmt.Sprintf("It is killed at its wall deadline in %s unless it ends first.", deadline.Sub(now).Round(time.Second))
}

// startBackground starts spec as a job and answers with its handle.
func startBackground(ctx context.Context, c *Call, spec JobSpec, notes []string, det BashDetails) Outcome {
	jobs := c.Jobs
	if jobs == nil {
		jobs = NoJobs()
	}
	s, err := jobs.Start(ctx, c.JobOwner(), spec)
	if err != nil {
		return jobRefused(err, notes, det)
	}
	det.Job, det.Sandbox = s.ID, &s.Enforcement
	text := withNotes(notes, fmt.Sprintf("started background job %s\n"+
		"Read its output with job_poll {\"job\": %q}, write to its standard input with job_send, stop it with job_kill. %s\n%s",
		s.ID, s.ID, wallSentence(s.Deadline, c.Clock()), s.Enforcement.String()))
	return Outcome{Text: text, Details: det}
}

// runAuto starts spec as an attended job and watches it for up to
// timeout. ran is false when the call should run in the foreground
// instead: no plane, the plane's ceiling reached, or its clearance
// refused (the foreground clearance then produces the structured
// refusal an escalation reads); note says why, when the model should know.
func runAuto(ctx context.Context, c *Call, spec JobSpec, timeout time.Duration, notes []string, det BashDetails) (o Outcome, ran bool, note string) {
	if c.Jobs == nil {
		return Outcome{}, false, ""
	}
	owner := c.JobOwner()
	s, err := c.Jobs.Attend(ctx, owner, spec)
	if err != nil {
		code, _ := JobRefusal(err)
		switch code {
		case NoJobsPlane:
			return Outcome{}, false, ""
		case JobCeilingReached, JobClearanceRefused:
			return Outcome{}, false, "ran in the foreground: " + string(code)
		}
		return jobRefused(err, notes, det), true, ""
	}
	enf := s.Enforcement
	det.Sandbox = &enf
	w, werr := WatchJob(ctx, c.Jobs, owner, s.ID, timeout, c.Observe)
	det.Bytes = w.Final.Stdout.Received + w.Final.Stderr.Received
	if werr != nil && !w.Ended {
		det.Job = s.ID
		return bashFail(jobErrorCode(werr), withNotes(notes, fmt.Sprintf("lost track of job %s: %v", s.ID, werr)), det), true, ""
	}
	if !w.Ended {
		det.Job, det.Cursor = s.ID, w.Next.Token(s.ID)
		var b strings.Builder
		for _, n := range notes {
			b.WriteString("note: " + n + "\n")
		}
		b.Write(w.Output)
		if len(w.Output) > 0 && w.Output[len(w.Output)-1] != '\n' {
			b.WriteByte('\n')
		}
		if w.Missed {
			b.WriteString("[some output is not shown: it outgrew what the call keeps]\n")
		}
		fmt.Fprintf(&b, "[still running after %d ms: it continues as background job %s. Read on with job_poll "+
			"{\"job\": %q, \"cursor\": %q}; stop it with job_kill. %s]\n",
			timeout.Milliseconds(), s.ID, s.ID, det.Cursor, wallSentence(w.Final.Deadline, c.Clock()))
		b.WriteString(enf.String())
		return Outcome{Text: b.String(), Details: det}, true, ""
	}
	body := string(w.Output)
	switch sp := w.Final.Spill; {
	case w.Missed && sp != nil:
		det.Spill = sp
		var parts []string
		if sp.Stdout != nil {
			det.Overflow = sp.Stdout
			parts = append(parts, sp.Stdout.Text("stdout"))
		}
		if sp.Stderr != nil {
			if det.Overflow == nil {
				det.Overflow = sp.Stderr
			}
			parts = append(parts, sp.Stderr.Text("stderr"))
		}
		body = strings.Join(parts, "\n")
	case w.Missed:
		body += fmt.Sprintf("\n[only part of the output is shown: %d bytes in all, and this host keeps no overflow store]\n", det.Bytes)
	}
	return renderSettled(notes, body, watchedSettled(w.Final.JobRow), timeout, w.Stderr, enf, det), true, ""
}

// watchedSettled is how a watched job ended, as a foreground run reports
// it.
func watchedSettled(r JobRow) broker.Settled {
	switch {
	case r.Exit != nil:
		s := *r.Exit
		if r.State == JobKilled && r.Cause == StopOwner {
			s.Cancelled = true // the watch killed it because its call ended
		}
		return s
	case r.State == JobRefused:
		return broker.Settled{ExitCode: broker.ExitCodeNotExecuted, Failed: r.Refusal}
	}
	return broker.Settled{ExitCode: -1, Failed: fmt.Sprintf("the job plane lost the command (%s)", r.Lost)}
}

func jobErrorCode(err error) Code {
	if code, ok := JobRefusal(err); ok {
		return Code(code)
	}
	var coded interface{ Code() string }
	if errors.As(err, &coded) {
		return Code(coded.Code())
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return CodeCancelled
	}
	return Code(JobsUnavailable)
}
