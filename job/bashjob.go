package job

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// jobRefused renders a job plane's refusal of a bash call. A clearance
// refusal keeps the broker's structured denial.
func jobRefused(err error, notes []string, det BashDetails) tool.Outcome {
	var je *Error
	if !errors.As(err, &je) {
		return bashFail(refusalCode(err), withNotes(notes, "the job plane failed: "+err.Error()), det)
	}
	text := je.Reason
	if je.Denial != nil {
		det.Wanted = je.Denial.Wanted
		text = je.Denial.Explain()
	}
	return bashFail(refusalCode(err), withNotes(notes, text), det)
}

func withNotes(notes []string, text string) string {
	var b strings.Builder
	writeNotes(&b, notes)
	b.WriteString(text)
	return b.String()
}

// wallSentence says when a job's wall ends it.
func wallSentence(deadline, now time.Time) string {
	if deadline.IsZero() {
		return "It has no wall deadline: it runs until it ends, " + KillToolName + " stops it, or the session ends."
	}
	return fmt.Sprintf("It is killed at its wall deadline in %s unless it ends first.", deadline.Sub(now).Round(time.Second))
}

// startBackground starts cmd as a job of jobs and answers with its
// handle.
func startBackground(ctx context.Context, c *tool.Call, jobs Jobs, cmd Spec, notes []string, det BashDetails) tool.Outcome {
	s, err := jobs.Start(ctx, OwnerOf(c), cmd)
	if err != nil {
		return jobRefused(err, notes, det)
	}
	det.Job, det.Sandbox = s.ID, &s.Enforcement
	text := withNotes(notes, fmt.Sprintf("started background job %s\n"+
		"Read its output with %s {\"job\": %q}, write to its standard input with %s, stop it with %s. %s\n%s",
		s.ID, PollToolName, s.ID, SendToolName, KillToolName, wallSentence(s.Deadline, c.Clock()), s.Enforcement.String()))
	return tool.Outcome{Text: text, Details: det}
}

// runAuto starts cmd as an attended job of jobs and watches it for up to
// run.timeout. ran is false when the call should run in the foreground
// instead: no plane, the plane's ceiling reached, or its clearance
// refused (the foreground clearance then produces the structured
// refusal an escalation reads); note says why, when the model should know.
func runAuto(ctx context.Context, c *tool.Call, jobs Jobs, cmd Spec, run bashRun, det BashDetails) (o tool.Outcome, ran bool, note string) {
	owner := OwnerOf(c)
	s, err := jobs.Attend(ctx, owner, cmd)
	if err != nil {
		code := tool.CodeOf(err)
		switch code {
		case CodeNoJobPlane:
			return tool.Outcome{}, false, ""
		case CodeJobCeilingReached, CodeJobClearanceRefused:
			return tool.Outcome{}, false, "ran in the foreground: " + string(code)
		}
		return jobRefused(err, run.notes, det), true, ""
	}
	enf := s.Enforcement
	det.Sandbox = &enf
	w, werr := watch(ctx, jobs, owner, s.ID, run.timeout, c.Observe)
	det.Bytes = w.Final.Stdout.Received + w.Final.Stderr.Received
	switch {
	case werr != nil && !w.Ended:
		det.Job = s.ID
		return bashFail(watchCode(werr), withNotes(run.notes, fmt.Sprintf("lost track of job %s: %v", s.ID, werr)), det), true, ""
	case !w.Ended:
		return renderReleased(c, w, run, enf, det), true, ""
	}
	return renderWatched(w, run, hostEnd(ctx), enf, det), true, ""
}

// renderReleased renders a watched job that outlived its window and now
// runs as a background job: what the watch saw, and how to read on.
func renderReleased(c *tool.Call, w watched, run bashRun, enf sandbox.Enforcement, det BashDetails) tool.Outcome {
	det.Job, det.Cursor = w.ID, w.Next.Token(w.ID)
	var b strings.Builder
	writeNotes(&b, run.notes)
	b.Write(w.Output)
	if len(w.Output) > 0 && w.Output[len(w.Output)-1] != '\n' {
		b.WriteByte('\n')
	}
	if w.Missed {
		b.WriteString("[some output is not shown: it outgrew what the call keeps]\n")
	}
	fmt.Fprintf(&b, "[still running after %d ms: it continues as background job %s. Read on with %s "+
		"{\"job\": %q, \"cursor\": %q}; stop it with %s. %s]\n",
		run.timeout.Milliseconds(), w.ID, PollToolName, w.ID, det.Cursor, KillToolName, wallSentence(w.Final.Deadline, c.Clock()))
	b.WriteString(enf.String())
	return tool.Outcome{Text: b.String(), Details: det}
}

// renderWatched renders a watched job that ended in its window as a
// foreground run is rendered; output the watch missed is named by the
// plane's spill.
func renderWatched(w watched, run bashRun, host error, enf sandbox.Enforcement, det BashDetails) tool.Outcome {
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
	return renderSettled(run, body, watchedSettled(w.Final.Row), host, w.Stderr, enf, det)
}

// watchedSettled is how a watched job ended, as a foreground run reports
// it.
func watchedSettled(r Row) sandbox.Settled {
	switch {
	case r.Exit != nil:
		s := *r.Exit
		if r.State == Killed && r.Cause == StopOwner {
			s.Cancelled = true // the watch killed it because its call ended
		}
		return s
	case r.State == Refused:
		return sandbox.Settled{ExitCode: sandbox.ExitCodeNotExecuted, Failed: r.Refusal}
	}
	return sandbox.Settled{ExitCode: -1, Failed: fmt.Sprintf("the job plane lost the command (%s)", r.Lost)}
}

// watchCode is the code of a watch that lost its job: the plane's, the
// call's cancellation, or CodeJobPlaneUnavailable.
func watchCode(err error) tool.Code {
	if tool.CodeOf(err) == "" && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return tool.CodeCancelled
	}
	return refusalCode(err)
}
