package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/tool"
)

// TestRunBudgetClampsAreAnnounced holds agent_spawn's deadline_ms and
// agent_send's budget_ms to the rule every clamp in the plane keeps: a
// value past the Agency's maximum is lowered, and the answer says so with
// the numbers; a value within it, or none, is not called a clamp.
func TestRunBudgetClampsAreAnnounced(t *testing.T) {
	t.Parallel()
	const maxMs = 2000
	g := newGate()
	a := NewAgency(g, Options{MaxRunBudget: maxMs * time.Millisecond, RunBudget: time.Second})
	defer a.Close()
	r := registry(t, a)
	c := &tool.Call{Strand: "main", OpID: "op", StepID: "s"}
	const clampNote = "note: deadline_ms 900000 clamped to 2000\n"

	o := dispatch(r, c, SpawnToolName, `{"purpose":"long","prompt":"x","deadline_ms":900000}`)
	sp := o.Details.(SpawnDetails)
	if o.IsError || !sp.Clamped || !strings.HasPrefix(o.Text, clampNote) {
		t.Fatalf("an over-long deadline_ms was not announced as clamped: %+v", o)
	}
	c.SourceIndex = 1
	o = dispatch(r, c, SpawnToolName, `{"purpose":"short","prompt":"x","deadline_ms":1500}`)
	if o.IsError || o.Details.(SpawnDetails).Clamped || strings.Contains(o.Text, "clamped") {
		t.Fatalf("a deadline_ms within the maximum was called clamped: %+v", o)
	}
	c.SourceIndex = 2
	o = dispatch(r, c, SpawnToolName, `{"purpose":"plain","prompt":"x"}`)
	if o.IsError || o.Details.(SpawnDetails).Clamped || strings.Contains(o.Text, "clamped") {
		t.Fatalf("the default budget was called clamped: %+v", o)
	}

	o = dispatch(r, c, SendToolName, `{"to":"`+sp.Handle+`","message":"more","budget_ms":900000}`)
	if o.IsError || o.Details.(SendDetails).Clamped || !strings.Contains(o.Text, "budget_ms ignored") {
		t.Fatalf("a budget for a running run was not said to be ignored: %+v", o)
	}
	h, _ := ParseHandle(sp.Handle)
	g.release(h, "done")
	dispatch(r, c, WaitToolName, `{"handles":["`+sp.Handle+`"]}`)
	o = dispatch(r, c, SendToolName, `{"to":"`+sp.Strand+`","message":"again","budget_ms":900000}`)
	if o.IsError || !o.Details.(SendDetails).Clamped || !strings.HasPrefix(o.Text, "note: budget_ms 900000 clamped to 2000\n") {
		t.Fatalf("an over-long budget_ms for a new run was not announced: %+v", o)
	}
}
