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

// MaxSendBytes bounds the input one job_send writes.
const MaxSendBytes = 64 << 10

// Tools returns job_poll, job_kill and job_send over j, in that order: a
// host registers all three or none (a job a model can start but not stop
// would be a leak). A nil j is NoPlane(). Jobs are started by bash's mode
// argument, not by a tool here.
func Tools(j Jobs) []tool.Tool {
	return []tool.Tool{PollTool(j), KillTool(j), SendTool(j)}
}

type pollArgs struct {
	Job    string `json:"job,omitempty" jsonschema:"handle of the job (from bash or a listing); omit to list your jobs"`
	Cursor string `json:"cursor,omitempty" jsonschema:"the cursor the previous poll of this job returned; omit to read from the oldest output still kept"`
	WaitMs *int   `json:"wait_ms,omitempty" jsonschema:"how long to wait for new output or the end, in milliseconds; 0 (default) answers at once"`
}

// PollTool returns job_poll over j: read a job's new output and state, or
// list the caller's jobs. The wait is clamped to j.MaxWait(), the number
// the description states. A poll of a running job is a success; its text
// and Details.Pending come from one predicate (State.Pending).
func PollTool(j Jobs) tool.Tool {
	j = orNoPlane(j)
	maxWait := j.MaxWait()
	return tool.Typed(tool.Tool{
		Name: PollToolName,
		Description: fmt.Sprintf("Read a background job's new output and state (started by bash with mode \"background\", or by "+
			"mode \"auto\" when it outlived its timeout). Pass back the cursor each poll returns to read on without repeats; "+
			"output older than the job's window is reported as dropped, and an ended job names the file holding its whole "+
			"output when it outgrew the window. wait_ms waits for new output or the end, at most %d ms. Without job, lists "+
			"your jobs.", maxWait.Milliseconds()),
		PromptSnippet: "job_poll: read a background job's output and state, or list your jobs",
		Replay:        tool.ReplayNever,
		Mode:          tool.Concurrent,
	}, func(ctx context.Context, c *tool.Call, a pollArgs) tool.Outcome {
		wait := time.Duration(0)
		if a.WaitMs != nil {
			if *a.WaitMs < 0 {
				return tool.Fail(tool.CodeInvalidArguments, fmt.Sprintf("wait_ms is %d; it must be 0 or more (at most %d)", *a.WaitMs, maxWait.Milliseconds()))
			}
			wait = min(time.Duration(*a.WaitMs)*time.Millisecond, maxWait)
		}
		o := OwnerOf(c)
		if a.Job == "" {
			if a.Cursor != "" {
				return tool.Fail(tool.CodeInvalidArguments, "cursor needs job: a cursor belongs to one job")
			}
			l, err := j.List(ctx, o)
			if err != nil {
				return RefusalOutcome(PollToolName, err)
			}
			return renderList(l, c.Clock())
		}
		id := ID(a.Job)
		cur, err := ParseCursor(id, a.Cursor)
		if err != nil {
			return RefusalOutcome(PollToolName, err)
		}
		p, err := j.Poll(ctx, o, id, cur, wait)
		if err != nil {
			return RefusalOutcome(PollToolName, err)
		}
		return renderPoll(p, c.Clock())
	})
}

type killArgs struct {
	Job string `json:"job" jsonschema:"handle of the job to stop"`
}

// KillTool returns job_kill over j: end a job's whole process tree.
// Killing a job that already ended reports that end.
func KillTool(j Jobs) tool.Tool {
	j = orNoPlane(j)
	return tool.Typed(tool.Tool{
		Name:          KillToolName,
		Description:   "Stop a background job and every process it started. A job that already ended is reported as it ended.",
		PromptSnippet: "job_kill: stop a background job and everything it started",
		Replay:        tool.ReplayNever,
		Mode:          tool.Concurrent,
	}, func(ctx context.Context, c *tool.Call, a killArgs) tool.Outcome {
		if a.Job == "" {
			return tool.Fail(tool.CodeInvalidArguments, "job is empty; job_poll without arguments lists your jobs")
		}
		row, err := j.Kill(ctx, OwnerOf(c), ID(a.Job))
		if err != nil {
			return RefusalOutcome(KillToolName, err)
		}
		return tool.Outcome{Text: rowHeadline(row, c.Clock()), Details: row}
	})
}

type sendArgs struct {
	Job   string `json:"job" jsonschema:"handle of the job to write to"`
	Input string `json:"input,omitempty" jsonschema:"text to write to the job's standard input, exactly (add a trailing newline to end a line)"`
	EOF   bool   `json:"eof,omitempty" jsonschema:"close the job's standard input after the input, so it reads end-of-file"`
}

// SendTool returns job_send over j: write to a job's standard input, and
// close it with eof.
func SendTool(j Jobs) tool.Tool {
	j = orNoPlane(j)
	return tool.Typed(tool.Tool{
		Name: SendToolName,
		Description: fmt.Sprintf("Write text to a background job's standard input (at most %d bytes per call); eof closes "+
			"it afterwards so the job reads end-of-file. Read the reply with job_poll.", MaxSendBytes),
		PromptSnippet: "job_send: write to a background job's standard input",
		Replay:        tool.ReplayNever,
		Mode:          tool.Concurrent,
	}, func(ctx context.Context, c *tool.Call, a sendArgs) tool.Outcome {
		if a.Job == "" {
			return tool.Fail(tool.CodeInvalidArguments, "job is empty; job_poll without arguments lists your jobs")
		}
		if len(a.Input) > MaxSendBytes {
			return tool.Fail(tool.CodeInvalidArguments, fmt.Sprintf("input is %d bytes; at most %d are sent per call", len(a.Input), MaxSendBytes))
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
			return RefusalOutcome(SendToolName, err)
		}
		text := fmt.Sprintf("sent %d bytes to job %s", s.Bytes, a.Job)
		if s.Closed {
			text += "; its standard input is closed"
		}
		return tool.Outcome{Text: text, Details: s}
	})
}
