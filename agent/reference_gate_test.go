package agent

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/tool"
)

// counted wraps t so every run is counted in runs.
func counted(t tool.Tool, runs *atomic.Int64) tool.Tool {
	inner := t.Run
	t.Run = func(ctx context.Context, c *tool.Call, args json.RawMessage) tool.Outcome {
		runs.Add(1)
		return inner(ctx, c, args)
	}
	return t
}

// governed builds a Reference governing a registry with the agent tools,
// the real bash tool and fs_read, every run of bash and fs_read counted.
// The child runner calls bash and then fs_read through the registry as
// itself and reports both outcomes on calls.
func governed(t *testing.T) (a *Reference, reg *tool.Registry, bashRuns, readRuns *atomic.Int64, calls chan [2]tool.Outcome) {
	t.Helper()
	bashRuns, readRuns = new(atomic.Int64), new(atomic.Int64)
	calls = make(chan [2]tool.Outcome, 4)
	a = NewAgency(RunnerFunc(func(ctx context.Context, turn Turn) (string, error) {
		c := &tool.Call{Strand: turn.Strand, OpID: turn.Operation, StepID: "s1"}
		bash := reg.Dispatch(ctx, c, "bash", json.RawMessage(`{"command":"id"}`))
		read := reg.Dispatch(ctx, c.At(turn.Operation, "s1", 1), "fs_read", json.RawMessage(`{"path":"x"}`))
		calls <- [2]tool.Outcome{bash, read}
		return "done", nil
	}), Options{})
	t.Cleanup(func() { a.Close() })
	var err error
	reg, err = tool.NewRegistry(append(Tools(a), counted(job.BashTool(nil), bashRuns), counted(tool.ReadTool(), readRuns))...)
	if err != nil {
		t.Fatal(err)
	}
	a.Govern(reg)
	return a, reg, bashRuns, readRuns, calls
}

// TestGovernedChildCannotRunUnheldTool: a child spawned with tools
// ["fs_read"] is refused bash by the shared registry before bash runs,
// while its fs_read runs; the parent (a root holding every tool) runs
// bash through the same registry (the control).
func TestGovernedChildCannotRunUnheldTool(t *testing.T) {
	t.Parallel()
	a, reg, bashRuns, readRuns, calls := governed(t)
	parent := &tool.Call{Strand: "main", OpID: "op-1", StepID: "s1"}
	out := reg.Dispatch(bg, parent, SpawnToolName, json.RawMessage(`{"purpose":"narrow","prompt":"p","tools":["fs_read"]}`))
	sp, ok := out.Details.(SpawnDetails)
	if !ok {
		t.Fatalf("spawn: %+v", out)
	}
	got := <-calls
	bash, read := got[0], got[1]
	d, ok := bash.Details.(tool.NotHeldDetails)
	if !bash.IsError || !ok || bash.Code != tool.CodeToolNotHeld || d.Tool != "bash" || d.Strand != sp.Strand {
		t.Fatalf("child's bash: %+v, want tool_not_held for %s", bash, sp.Strand)
	}
	if !slices.Contains(d.Held, "fs_read") || slices.Contains(d.Held, "bash") || !strings.Contains(bash.Text, "fs_read") {
		t.Errorf("refusal lists held tools %v (%q), want fs_read and not bash", d.Held, bash.Text)
	}
	if n := bashRuns.Load(); n != 0 {
		t.Fatalf("bash ran %d times for a child that does not hold it", n)
	}
	if _, notHeld := read.Details.(tool.NotHeldDetails); notHeld || readRuns.Load() != 1 {
		t.Fatalf("child's fs_read was refused or did not run: %+v (%d runs)", read, readRuns.Load())
	}
	h, _ := ParseHandle(sp.Handle)
	waitOne(t, a, root("main", 2), h)

	out = reg.Dispatch(bg, parent.At("op-1", "s2", 0), "bash", json.RawMessage(`{"command":"id"}`))
	if _, notHeld := out.Details.(tool.NotHeldDetails); notHeld || bashRuns.Load() != 1 {
		t.Fatalf("parent's bash was refused or did not run: %+v (%d runs)", out, bashRuns.Load())
	}
}

// TestGovernedSpawnRefusesUnknownTool: a spawn naming a tool the registry
// does not offer is refused in band with unknown_spawn_tool, listing the valid
// names, and starts nothing; the same spawn with a real name starts.
func TestGovernedSpawnRefusesUnknownTool(t *testing.T) {
	t.Parallel()
	a, reg, _, _, calls := governed(t)
	parent := &tool.Call{Strand: "main", OpID: "op-1", StepID: "s1"}
	out := reg.Dispatch(bg, parent, SpawnToolName, json.RawMessage(`{"purpose":"typo","prompt":"p","tools":["fs_raed"]}`))
	d, ok := out.Details.(RefusalDetails)
	if !out.IsError || !ok || out.Code != CodeUnknownSpawnTool || !strings.Contains(out.Text, d.Reason) {
		t.Fatalf("spawn with an unknown tool: %+v", out)
	}
	for _, want := range []string{`"fs_raed"`, "fs_read", "bash", SpawnToolName} {
		if !strings.Contains(out.Text, want) {
			t.Errorf("refusal %q does not mention %s", out.Text, want)
		}
	}
	if peers, _ := a.Roster(bg, root("main", 1)); len(peers) != 0 {
		t.Fatalf("a refused spawn started %d children", len(peers))
	}
	out = reg.Dispatch(bg, parent.At("op-1", "s2", 0), SpawnToolName, json.RawMessage(`{"purpose":"typo","prompt":"p","tools":["fs_read"]}`))
	if out.IsError {
		t.Fatalf("control spawn with a real tool name: %+v", out)
	}
	<-calls
}

// TestGovernedUnknownStrandHoldsNothing: a call naming a sub-agent the
// Agency never minted, or no strand at all, is refused: the gate fails
// closed.
func TestGovernedUnknownStrandHoldsNothing(t *testing.T) {
	t.Parallel()
	_, reg, bashRuns, _, _ := governed(t)
	for _, strand := range []string{"sub:main/forged-0000000000000000", ""} {
		out := reg.Dispatch(bg, &tool.Call{Strand: strand}, "bash", json.RawMessage(`{"command":"id"}`))
		if _, ok := out.Details.(tool.NotHeldDetails); !ok || out.Code != tool.CodeToolNotHeld {
			t.Errorf("strand %q: %+v, want tool_not_held", strand, out)
		}
	}
	if bashRuns.Load() != 0 {
		t.Fatalf("bash ran for a strand the Agency cannot judge")
	}
}

// TestGovernedMaxToolNamesListed: the unknown-tool refusal lists at most
// maxToolNamesListed names and counts the rest.
func TestGovernedMaxToolNamesListed(t *testing.T) {
	t.Parallel()
	a := NewAgency(echo, Options{})
	defer a.Close()
	var tools []tool.Tool
	for i := range maxToolNamesListed + 3 {
		tools = append(tools, tool.Typed(tool.Tool{Name: "t" + string(rune('A'+i/26)) + string(rune('a'+i%26))},
			func(context.Context, *tool.Call, struct{}) tool.Outcome { return tool.Success("") }))
	}
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	a.Govern(reg)
	_, err = a.Spawn(bg, root("main", 1), SpawnRequest{Purpose: "p", Prompt: "p", Tools: []string{"nope"}})
	if codeOf(err) != CodeUnknownSpawnTool || !strings.Contains(err.Error(), "and 3 more") {
		t.Fatalf("Spawn = %v, want unknown_spawn_tool counting 3 more", err)
	}
}
