package job

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/tool"
)

// PollDetails is the Details of a job_poll answer about one job. Pending
// is decided by State.Pending alone, as is the wording of the text.
type PollDetails struct {
	Row
	// Pending is true while the job is live.
	Pending bool `json:"pending"`
	// Cursor is the token the next poll continues from.
	Cursor string `json:"cursor"`
	// Stdout and Stderr are what each stream returned.
	Stdout Streamed `json:"stdout"`
	Stderr Streamed `json:"stderr"`
}

// ListDetails is the Details of a job_poll listing.
type ListDetails struct {
	Jobs []Row `json:"jobs"`
}

// RefusalDetails is the Details of a refused job call: for
// CodeJobClearanceRefused, the broker's structured denial. The code
// itself is the Outcome's Code.
type RefusalDetails struct {
	Denial *Denial `json:"denial,omitempty"`
}

// Denial is the JSON shape of a broker denial inside RefusalDetails.
type Denial struct {
	// Code is the broker's denial code.
	Code string `json:"code"`
	// Reason says why, for the model.
	Reason string `json:"reason"`
	// Wanted lists the grants an operator may approve to lift the denial.
	Wanted []string `json:"wanted,omitempty"`
}

// refusalOutcome renders err, as a job plane or a cursor parse returned
// it, as tool name's in-band error outcome: an *Error keeps its code (and
// denial), a *CursorError and a *LifetimeError keep theirs (tool.CodeOf);
// anything else, or one of them without a code, is
// CodeJobPlaneUnavailable.
func refusalOutcome(name string, err error) tool.Outcome {
	var (
		je *Error
		ce *CursorError
		le *LifetimeError
		d  RefusalDetails
	)
	code, text := refusalCode(err), err.Error()
	switch {
	case errors.As(err, &je):
		text = je.Reason
		if je.Denial != nil {
			dn := &Denial{Code: string(je.Denial.Code), Reason: je.Denial.Reason}
			for _, g := range je.Denial.Wanted {
				dn.Wanted = append(dn.Wanted, g.String())
			}
			d.Denial = dn
		}
	case errors.As(err, &ce):
		text = ce.Error()
	case errors.As(err, &le):
		text = le.Reason
	}
	return tool.Fail(code, fmt.Sprintf("%s refused (%s): %s", name, code, text)).WithDetails(d)
}

// renderPoll renders one poll answer. Whether it reads as pending comes
// from State.Pending alone.
func renderPoll(p Polled, now time.Time) tool.Outcome {
	var b strings.Builder
	b.WriteString(rowHeadline(p.Row, now))
	b.WriteString("\n")
	for _, s := range []struct {
		name string
		got  Streamed
	}{{"stdout", p.Stdout}, {"stderr", p.Stderr}} {
		if s.got.Dropped > 0 {
			fmt.Fprintf(&b, "[%d bytes of %s fell out of the window before this poll]\n", s.got.Dropped, s.name)
		}
		if s.got.Text == "" {
			fmt.Fprintf(&b, "%s: nothing new (%d bytes in all)\n", s.name, s.got.Received)
			continue
		}
		fmt.Fprintf(&b, "%s (%d new bytes, %d in all):\n%s", s.name, len(s.got.Text), s.got.Received, s.got.Text)
		if !strings.HasSuffix(s.got.Text, "\n") {
			b.WriteString("\n")
		}
	}
	if sp := p.Spill; sp != nil {
		for _, s := range []struct {
			name string
			o    *blob.Overflow
		}{{"stdout", sp.Stdout}, {"stderr", sp.Stderr}} {
			switch {
			case s.o == nil:
			case s.o.NotKept != "":
				fmt.Fprintf(&b, "whole %s (%d bytes) was not kept: %s\n", s.name, s.o.Size, s.o.NotKept)
			default:
				fmt.Fprintf(&b, "whole %s (%d bytes): %s\n", s.name, s.o.Size, s.o.Path)
			}
		}
	}
	token := p.Next.Token(p.ID)
	if p.State.Pending() {
		fmt.Fprintf(&b, "still running: poll again with cursor %q to continue, or stop it with %s", token, KillToolName)
	} else {
		fmt.Fprintf(&b, "cursor %q (nothing more will arrive)", token)
	}
	return tool.Outcome{Text: b.String(), Details: PollDetails{
		Row: p.Row, Pending: p.State.Pending(), Cursor: token, Stdout: p.Stdout, Stderr: p.Stderr,
	}}
}

// rowHeadline is one line saying what a job is and where it stands.
func rowHeadline(r Row, now time.Time) string {
	age := now.Sub(r.Started).Round(100 * time.Millisecond)
	s := fmt.Sprintf("job %s %s", r.ID, r.State)
	switch r.State {
	case Exited:
		if r.Exit != nil {
			s += " " + exitPhrase(r)
		}
	case Killed:
		s += fmt.Sprintf(" (%s)", causePhrase(r.Cause))
		if r.Exit != nil {
			s += fmt.Sprintf(" after %s", r.Exit.Duration.Round(time.Millisecond))
		}
	case Lost:
		s += fmt.Sprintf(" (%s)", r.Lost)
	case Refused:
		s += ": it never ran: " + r.Refusal
	default:
		s += fmt.Sprintf(" for %s", age)
		if r.Lifetime == LifetimeSession {
			s += ", no wall deadline"
		} else if !r.Deadline.IsZero() {
			s += fmt.Sprintf(", killed at its wall in %s", r.Deadline.Sub(now).Round(time.Second))
		}
	}
	return s + ": " + r.Command
}

func exitPhrase(r Row) string {
	e := r.Exit
	if e.Signal != "" {
		return fmt.Sprintf("by signal %s after %s", e.Signal, e.Duration.Round(time.Millisecond))
	}
	return fmt.Sprintf("with code %d after %s", e.ExitCode, e.Duration.Round(time.Millisecond))
}

func causePhrase(c StopCause) string {
	switch c {
	case StopOwner:
		return "by " + KillToolName
	case StopWall:
		return "at its wall deadline"
	case StopAbort:
		return "its operation was aborted"
	case StopShutdown:
		return "the session ended"
	case StopOutputBound:
		return "the output bound ended it: it wrote the most output one job may (stdout and stderr together) and the broker stopped its whole tree there; the output up to the bound is kept"
	}
	return string(c)
}

// renderList renders a strand's jobs.
func renderList(l Listed, now time.Time) tool.Outcome {
	if len(l.Jobs) == 0 {
		return tool.Outcome{Text: "no jobs; start one with bash mode \"background\"", Details: ListDetails{Jobs: []Row{}}}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d jobs, oldest first:\n", len(l.Jobs))
	for _, r := range l.Jobs {
		b.WriteString(rowHeadline(r, now))
		b.WriteString("\n")
	}
	return tool.Outcome{Text: b.String(), Details: ListDetails{Jobs: l.Jobs}}
}
