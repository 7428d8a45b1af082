package loomopenai_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/openai/openai-go/v3/responses"

	"github.com/agentloom/loom/adapter/loomopenai"
	"github.com/agentloom/loom/internal/adaptertest"
	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

// outputOf is a response's output holding one function call per name.
func outputOf(t *testing.T, names ...string) []responses.ResponseOutputItemUnion {
	t.Helper()
	var items []map[string]any
	for i, n := range names {
		items = append(items, call(fmt.Sprintf("c%d", i), n, map[string]any{"key": fmt.Sprintf("%s-%d", n, i)}))
	}
	raw, _ := json.Marshal(map[string]any{"id": "resp_1", "object": "response", "output": items})
	var r responses.Response
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return r.Output
}

// TestDispatchFencesExclusive: of a turn's calls, an Exclusive one never
// runs beside another while Concurrent ones run side by side. The
// control dispatches the same calls each on its own goroutine straight
// through the registry, as an adapter bypassing the plane would: the
// probes then see the Exclusive call in company, so the test can fail.
// Both run in a synctest bubble, the Toolset's Dispatch driven directly
// (no client, no network), so the probes' patience passes in fake time.
func TestDispatchFencesExclusive(t *testing.T) {
	names := []string{"shared", "shared", "alone", "shared"}
	c := &tool.Call{Strand: "main", OpID: "op-1"}
	p := adaptertest.NewProbes(len(names))
	synctest.Test(t, func(t *testing.T) {
		d := plane.Dispatcher{Registry: p.Registry(t), Fence: &plane.Fence{}}
		var items []responses.ResponseInputItemUnionParam
		for _, it := range loomopenai.NewToolset(d, c).Dispatch(t.Context(), outputOf(t, names...)) {
			if it.OfFunctionCallOutput != nil {
				items = append(items, it)
			}
		}
		if len(items) != len(names) {
			t.Fatalf("%d outputs for %d calls", len(items), len(names))
		}
		for i, it := range items {
			if o := it.OfFunctionCallOutput; o == nil || o.CallID.Value != fmt.Sprintf("c%d", i) || o.Output.OfString.Value != fmt.Sprintf("%s-%d", names[i], i) {
				t.Errorf("output %d: %+v", i, it.OfFunctionCallOutput)
			}
		}
	})
	if o := p.Overlaps(); len(o) > 0 {
		t.Errorf("an Exclusive call ran in company: %v", o)
	}
	if p.Together() == 0 {
		t.Error("no two Concurrent calls ran side by side")
	}

	control := adaptertest.NewProbes(len(names))
	synctest.Test(t, func(t *testing.T) {
		reg := control.Registry(t)
		var wg sync.WaitGroup
		for i, n := range names {
			wg.Go(func() {
				reg.Dispatch(t.Context(), c, n, json.RawMessage(fmt.Sprintf(`{"key":"%s-%d"}`, n, i)))
			})
		}
		wg.Wait()
	})
	if len(control.Overlaps()) == 0 {
		t.Error("the control saw no overlap: the probes cannot tell a fenced dispatch from a bypass")
	}
}
