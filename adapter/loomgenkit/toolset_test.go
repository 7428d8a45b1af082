package loomgenkit_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"

	"github.com/agentloom/loom/adapter/loomgenkit"
	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

// probes are tools that record who runs beside whom, and each call's
// coordinates. Each call waits, once started, until every call of the
// turn has started or patience runs out, so calls that may overlap do
// overlap; patience only bounds how long a fenced call waits, no
// assertion reads a time.
type probes struct {
	mu       sync.Mutex
	total    int
	started  int
	running  map[string]bool
	overlaps []string // "x beside y" for each Exclusive call that had company
	together int      // how often a Concurrent call started beside another
	coords   []string // "key step index" of each call
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
			p.enter(a.Key, exclusive, fmt.Sprintf("%s %s %d", a.Key, c.StepID, c.SourceIndex))
			select {
			case <-p.all:
			case <-time.After(patience):
			}
			p.leave(a.Key)
			return tool.Success(a.Key)
		}
	}
	reg, err := tool.NewRegistry(
		tool.Typed(tool.Tool{Name: "shared", Description: "Runs beside others.", Mode: tool.Concurrent}, run(false)),
		tool.Typed(tool.Tool{Name: "alone", Description: "Runs alone.", Mode: tool.Exclusive}, run(true)),
	)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func (p *probes) enter(key string, exclusive bool, coords string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.coords = append(p.coords, coords)
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

// generate runs one scripted turn calling names (then a final answer)
// through a Toolset over d, as Genkit's loop runs it: each call on its
// own goroutine.
func generate(t *testing.T, d plane.Dispatcher, names ...string) {
	t.Helper()
	const prompt = "probe"
	var parts []*ai.Part
	for i, n := range names {
		parts = append(parts, request(fmt.Sprintf("p%d", i), n, map[string]any{"key": fmt.Sprintf("%s-%d", n, i)}))
	}
	g, model := newModel(t, map[string][]step{prompt: {
		func(t *testing.T, x exchange) []*ai.Part { return parts },
		func(t *testing.T, x exchange) []*ai.Part {
			for i, n := range names {
				x.output(t, fmt.Sprintf("p%d", i), fmt.Sprintf("%s-%d", n, i))
			}
			return []*ai.Part{ai.NewTextPart("done")}
		},
	}})
	tools, err := loomgenkit.NewToolset(d, &tool.Call{Strand: "main", OpID: "op-1"}).GenerateOptions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	opts := append([]ai.GenerateOption{ai.WithModelName(model), ai.WithPrompt(prompt)}, tools...)
	if resp, err := genkit.Generate(context.Background(), g, opts...); err != nil || resp.Text() != "done" {
		t.Fatalf("generate: %v", err)
	}
}

// TestToolsetFencesExclusive: Genkit runs a turn's calls each on its own
// goroutine, and still an Exclusive call never runs beside another while
// Concurrent ones run side by side. Each call carries its coordinates:
// step-1, its position in the turn. The control runs the same turn
// through a Dispatcher without the plane's Fence: the probes then see
// the Exclusive call in company, so the test can fail.
func TestToolsetFencesExclusive(t *testing.T) {
	names := []string{"shared", "shared", "alone", "shared"}
	p := newProbes(len(names))
	generate(t, plane.Dispatcher{Registry: p.registry(t), Fence: &plane.Fence{}}, names...)
	if len(p.overlaps) > 0 {
		t.Errorf("an Exclusive call ran in company: %v", p.overlaps)
	}
	if p.together == 0 {
		t.Error("no two Concurrent calls ran side by side")
	}
	slices.Sort(p.coords)
	if want := []string{"alone-2 step-1 2", "shared-0 step-1 0", "shared-1 step-1 1", "shared-3 step-1 3"}; !slices.Equal(p.coords, want) {
		t.Errorf("coordinates %q, want %q", p.coords, want)
	}

	control := newProbes(len(names))
	generate(t, plane.Dispatcher{Registry: control.registry(t)}, names...)
	if len(control.overlaps) == 0 {
		t.Error("the control saw no overlap: Genkit ran the calls one by one, so this test cannot tell")
	}
}
