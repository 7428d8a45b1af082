package loomgenkit_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"testing/synctest"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"

	"github.com/agentloom/loom/adapter/loomgenkit"
	"github.com/agentloom/loom/internal/adaptertest"
	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

// generate runs, in a synctest bubble, one scripted turn calling names
// (then a final answer) through a Toolset over probes p, as Genkit's
// loop runs it: each call on its own goroutine. fenced gives the
// Toolset the plane's Fence.
func generate(t *testing.T, p *adaptertest.Probes, fenced bool, names ...string) {
	t.Helper()
	const prompt = "probe"
	var parts []*ai.Part
	for i, n := range names {
		parts = append(parts, request(fmt.Sprintf("p%d", i), n, map[string]any{"key": fmt.Sprintf("%s-%d", n, i)}))
	}
	// Genkit's Init calls signal.NotifyContext, whose channel the
	// runtime's signal goroutine, outside any bubble, selects on: a
	// channel made in a bubble must not be, so Genkit starts before it.
	g, model := newModel(t, map[string][]step{prompt: {
		func(t *testing.T, x exchange) []*ai.Part { return parts },
		func(t *testing.T, x exchange) []*ai.Part {
			for i, n := range names {
				x.output(t, fmt.Sprintf("p%d", i), fmt.Sprintf("%s-%d", n, i))
			}
			return []*ai.Part{ai.NewTextPart("done")}
		},
	}})
	synctest.Test(t, func(t *testing.T) {
		d := plane.Dispatcher{Registry: p.Registry(t)}
		if fenced {
			d.Fence = &plane.Fence{}
		}
		tools, err := loomgenkit.NewToolset(d, &tool.Call{Strand: "main", OpID: "op-1"}).GenerateOptions(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		opts := append([]ai.GenerateOption{ai.WithModelName(model), ai.WithPrompt(prompt)}, tools...)
		if resp, err := genkit.Generate(context.Background(), g, opts...); err != nil || resp.Text() != "done" {
			t.Fatalf("generate: %v", err)
		}
	})
}

// TestToolsetFencesExclusive: Genkit runs a turn's calls each on its own
// goroutine, and still an Exclusive call never runs beside another while
// Concurrent ones run side by side. Each call carries its coordinates:
// step-1, its position in the turn. The control runs the same turn
// through a Dispatcher without the plane's Fence: the probes then see
// the Exclusive call in company, so the test can fail.
func TestToolsetFencesExclusive(t *testing.T) {
	names := []string{"shared", "shared", "alone", "shared"}
	p := adaptertest.NewProbes(len(names))
	generate(t, p, true, names...)
	if o := p.Overlaps(); len(o) > 0 {
		t.Errorf("an Exclusive call ran in company: %v", o)
	}
	if p.Together() == 0 {
		t.Error("no two Concurrent calls ran side by side")
	}
	want := map[string]string{"shared-0": "op-1/step-1/0", "shared-1": "op-1/step-1/1", "alone-2": "op-1/step-1/2", "shared-3": "op-1/step-1/3"}
	if got := p.Coords(); !maps.Equal(got, want) {
		t.Errorf("coordinates %v, want %v", got, want)
	}

	control := adaptertest.NewProbes(len(names))
	generate(t, control, false, names...)
	if len(control.Overlaps()) == 0 {
		t.Error("the control saw no overlap: Genkit ran the calls one by one, so this test cannot tell")
	}
}
