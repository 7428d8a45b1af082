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
	Handle     string   `json:"handle"`
	Strand     string   `json:"strand"`
	Tools      []string `json:"tools"`
	Model      string   `json:"model,omitempty"`
	DeadlineMs int64    `json:"deadline_ms"`
	Reconciled bool     `json:"reconciled,omitempty"`
	// Purpose is the purpose the child was started for: on a reconciled
	// spawn, the first spawn's.
	Purpose string          `json:"purpose"`
	Result  json.RawMessage `json:"result_schema,omitempty"`
}

// SpawnTool returns agent_spawn: start a child of the calling strand. The
// child's name is minted from the call's coordinates; a replayed call
// reconciles onto the child it already made, so the tool is ReplaySafe.
// A replay whose purpose differs from the child's is told that its
// purpose was not taken, and shown the child's.
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
		"(agent_note key \"result\"), and agent_wait reports whether it did. " +
		fmt.Sprintf("purpose: at most %d bytes; prompt: at most %d bytes.", MaxPurposeBytes, MaxPromptBytes)
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
		tool.TypeSchema{Type: reflect.TypeFor[modelName](), Schema: modelSchema},
		tool.TypeSchema{Type: reflect.TypeFor[json.RawMessage](), Schema: &jsonschema.Schema{
			Types: []string{"object", "string"},
		}})
}

func runSpawn(ctx context.Context, agency Agency, c *tool.Call, a spawnArgs) tool.Outcome {
	req := SpawnRequest{
		Purpose: a.Purpose, Prompt: a.Prompt, Tools: a.Tools, Model: string(a.Model),
		Deadline: time.Duration(a.DeadlineMs) * time.Millisecond, Detach: a.Detach,
	}
	if err := req.Check(); err != nil {
		return refusalOutcome(SpawnToolName, err)
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
	switch {
	case sp.Reconciled && sp.Purpose != strings.TrimSpace(a.Purpose):
		fmt.Fprintf(&b, "this call already spawned %s for %s; nothing new was started, and the purpose %s was not taken.\n",
			sp.Handle.Strand, quote(sp.Purpose), quote(strings.TrimSpace(a.Purpose)))
	case sp.Reconciled:
		fmt.Fprintf(&b, "this call already spawned %s; nothing new was started.\n", sp.Handle.Strand)
	default:
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
		DeadlineMs: msUntil(now, sp.Deadline), Reconciled: sp.Reconciled, Purpose: sp.Purpose,
	}
	if req.Result != nil {
		fmt.Fprintf(&b, "\nresult contract: %s", req.Result)
		d.Result = req.Result.JSON()
	}
	return tool.Outcome{Text: b.String(), Details: d}
}
