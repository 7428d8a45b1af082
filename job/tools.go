package job

import (
	"context"
	"fmt"
	"time"

	"github.com/agentloom/loom/tool"
)

// Tool names.
const (
	PollToolName = "job_poll"
	KillToolName = "job_kill"
	SendToolName = "job_send"
)

// maxSendBytes bounds the input one job_send writes.
const maxSendBytes = 64 << 10

// Tools returns job_poll, job_kill and job_send over j, in that order: a
// host registers all three or none (a job a model can start but not stop
// would be a leak). A nil j is NoPlane(). Jobs are started by bash's mode
// argument, not by a tool here.
func Tools(j Jobs) []tool.Tool {
	return []tool.Tool{pollTool(j), killTool(j), sendTool(j)}
}

type pollArgs struct {
	Job    string `json:"job,omitempty"`
	Cursor string `json:"cursor,omitempty" jsonschema:"default: the oldest output kept"`
	WaitMs *int   `json:"wait_ms,omitempty" jsonschema:"default 0: at once"`
}

// pollTool returns job_poll over j: read a job's new output and state, or
// list the caller's jobs. The wait is clamped to j.MaxWait(), the number
// the description states. A poll of a running job is a success; its text
// and Details.Pending come from one predicate (State.Pending).
func pollTool(j Jobs) tool.Tool {
	j = orNoPlane(j)
	maxWait := j.MaxWait()
	return tool.Typed(tool.Tool{
		Name:     PollToolName,
		Title:    "Poll a background job",
		ReadOnly: true,
		Description: fmt.Sprintf("Read a background job's new output and state, or, without job, list yours. Pass each poll's cursor "+
			"back to read on; output past the job's window is reported dropped; an ended job names the file holding all of "+
			"it. wait_ms waits for output or the end, at most %d ms (larger values are clamped).",
			maxWait.Milliseconds()),
		PromptSnippet: "job_poll: read a background job's output and state, or list your jobs",
		Replay:        tool.ReplayNever,
		Mode:          tool.Concurrent,
	}, func(ctx context.Context, c *tool.Call, a pollArgs) tool.Outcome {
		wait, note := time.Duration(0), ""
		if a.WaitMs != nil {
			if *a.WaitMs < 0 {
				return tool.Fail(tool.CodeInvalidArguments, fmt.Sprintf("wait_ms is %d; it must be 0 or more (at most %d)", *a.WaitMs, maxWait.Milliseconds()))
			}
			if int64(*a.WaitMs) > maxWait.Milliseconds() {
				note = "note: " + tool.ClampNote("wait_ms", int64(*a.WaitMs), maxWait.Milliseconds()) + "\n"
			}
			wait = time.Duration(min(int64(*a.WaitMs), maxWait.Milliseconds())) * time.Millisecond
		}
		o := OwnerOf(c)
		if a.Job == "" {
			if a.Cursor != "" {
				return tool.Fail(tool.CodeInvalidArguments, "cursor needs job: a cursor belongs to one job")
			}
			l, err := j.List(ctx, o)
			if err != nil {
				return refusalOutcome(PollToolName, err)
			}
			return renderList(l, c.Clock())
		}
		id := ID(a.Job)
		cur, err := ParseCursor(id, a.Cursor)
		if err != nil {
			return refusalOutcome(PollToolName, err)
		}
		p, err := j.Poll(ctx, o, id, cur, wait)
		if err != nil {
			return refusalOutcome(PollToolName, err)
		}
		out := renderPoll(p, c.Clock())
		out.Text = note + out.Text
		return out
	})
}

type killArgs struct {
	Job string `json:"job"`
}

// killTool returns job_kill over j: end a job's whole process tree.
// Killing a job that already ended reports that end.
func killTool(j Jobs) tool.Tool {
	j = orNoPlane(j)
	return tool.Typed(tool.Tool{
		Name:          KillToolName,
		Title:         "Stop a background job",
		Description:   "Stop a background job and everything it started; a job already ended is reported as it ended.",
		PromptSnippet: "job_kill: stop a background job and everything it started",
		Replay:        tool.ReplayNever,
		Mode:          tool.Concurrent,
	}, func(ctx context.Context, c *tool.Call, a killArgs) tool.Outcome {
		if a.Job == "" {
			return tool.Fail(tool.CodeInvalidArguments, "job is empty; job_poll without arguments lists your jobs")
		}
		row, err := j.Kill(ctx, OwnerOf(c), ID(a.Job))
		if err != nil {
			return refusalOutcome(KillToolName, err)
		}
		return tool.Outcome{Text: rowHeadline(row, c.Clock()), Details: row}
	})
}

type sendArgs struct {
	Job   string `json:"job"`
	Input string `json:"input,omitempty" jsonschema:"sent as is: end lines with a newline"`
	EOF   bool   `json:"eof,omitempty" jsonschema:"then close standard input"`
}

// sendTool returns job_send over j: write to a job's standard input, and
// close it with eof.
func sendTool(j Jobs) tool.Tool {
	j = orNoPlane(j)
	return tool.Typed(tool.Tool{
		Name:  SendToolName,
		Title: "Send input to a background job",
		Description: fmt.Sprintf("Write to a background job's standard input, at most %d bytes per call; read the reply "+
			"with job_poll.", maxSendBytes),
		PromptSnippet: "job_send: write to a background job's standard input",
		Replay:        tool.ReplayNever,
		Mode:          tool.Concurrent,
	}, func(ctx context.Context, c *tool.Call, a sendArgs) tool.Outcome {
		if a.Job == "" {
			return tool.Fail(tool.CodeInvalidArguments, "job is empty; job_poll without arguments lists your jobs")
		}
		if len(a.Input) > maxSendBytes {
			return tool.Fail(tool.CodeInvalidArguments, fmt.Sprintf("input is %d bytes; at most %d are sent per call", len(a.Input), maxSendBytes))
		}
		if a.Input == "" && !a.EOF {
			return tool.Fail(tool.CodeInvalidArguments, "nothing to send: give input, eof, or both")
		}
		end := KeepStdinOpen
		if a.EOF {
			end = CloseStdin
		}
		s, err := j.Send(ctx, OwnerOf(c), ID(a.Job), []byte(a.Input), end)
		if err != nil {
			return refusalOutcome(SendToolName, err)
		}
		text := fmt.Sprintf("sent %d bytes to job %s", s.Bytes, a.Job)
		if s.Closed {
			text += "; its standard input is closed"
		}
		return tool.Outcome{Text: text, Details: s}
	})
}
