package adaptertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"testing"
	"testing/synctest"

	"github.com/agentloom/loom/internal/adaptertest"
	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

// dispatch runs names as two turns of one batch each through a
// Dispatcher over probes, in a synctest bubble, and returns the probes.
func dispatch(t *testing.T, fenced bool, names ...string) *adaptertest.Probes {
	p := adaptertest.NewProbes(len(names))
	synctest.Test(t, func(t *testing.T) {
		d := plane.Dispatcher{Registry: p.Registry(t)}
		if fenced {
			d.Fence = &plane.Fence{}
		}
		for turn := range 2 {
			var calls []plane.ToolCall
			for i, n := range names {
				calls = append(calls, plane.ToolCall{Name: n, Args: json.RawMessage(fmt.Sprintf(`{"key":"%s-%d-%d"}`, n, turn, i))})
			}
			d.Dispatch(t.Context(), &tool.Call{Strand: "main"}, "op-1", fmt.Sprint("step-", turn+1), calls)
		}
	})
	return p
}

// A batch keeps its Exclusive call alone and runs the rest side by side;
// each turn's calls meet, turn by turn; each call's coordinates are kept.
func TestProbesSeeABatch(t *testing.T) {
	p := dispatch(t, true, "shared", "shared", "alone", "shared")
	if o := p.Overlaps(); len(o) > 0 {
		t.Errorf("overlaps %v, want none", o)
	}
	// shared-0 beside shared-1, shared-3 alone after the Exclusive call:
	// one meeting per turn.
	if got := p.Together(); got != 2 {
		t.Errorf("Together = %d, want 2", got)
	}
	want := map[string]string{}
	for turn := range 2 {
		for i, n := range []string{"shared", "shared", "alone", "shared"} {
			want[fmt.Sprintf("%s-%d-%d", n, turn, i)] = fmt.Sprintf("op-1/step-%d/%d", turn+1, i)
		}
	}
	if got := p.Coords(); !maps.Equal(got, want) {
		t.Errorf("Coords = %v, want %v", got, want)
	}
}

// The control: calls run each on its own goroutine straight through the
// registry put the Exclusive call in company, and every turn's calls
// meet.
func TestProbesSeeABypass(t *testing.T) {
	p := adaptertest.NewProbes(3)
	synctest.Test(t, func(t *testing.T) {
		reg := p.Registry(t)
		for turn := range 2 {
			done := make(chan struct{})
			for i, n := range []string{"shared", "alone", "shared"} {
				go func() {
					defer func() { done <- struct{}{} }()
					reg.Dispatch(context.Background(), &tool.Call{Strand: "main"}, n, json.RawMessage(fmt.Sprintf(`{"key":"%s-%d-%d"}`, n, turn, i)))
				}()
			}
			for range 3 {
				<-done
			}
		}
	})
	if got := len(p.Overlaps()); got != 4 {
		t.Errorf("%d overlaps (%v), want 2 a turn", got, p.Overlaps())
	}
}
