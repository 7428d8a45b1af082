package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/agentloom/loom/tool"
	"github.com/google/jsonschema-go/jsonschema"
)

type spawnArgs struct {
	Purpose      string          `json:"purpose" jsonschema:"what the child is for, in a few words; it decorates the child's name"`
	Prompt       string          `json:"prompt" jsonschema:"the child's first message: everything it needs to do the work"`
	Tools        []string        `json:"tools,omitempty" jsonschema:"the child's tools, replacing the default set; agent_note and agent_send are always added back; only tools you hold"`
	Model        modelName       `json:"model,omitempty" jsonschema:"a model name from the offered list; omit for the host's choice"`
	ResultSchema json.RawMessage `json:"result_schema,omitempty" jsonschema:"optional contract for the child's result: an object schema of named properties with one type each (string, number, integer, boolean, array, object); the child records the value with agent_note key 'result'"`
	DeadlineMs   int64           `json:"deadline_ms,omitempty" jsonschema:"the child's run budget in milliseconds; omit for the default"`
	Detach       bool            `json:"detach,omitempty" jsonschema:"keep the child running after your run ends"`
}

type modelName string

// SpawnDetails is the Details of a successful agent_spawn.
type SpawnDetails struct {
	Handle     string          `json:"handle"`
	Strand     string          `json:"strand"`
	Tools      []string        `json:"tools"`
	Model      string          `json:"model,omitempty"`
	DeadlineMs int64           `json:"deadline_ms"`
	Reconciled bool            `json:"reconciled,omitempty"`
	Result     json.RawMessage `json:"result_schema,omitempty"`
}

// SpawnTool returns agent_spawn: start a child of the calling strand. The
// child's name is minted from the call's coordinates; a replayed call
// reconciles onto the child it already made, so the tool is ReplaySafe.
// A malformed result_schema is refused here, before the agency is asked.
func SpawnTool(agency Agency) tool.Tool {
	var models []string
	maxWait := 0
	if agency != nil {
		models, maxWait = agency.ModelNames(), agency.MaxWaitMs()
	}
	desc := "Start a sub-agent (a child strand) to work on one task in parallel with you. It returns a handle at once; " +
		"use agent_wait to collect the child's report, agent_send to give it more instructions, agent_notes to read what it recorded. " +
		"The child's final message is its report. With result_schema the child must also record a JSON object matching it " +
		"(agent_note key \"result\"), and agent_wait reports whether it did."
	if maxWait > 0 {
		desc += fmt.Sprintf(" A single wait lasts at most %d ms.", maxWait)
	}
	modelSchema := &jsonschema.Schema{Type: "string", Description: "omit: this host offers no model choice"}
	if len(models) > 0 {
		modelSchema = &jsonschema.Schema{Type: "string", Description: "one of the offered model names; omit for the host's choice"}
		for _, m := range models {
			modelSchema.Enum = append(modelSchema.Enum, m)
		}
	}
	return tool.Typed(tool.Tool{
		Name:          SpawnToolName,
		Description:   desc,
		PromptSnippet: "agent_spawn: start a sub-agent on a task and get a handle to wait on",
		Replay:        tool.ReplaySafe,
		Mode:          tool.Concurrent,
	}, guard(agency, SpawnToolName, func(ctx context.Context, c *tool.Call, a spawnArgs) tool.Outcome {
		return runSpawn(ctx, agency, c, a)
	}),
		tool.WithTypeSchema(reflect.TypeFor[modelName](), modelSchema),
		tool.WithTypeSchema(reflect.TypeFor[json.RawMessage](), &jsonschema.Schema{
			Types: []string{"object", "string"},
		}))
}

func runSpawn(ctx context.Context, agency Agency, c *tool.Call, a spawnArgs) tool.Outcome {
	req := SpawnRequest{
		Purpose: a.Purpose, Prompt: a.Prompt, Tools: a.Tools, Model: string(a.Model),
		Deadline: time.Duration(a.DeadlineMs) * time.Millisecond, Detach: a.Detach,
	}
	if a.DeadlineMs < 0 {
		return refusalOutcome(SpawnToolName, refuse(CodeInvalidRequest, "deadline_ms must not be negative"))
	}
	if len(a.ResultSchema) > 0 && string(a.ResultSchema) != "null" {
		s, err := ParseResultSchema(a.ResultSchema)
		if err != nil {
			return refusalOutcome(SpawnToolName, err)
		}
		req.Result = s
	}
	sp, err := agency.Spawn(ctx, CallerOf(c), req)
	if err != nil {
		return refusalOutcome(SpawnToolName, err)
	}
	now := c.Clock()
	var b strings.Builder
	if sp.Reconciled {
		fmt.Fprintf(&b, "this call already spawned %s; nothing new was started.\n", sp.Handle.Strand)
	} else {
		fmt.Fprintf(&b, "spawned %s.\n", sp.Handle.Strand)
	}
	fmt.Fprintf(&b, "handle: %s (wait on it with agent_wait)\n", sp.Handle)
	tools := "every tool you hold"
	if sp.Tools != nil {
		tools = strings.Join(sp.Tools, ", ")
	}
	fmt.Fprintf(&b, "tools: %s\n", tools)
	if sp.Model != "" {
		fmt.Fprintf(&b, "model: %s\n", sp.Model)
	}
	fmt.Fprintf(&b, "deadline: %s", untilText(now, sp.Deadline))
	d := SpawnDetails{
		Handle: sp.Handle.String(), Strand: sp.Handle.Strand, Tools: sp.Tools, Model: sp.Model,
		DeadlineMs: msUntil(now, sp.Deadline), Reconciled: sp.Reconciled,
	}
	if req.Result != nil {
		fmt.Fprintf(&b, "\nresult contract: %s", req.Result)
		d.Result = req.Result.JSON()
	}
	return tool.Outcome{Text: b.String(), Details: d}
}

type sendArgs struct {
	To       string `json:"to" jsonschema:"the handle (or strand name) of a sub-agent you spawned, or one of its descendants"`
	Message  string `json:"message" jsonschema:"what to tell it"`
	BudgetMs int64  `json:"budget_ms,omitempty" jsonschema:"if the sub-agent is idle this starts a new run; its budget in milliseconds (omit for the default)"`
}

// SendDetails is the Details of a successful agent_send.
type SendDetails struct {
	Delivery   string `json:"delivery"`
	Handle     string `json:"handle"`
	DeadlineMs int64  `json:"deadline_ms"`
}

// SendTool returns agent_send: message a descendant. A running descendant
// reads it at its next turn; an idle one starts a new run (a continuation)
// under a new handle. ReplayNever: a replay would deliver twice.
func SendTool(agency Agency) tool.Tool {
	return tool.Typed(tool.Tool{
		Name: SendToolName,
		Description: "Send a message to a sub-agent you spawned (or one of its descendants). " +
			"If it is still running, it reads the message at its next turn and the handle you hold still names that run. " +
			"If it has finished, the message starts a new run of the same sub-agent under a NEW handle, which is the one to wait on; " +
			"the old handle keeps reporting the earlier run. Use agent_send to continue a sub-agent, agent_wait to observe one run.",
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
		if a.BudgetMs < 0 {
			return refusalOutcome(SendToolName, refuse(CodeInvalidRequest, "budget_ms must not be negative"))
		}
		d, err := agency.Send(ctx, CallerOf(c), SendRequest{To: to, Message: a.Message, Budget: time.Duration(a.BudgetMs) * time.Millisecond})
		if err != nil {
			return refusalOutcome(SendToolName, err)
		}
		now := c.Clock()
		var text string
		switch d.Kind {
		case Started:
			text = fmt.Sprintf("%s was idle: the message started a new run.\nhandle: %s (wait on this one; earlier handles report earlier runs)\ndeadline: %s",
				d.Handle.Strand, d.Handle, untilText(now, d.Deadline))
		default:
			text = fmt.Sprintf("delivered to %s, which is running; it reads the message at its next turn.\nhandle: %s\ndeadline: %s",
				d.Handle.Strand, d.Handle, untilText(now, d.Deadline))
		}
		return tool.Outcome{Text: text, Details: SendDetails{Delivery: string(d.Kind), Handle: d.Handle.String(), DeadlineMs: msUntil(now, d.Deadline)}}
	}))
}

type waitArgs struct {
	Handles []string `json:"handles" jsonschema:"handles from agent_spawn or agent_send; all are waited on against one deadline"`
	WaitMs  *int64   `json:"wait_ms,omitempty" jsonschema:"how long to wait in milliseconds; omitted or larger values mean the maximum"`
}

// WaitDetails is the Details of agent_wait: one entry per handle, in the
// order asked.
type WaitDetails struct {
	WaitedMs int64        `json:"waited_ms"`
	Clamped  bool         `json:"clamped,omitempty"`
	Results  []WaitResult `json:"results"`
}

// WaitResult is one handle's entry in WaitDetails.
type WaitResult struct {
	Handle      string          `json:"handle"`
	Pending     bool            `json:"pending"`
	State       string          `json:"state"`
	AbortReason string          `json:"abort_reason,omitempty"`
	Report      string          `json:"report,omitempty"`
	Result      string          `json:"result,omitempty"`
	Value       json.RawMessage `json:"value,omitempty"`
	Mismatch    *Mismatch       `json:"mismatch,omitempty"`
	DeadlineMs  int64           `json:"deadline_ms"`
}

// WaitTool returns agent_wait: wait for several runs against one
// deadline. wait_ms is clamped to the agency's MaxWaitMs (the clamp is
// said in the text); a run still going is reported pending, which is a
// success: wait again.
func WaitTool(agency Agency) tool.Tool {
	maxWait := 0
	if agency != nil {
		maxWait = agency.MaxWaitMs()
	}
	return tool.Typed(tool.Tool{
		Name: WaitToolName,
		Description: fmt.Sprintf("Wait for sub-agent runs to finish and read their reports. Pass every handle you are waiting for in one call: "+
			"they share one deadline of at most %d ms (wait_ms; larger values are clamped). A run still going is reported as pending; "+
			"call again to keep waiting. At most %d handles per call.", maxWait, MaxWaitHandles),
		PromptSnippet: "agent_wait: wait for sub-agents' reports",
		Replay:        tool.ReplaySafe,
		Mode:          tool.Concurrent,
	}, guard(agency, WaitToolName, func(ctx context.Context, c *tool.Call, a waitArgs) tool.Outcome {
		return runWait(ctx, agency, c, a)
	}))
}

func runWait(ctx context.Context, agency Agency, c *tool.Call, a waitArgs) tool.Outcome {
	if len(a.Handles) == 0 {
		return refusalOutcome(WaitToolName, refuse(CodeInvalidRequest, "handles is empty; pass the handles agent_spawn or agent_send returned"))
	}
	if len(a.Handles) > MaxWaitHandles {
		return refusalOutcome(WaitToolName, refuse(CodeInvalidRequest, "%d handles, more than %d; wait on fewer at once", len(a.Handles), MaxWaitHandles))
	}
	handles := make([]Handle, len(a.Handles))
	for i, s := range a.Handles {
		h, err := ParseHandle(s)
		if err != nil {
			return refusalOutcome(WaitToolName, fmt.Errorf("handles[%d]: %w", i, err))
		}
		handles[i] = h
	}
	maxMs := int64(agency.MaxWaitMs())
	waitMs, clamped := maxMs, false
	if a.WaitMs != nil {
		switch {
		case *a.WaitMs < 0:
			return refusalOutcome(WaitToolName, refuse(CodeWaitTooLong, "wait_ms must not be negative"))
		case *a.WaitMs > maxMs:
			clamped = true
		default:
			waitMs = *a.WaitMs
		}
	}
	start := c.Clock()
	ws, err := agency.Wait(ctx, CallerOf(c), handles, time.Duration(waitMs)*time.Millisecond)
	if err != nil {
		return refusalOutcome(WaitToolName, err)
	}
	now := c.Clock()
	d := WaitDetails{WaitedMs: now.Sub(start).Milliseconds(), Clamped: clamped}
	var b strings.Builder
	if clamped {
		fmt.Fprintf(&b, "wait_ms %d is more than the maximum; waited at most %d ms.\n", *a.WaitMs, maxMs)
	}
	pending := 0
	for i, w := range ws {
		if i > 0 {
			b.WriteString("\n")
		}
		r := WaitResult{Handle: w.Handle.String(), Pending: !w.Ready, State: string(w.State),
			AbortReason: string(w.AbortReason), DeadlineMs: msUntil(now, w.Deadline)}
		if !w.Ready {
			pending++
			fmt.Fprintf(&b, "%s: pending (still running; deadline %s)\n", w.Handle, untilText(now, w.Deadline))
			d.Results = append(d.Results, r)
			continue
		}
		r.Report = w.Report
		state := string(w.State)
		if w.State == Aborted && w.AbortReason != "" {
			state += " (" + string(w.AbortReason) + ")"
		}
		report, cut := truncate(w.Report, MaxReportTextBytes)
		fmt.Fprintf(&b, "%s: %s\nreport:\n%s\n", w.Handle, state, report)
		if cut {
			fmt.Fprintf(&b, "[report truncated at %d bytes; the whole report is in details]\n", MaxReportTextBytes)
		}
		switch w.Result.Kind {
		case ResultValid:
			fmt.Fprintf(&b, "result: %s\n", w.Result.Value)
		case ResultMissing:
			b.WriteString("result: MISSING - the child finished without recording agent_note \"result\"\n")
		case ResultMismatched:
			fmt.Fprintf(&b, "result: MISMATCH - %s\n", w.Result.Mismatch.Describe())
		}
		if w.Result.Kind != NoResultAsked && w.Result.Kind != "" {
			r.Result, r.Value, r.Mismatch = string(w.Result.Kind), w.Result.Value, w.Result.Mismatch
		}
		d.Results = append(d.Results, r)
	}
	if pending > 0 {
		fmt.Fprintf(&b, "\n%d of %d still pending; call agent_wait again to keep waiting.", pending, len(ws))
	}
	return tool.Outcome{Text: strings.TrimRight(b.String(), "\n"), Details: d}
}
