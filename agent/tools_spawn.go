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
	Purpose      string          `json:"purpose" jsonschema:"a few words, shown in its name"`
	Prompt       string          `json:"prompt" jsonschema:"all it needs to know"`
	Tools        []string        `json:"tools,omitempty" jsonschema:"tools you hold, replacing the default set (agent_note, agent_send kept)"`
	Model        modelName       `json:"model,omitempty"`
	ResultSchema json.RawMessage `json:"result_schema,omitempty" jsonschema:"an object schema of named properties, one non-null JSON type each"`
	DeadlineMs   int64           `json:"deadline_ms,omitempty" jsonschema:"run budget (default: the host's; larger values are clamped)"`
	Detach       bool            `json:"detach,omitempty" jsonschema:"outlive your run"`
}

type modelName string

// SpawnDetails is the Details of a successful agent_spawn.
type SpawnDetails struct {
	// Handle names the child's first run, in text form; Strand is the
	// child's name.
	Handle string `json:"handle"`
	Strand string `json:"strand"`
	// Tools is the child's real tool set, floor included.
	Tools []string `json:"tools"`
	// Model is the model the child was configured with ("" = host
	// routing).
	Model string `json:"model,omitempty"`
	// DeadlineMs is how many milliseconds were left until the first
	// run's deadline when the spawn answered.
	DeadlineMs int64 `json:"deadline_ms"`
	// Reconciled is true when the call site had already minted the child
	// (see Spawned.Reconciled).
	Reconciled bool `json:"reconciled,omitempty"`
	// Clamped is true when the Agency granted less than deadline_ms.
	Clamped bool `json:"clamped,omitempty"`
	// Purpose is the purpose the child was started for: on a reconciled
	// spawn, the first spawn's.
	Purpose string `json:"purpose"`
	// Result is the request's result contract in canonical form
	// (ResultSchema.JSON); absent when it named none.
	Result json.RawMessage `json:"result_schema,omitempty"`
}

// spawnTool returns agent_spawn: start a child of the calling strand. The
// child's name is minted from the call's coordinates; a replayed call
// reconciles onto the child it already made, so the tool is ReplaySafe. A
// replay whose purpose differs from the child's is told that its purpose
// was not taken, and shown the child's. A malformed result_schema is
// refused here, before the agency is asked.
func spawnTool(agency Agency) tool.Tool {
	var models []string
	if agency != nil {
		models = agency.ModelNames()
	}
	desc := "Start a sub-agent on one task, in parallel; it answers with a handle at once. Its final message is its " +
		"report: collect it with agent_wait, instruct it with agent_send, read its notes with agent_notes. With " +
		"result_schema it must also record a matching object (agent_note key \"result\"), which agent_wait checks. " +
		fmt.Sprintf("purpose at most %d bytes, prompt at most %d.", maxPurposeBytes, maxPromptBytes)
	modelSchema := &jsonschema.Schema{Type: "string", Description: "omit: no model choice here"}
	if len(models) > 0 {
		modelSchema = &jsonschema.Schema{Type: "string", Description: "omit for the host's choice"}
		for _, m := range models {
			modelSchema.Enum = append(modelSchema.Enum, m)
		}
	}
	return tool.Typed(tool.Tool{
		Name:          SpawnToolName,
		Title:         "Spawn a sub-agent",
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
	note, clamped := "", false
	if !sp.Reconciled {
		note, clamped = budgetClamp("deadline_ms", a.DeadlineMs, sp.Budget)
	}
	b.WriteString(note)
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
		DeadlineMs: msUntil(now, sp.Deadline), Reconciled: sp.Reconciled, Clamped: clamped, Purpose: sp.Purpose,
	}
	if req.Result != nil {
		fmt.Fprintf(&b, "\nresult contract: %s", req.Result)
		d.Result = req.Result.JSON()
	}
	return tool.Outcome{Text: b.String(), Details: d}
}
