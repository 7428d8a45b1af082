package plane

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/agentloom/loom/tool"
	"pgregory.net/rapid"
)

// gates are tools that say when each call started and hold it until
// released, so a test reads who runs beside whom without timing.
type gates struct {
	mu      sync.Mutex
	started map[string]bool
	release map[string]chan struct{}
}

type gateArgs struct {
	Key string `json:"key"`
}

func newGates() *gates {
	return &gates{started: map[string]bool{}, release: map[string]chan struct{}{}}
}

func (g *gates) hold(key string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	ch, ok := g.release[key]
	if !ok {
		ch = make(chan struct{})
		g.release[key] = ch
	}
	return ch
}

func (g *gates) running(key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.started[key]
}

func (g *gates) registry(t *testing.T) *tool.Registry {
	t.Helper()
	run := func(ctx context.Context, c *tool.Call, a gateArgs) tool.Outcome {
		g.mu.Lock()
		g.started[a.Key] = true
		g.mu.Unlock()
		select {
		case <-g.hold(a.Key):
			return tool.Success(a.Key)
		case <-ctx.Done():
			return tool.Fail(tool.CodeCancelled, "cancelled while running")
		}
	}
	reg, err := tool.NewRegistry(
		tool.Typed(tool.Tool{Name: "shared", Mode: tool.Concurrent}, run),
		tool.Typed(tool.Tool{Name: "alone", Mode: tool.Exclusive}, run),
	)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func callOf(name, key string) ToolCall {
	return ToolCall{ID: key, Name: name, Args: json.RawMessage(fmt.Sprintf(`{"key":%q}`, key))}
}

// TestDispatchOneFences runs single calls the way a framework does, one
// goroutine each, and reads after each step who is running.
func TestDispatchOneFences(t *testing.T) {
	for _, fenced := range []bool{true, false} {
		t.Run(fmt.Sprintf("fence=%v", fenced), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGates()
				d := Dispatcher{Registry: g.registry(t)}
				if fenced {
					d.Fence = &Fence{}
				}
				parent := &tool.Call{Strand: "main"}
				child := &tool.Call{Strand: "sub:main/kid-1"}
				var wg sync.WaitGroup
				results := map[string]Result{}
				var mu sync.Mutex
				start := func(c *tool.Call, tc ToolCall) {
					wg.Go(func() {
						r := d.DispatchOne(context.Background(), c, "op", "step", 0, tc)
						mu.Lock()
						results[tc.ID] = r
						mu.Unlock()
					})
					synctest.Wait()
				}
				start(parent, callOf("shared", "read1"))
				start(parent, callOf("alone", "edit"))
				start(parent, callOf("shared", "read2"))
				start(child, callOf("alone", "child-edit"))
				if !g.running("read1") || !g.running("child-edit") {
					t.Fatal("a call with nothing to wait for did not start")
				}
				// An Exclusive call waits for the strand's running call,
				// and a later call waits for it: without a fence they all run.
				if got := g.running("edit") || g.running("read2"); got == fenced {
					t.Fatalf("fence=%v: edit or read2 running = %v", fenced, got)
				}
				close(g.hold("read1"))
				synctest.Wait()
				if !g.running("edit") {
					t.Fatal("the Exclusive call did not start once the strand's call ended")
				}
				if fenced && g.running("read2") {
					t.Fatal("a later call started beside the Exclusive call")
				}
				close(g.hold("edit"))
				synctest.Wait()
				if !g.running("read2") {
					t.Fatal("the later call did not start once the Exclusive call ended")
				}
				close(g.hold("read2"))
				close(g.hold("child-edit"))
				wg.Wait()
				for _, k := range []string{"read1", "edit", "read2", "child-edit"} {
					if r := results[k]; r.Outcome.IsError || r.ID != k {
						t.Fatalf("%s: %+v", k, r)
					}
				}
				if d.Fence != nil && len(d.Fence.strands) != 0 {
					t.Fatalf("the fence kept %d strands after every call left", len(d.Fence.strands))
				}
			})
		})
	}
}

// TestDispatchOneCancelledWhileWaiting: a call whose context ends
// before its turn is answered without running.
func TestDispatchOneCancelledWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGates()
		d := Dispatcher{Registry: g.registry(t), Fence: &Fence{}}
		c := &tool.Call{Strand: "main"}
		go d.DispatchOne(context.Background(), c, "op", "s", 0, callOf("alone", "edit"))
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan Result)
		go func() { done <- d.DispatchOne(ctx, c, "op", "s", 1, callOf("shared", "late")) }()
		synctest.Wait()
		cancel()
		r := <-done
		if r.Outcome.Code != tool.CodeCancelled || g.running("late") {
			t.Fatalf("cancelled while waiting: %+v (ran: %v)", r, g.running("late"))
		}
		close(g.hold("edit"))
	})
}

// TestFenceProperty: whatever mix of strands and modes arrives in
// whatever order, no Exclusive call ever runs beside another call of its
// strand, and every call runs.
func TestFenceProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(rt, "n")
		type step struct {
			strand    string
			exclusive bool
		}
		steps := make([]step, n)
		for i := range steps {
			steps[i] = step{rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "strand"), rapid.Bool().Draw(rt, "exclusive")}
		}
		var (
			f        Fence
			mu       sync.Mutex
			inflight = map[string]int{}
			alone    = map[string]bool{}
			bad      string
			wg       sync.WaitGroup
		)
		for i, s := range steps {
			wg.Go(func() {
				leave, err := f.enter(context.Background(), s.strand, s.exclusive)
				if err != nil {
					bad = err.Error()
					return
				}
				mu.Lock()
				if alone[s.strand] || (s.exclusive && inflight[s.strand] > 0) {
					bad = fmt.Sprintf("call %d (%+v) ran beside an Exclusive call or ran Exclusive beside others", i, s)
				}
				inflight[s.strand]++
				alone[s.strand] = s.exclusive
				mu.Unlock()
				mu.Lock()
				inflight[s.strand]--
				if s.exclusive {
					alone[s.strand] = false
				}
				mu.Unlock()
				leave()
			})
		}
		wg.Wait()
		if bad != "" {
			rt.Fatal(bad)
		}
		if len(f.strands) != 0 {
			rt.Fatalf("%d strands left in the fence", len(f.strands))
		}
	})
}
