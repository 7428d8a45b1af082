package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentloom/loom/tool"
)

type sendArgs struct {
	To       string `json:"to" jsonschema:"a handle or strand name"`
	Message  string `json:"message"`
	BudgetMs int64  `json:"budget_ms,omitempty" jsonschema:"a new run's budget (default: the host's; larger values are clamped)"`
}

// SendDetails is the Details of a successful agent_send.
type SendDetails struct {
	// Delivery is what the send did (a DeliveryKind).
	Delivery string `json:"delivery"`
	// Handle is the run the message reached, in text form.
	Handle string `json:"handle"`
	// DeadlineMs is how many milliseconds were left until that run's
	// deadline when the send answered.
	DeadlineMs int64 `json:"deadline_ms"`
	// Clamped is true when the Agency granted a new run less than
	// budget_ms.
	Clamped bool `json:"clamped,omitempty"`
}

// sendTool returns agent_send: message a descendant. A running descendant
// reads it at its next turn; an idle one starts a new run (a continuation)
// under a new handle. ReplayNever: a replay would deliver twice.
func sendTool(agency Agency) tool.Tool {
	return tool.Typed(tool.Tool{
		Name:  SendToolName,
		Title: "Message a sub-agent",
		Description: "Message a sub-agent you spawned or its descendant. A running one reads it next turn (your handle still " +
			"names that run); a finished one starts a new run under a NEW handle to wait on. " +
			fmt.Sprintf("At most %d bytes.", maxPromptBytes),
		PromptSnippet: "agent_send: message or continue a sub-agent",
		Replay:        tool.ReplayNever,
		Mode:          tool.Concurrent,
	}, guard(agency, SendToolName, func(ctx context.Context, c *tool.Call, a sendArgs) tool.Outcome {
		to := strings.TrimSpace(a.To)
		if strings.ContainsAny(to, "#@") {
			h, err := ParseHandle(to)
			if err != nil {
				return refusalOutcome(SendToolName, err)
			}
			to = h.Strand
		}
		req := SendRequest{To: to, Message: a.Message, Budget: time.Duration(a.BudgetMs) * time.Millisecond}
		if err := req.Check(); err != nil {
			return refusalOutcome(SendToolName, err)
		}
		d, err := agency.Send(ctx, CallerOf(c), req)
		if err != nil {
			return refusalOutcome(SendToolName, err)
		}
		now := c.Clock()
		var text string
		var clamped bool
		switch d.Kind {
		case Started:
			text, clamped = budgetClamp("budget_ms", a.BudgetMs, d.Budget)
			text += fmt.Sprintf("%s was idle: the message started a new run.\nhandle: %s (wait on this one; earlier handles report earlier runs)\ndeadline: %s",
				d.Handle.Strand, d.Handle, untilText(now, d.Deadline))
		default:
			if a.BudgetMs > 0 {
				text = "note: budget_ms ignored: the running run keeps its own deadline\n"
			}
			text += fmt.Sprintf("delivered to %s, which is running; it reads the message at its next turn.\nhandle: %s\ndeadline: %s",
				d.Handle.Strand, d.Handle, untilText(now, d.Deadline))
		}
		return tool.Outcome{Text: text, Details: SendDetails{Delivery: string(d.Kind), Handle: d.Handle.String(), DeadlineMs: msUntil(now, d.Deadline), Clamped: clamped}}
	}))
}
