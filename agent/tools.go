package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentloom/loom/todo"
	"github.com/agentloom/loom/tool"
)

// Tool names of the agent family.
const (
	SpawnToolName  = "agent_spawn"
	SendToolName   = "agent_send"
	WaitToolName   = "agent_wait"
	NoteToolName   = "agent_note"
	NotesToolName  = "agent_notes"
	RosterToolName = "agent_roster"
	TodoToolName   = "todo"
)

// FloorTools returns a child's communication floor: added back to an explicit
// tools list (when the parent holds them) so a child can always report.
// agent_spawn is never part of it.
func FloorTools() []string { return []string{NoteToolName, SendToolName} }

// maxReportTextBytes bounds how much of one child's report agent_wait
// shows in its text; Details carry the whole report.
const maxReportTextBytes = 16 << 10

// maxNotesTextBytes bounds the text of one agent_notes answer; Details
// carry every returned value whole.
const maxNotesTextBytes = 64 << 10

// Tools returns the agent family over agency, in the order a host should
// register them: agent_spawn, agent_send, agent_wait, agent_note,
// agent_notes, agent_roster and todo. They ask the broker for nothing
// (no Requirements). agent_send is ReplayNever, the rest ReplaySafe; all
// are Concurrent, since the Agency serializes what must be. A nil agency
// yields tools that answer every call with CodeAgencyUnavailable.
func Tools(agency Agency) []tool.Tool {
	return []tool.Tool{
		spawnTool(agency), sendTool(agency), waitTool(agency),
		NoteTool(agency), NotesTool(agency), rosterTool(agency), TodoTool(agency),
	}
}

// CallerOf builds the Caller of a model's own tool call from the call's
// coordinates. Nothing in it comes from the call's arguments.
func CallerOf(c *tool.Call) Caller {
	return Caller{Strand: c.Strand, OpID: c.OpID, StepID: c.StepID, SourceIndex: c.SourceIndex, Minter: Minter{Kind: MintedByToolCall}}
}

// RefusalDetails is the Details of an outcome reporting a Refusal. The
// refusal's code is the outcome's Code, never repeated here.
type RefusalDetails struct {
	// Reason is the Refusal's Reason: one sentence a model can act on.
	Reason string `json:"reason"`
}

// refusalOutcome renders err (a Refusal, or any other Agency failure) as
// an in-band error outcome whose Code is the refusal's.
func refusalOutcome(name string, err error) tool.Outcome {
	var r *Refusal
	var te *todo.Error
	switch {
	case errors.As(err, &r):
	case errors.As(err, &te):
		r = &Refusal{Code: te.Code, Reason: te.Reason, Err: err}
	default:
		r = &Refusal{Code: CodeAgencyUnavailable, Reason: "the agency failed: " + err.Error(), Err: err}
	}
	return tool.Fail(r.Code, fmt.Sprintf("%s refused (%s): %s", name, r.Code, r.Reason)).
		WithDetails(RefusalDetails{Reason: r.Reason})
}

func unavailable(name string) tool.Outcome {
	return refusalOutcome(name, refuse(CodeAgencyUnavailable, "this host offers no agency; sub-agents are not available"))
}

// guard wraps run so a nil agency answers in band.
func guard[A any](agency Agency, name string, run func(ctx context.Context, c *tool.Call, a A) tool.Outcome) func(ctx context.Context, c *tool.Call, a A) tool.Outcome {
	return func(ctx context.Context, c *tool.Call, a A) tool.Outcome {
		if agency == nil {
			return unavailable(name)
		}
		return run(ctx, c, a)
	}
}

// untilText renders a deadline as time remaining.
func untilText(now, deadline time.Time) string {
	if deadline.IsZero() {
		return "none"
	}
	d := deadline.Sub(now).Round(time.Second)
	if d <= 0 {
		return "passed"
	}
	return "in " + d.String()
}

func msUntil(now, deadline time.Time) int64 {
	if deadline.IsZero() {
		return 0
	}
	return max(deadline.Sub(now).Milliseconds(), 0)
}

func truncate(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut], true
}
