package loomopenai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/responses"

	"github.com/agentloom/loom/adapter/loomopenai"
	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

// probes are tools that record who runs beside whom. Each call waits,
// once started, until every call of the turn has started or patience
// runs out, so calls that may overlap do overlap; patience only bounds
// how long a correctly fenced call waits, no assertion reads a time.
type probes struct {
	mu       sync.Mutex
	total    int
	started  int
	running  map[string]bool
	overlaps []string // "x beside y" for each Exclusive call that had company
	together int      // how often a Concurrent call started beside another
	all      chan struct{}
}

const patience = 300 * time.Millisecond

func newProbes(total int) *probes {
	return &probes{total: total, running: map[string]bool{}, all: make(chan struct{})}
}

func (p *probes) registry(t *testing.T) *tool.Registry {
	t.Helper()
	type args struct {
		Key string `json:"key"`
	}
	run := func(exclusive bool) func(context.Context, *tool.Call, args) tool.Outcome {
		return func(ctx context.Context, c *tool.Call, a args) tool.Outcome {
			p.enter(a.Key, exclusive)
			select {
			case <-p.all:
			case <-time.After(patience):
			}
			p.leave(a.Key)
			return tool.Success(a.Key)
		}
	}
	reg, err := tool.NewRegistry(
		tool.Typed(tool.Tool{Name: "shared", Mode: tool.Concurrent}, run(false)),
		tool.Typed(tool.Tool{Name: "alone", Mode: tool.Exclusive}, run(true)),
	)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func (p *probes) enter(key string, exclusive bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for other := range p.running {
		if exclusive || p.running[other] {
			p.overlaps = append(p.overlaps, fmt.Sprintf("%s beside %s", key, other))
		} else {
			p.together++
		}
	}
	p.running[key] = exclusive
	if p.started++; p.started == p.total {
		close(p.all)
	}
}

func (p *probes) leave(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, key)
}

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
func TestDispatchFencesExclusive(t *testing.T) {
	names := []string{"shared", "shared", "alone", "shared"}
	p := newProbes(len(names))
	d := plane.Dispatcher{Registry: p.registry(t), Fence: &plane.Fence{}}
	c := &tool.Call{Strand: "main", OpID: "op-1"}
	var items []responses.ResponseInputItemUnionParam
	for _, it := range loomopenai.NewToolset(d, c).Dispatch(context.Background(), outputOf(t, names...)) {
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
	if len(p.overlaps) > 0 {
		t.Errorf("an Exclusive call ran in company: %v", p.overlaps)
	}
	if p.together == 0 {
		t.Error("no two Concurrent calls ran side by side")
	}

	control := newProbes(len(names))
	reg := control.registry(t)
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reg.Dispatch(context.Background(), c, n, json.RawMessage(fmt.Sprintf(`{"key":"%s-%d"}`, n, i)))
		}()
	}
	wg.Wait()
	if len(control.overlaps) == 0 {
		t.Error("the control saw no overlap: the probes cannot tell a fenced dispatch from a bypass")
	}
}
