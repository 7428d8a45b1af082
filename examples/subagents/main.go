// Command subagents shows the agent tools end to end with no model: a
// scripted parent spawns three reviewers with a result contract, waits on
// all of them in one call, and reads what they wrote on the blackboard.
// Each child is a scripted Runner that "calls tools" through the same
// Registry a model would, as itself; the Agency governs that registry, so
// a child's call to a tool it does not hold is refused before it runs,
// and a spawn naming a tool the registry lacks is refused in band. Every
// outcome is printed as a model would read it. Then the same review runs
// as one code-mode program on the orchestration seam (runCodeMode): the
// fan-out the code_mode description shows.
//
//	go run ./examples/subagents
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/tool"
)

// areas are what the three children review; the last one reports its
// result with the wrong type, to show a contract mismatch.
var areas = []string{"auth", "storage", "billing"}

// resultSchema is the contract every child's result must meet.
const resultSchema = `{"type":"object","properties":{
	"area":{"type":"string","description":"the area reviewed"},
	"issues":{"type":"integer","description":"how many issues were found"}}}`

func main() {
	err := run(context.Background(), os.Stdout)
	if err == nil {
		err = runCodeMode(context.Background(), os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "subagents:", err)
		os.Exit(1)
	}
}

// run plays the whole scenario, writing each outcome to w.
func run(ctx context.Context, w io.Writer) error {
	var reg *tool.Registry
	// The runner plays each child: two agent_note calls through the
	// registry under the child's own coordinates, then a final answer.
	runner := agent.RunnerFunc(func(ctx context.Context, t agent.Turn) (string, error) {
		area := strings.TrimPrefix(t.Prompt, "Review ")
		issues := len(area) % 3
		child := &tool.Call{Strand: t.Strand, OpID: t.Operation, StepID: "step-1"}
		// A child holds only the tools its spawn gave it (here just the
		// floor, agent_note and agent_send): anything else is refused
		// before it runs.
		if out := reg.Dispatch(ctx, child.At(t.Operation, "step-0", 0), agent.RosterToolName, json.RawMessage(`{}`)); !out.IsError {
			return "", fmt.Errorf("a child ran %s, which it does not hold", agent.RosterToolName)
		} else if out.Code != tool.CodeToolNotHeld {
			return "", fmt.Errorf("child's %s: %s", agent.RosterToolName, out.Text)
		}
		findings, _ := json.Marshal(map[string]any{"area": area, "notes": fmt.Sprintf("%d issue(s) in %s", issues, area)})
		if out := reg.Dispatch(ctx, child.At(t.Operation, "step-1", 0), agent.NoteToolName,
			json.RawMessage(fmt.Sprintf(`{"key":"findings","value":%s}`, findings))); out.IsError {
			return "", fmt.Errorf("child note: %s", out.Text)
		}
		var result any = map[string]any{"area": area, "issues": issues}
		if area == "billing" {
			result = map[string]any{"area": area, "issues": "two"} // breaks the contract
		}
		value, _ := json.Marshal(result)
		if out := reg.Dispatch(ctx, child.At(t.Operation, "step-1", 1), agent.NoteToolName,
			json.RawMessage(fmt.Sprintf(`{"key":%q,"value":%s}`, agent.ResultNoteKey, value))); out.IsError {
			return "", fmt.Errorf("child result: %s", out.Text)
		}
		return fmt.Sprintf("Reviewed %s: found %d issue(s); details are in my findings note.", area, issues), nil
	})
	agency := agent.NewAgency(runner, agent.Options{})
	defer agency.Close()
	var err error
	if reg, err = tool.NewRegistry(agent.Tools(agency)...); err != nil {
		return err
	}
	agency.Govern(reg)

	// The parent's turn: one step with three spawns, then one wait.
	parent := &tool.Call{Strand: "main", OpID: "op-1"}
	show := func(name string, c *tool.Call, args string) tool.Outcome {
		out := reg.Dispatch(ctx, c, name, json.RawMessage(args))
		status := "ok"
		if out.IsError {
			status = "error"
		}
		fmt.Fprintf(w, "> %s %s\n[%s]\n%s\n\n", name, args, status, out.Text)
		return out
	}
	var handles []string
	for i, area := range areas {
		args, _ := json.Marshal(map[string]any{
			"purpose":       "review " + area,
			"prompt":        "Review " + area,
			"result_schema": json.RawMessage(resultSchema),
			"tools":         []string{},
		})
		out := show(agent.SpawnToolName, parent.At("op-1", "step-1", i), string(args))
		d, ok := out.Details.(agent.SpawnDetails)
		if !ok {
			return fmt.Errorf("spawn %s: %s", area, out.Text)
		}
		handles = append(handles, d.Handle)
	}
	waitArgs, _ := json.Marshal(map[string]any{"handles": handles, "wait_ms": 5000})
	if out := show(agent.WaitToolName, parent.At("op-1", "step-2", 0), string(waitArgs)); out.IsError {
		return fmt.Errorf("wait: %s", out.Text)
	}
	prefix := strings.TrimSuffix(handles[0], "#run-1")
	prefix = prefix[:strings.LastIndex(prefix, "/")+1] // every child of main
	notesArgs, _ := json.Marshal(map[string]any{"prefix": prefix})
	if out := show(agent.NotesToolName, parent.At("op-1", "step-3", 0), string(notesArgs)); out.IsError {
		return fmt.Errorf("notes: %s", out.Text)
	}
	if out := show(agent.RosterToolName, parent.At("op-1", "step-3", 1), `{}`); out.IsError {
		return fmt.Errorf("roster: %s", out.Text)
	}
	// A spawn naming a tool this host does not offer is refused in band,
	// listing the tools that exist.
	show(agent.SpawnToolName, parent.At("op-1", "step-4", 1), `{"purpose":"typo","prompt":"p","tools":["fs_raed"]}`)
	// A handle the parent does not own is refused in band.
	show(agent.WaitToolName, parent.At("op-1", "step-4", 0), `{"handles":["sub:other/x-0000000000000000#run-1"]}`)
	return nil
}
