package plane

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/agentloom/loom/tool"
)

// DefaultMaxParallel is how many calls of one batch a Dispatcher runs at
// once when its MaxParallel is zero or less.
const DefaultMaxParallel = 8

// ToolCall is one tool call of a model's turn, as a provider reports it.
type ToolCall struct {
	// ID is the provider's identifier of the call (a tool_use id), echoed
	// in its Result so the host can answer it.
	ID string
	// Name is the tool the model called.
	Name string
	// Args are the call's arguments, the JSON the model wrote.
	Args json.RawMessage
}

// Result is the answer to one ToolCall.
type Result struct {
	// ID and Name are the call's.
	ID, Name string
	// Outcome is what the tool returned.
	Outcome tool.Outcome
}

// Dispatcher runs one model turn's tool calls through a Registry. It is a
// small value; copy it freely.
type Dispatcher struct {
	// Registry holds the tools; a nil Registry answers every call as an
	// unknown tool.
	Registry *tool.Registry
	// MaxParallel bounds the calls of one batch running at once. Zero or
	// less means DefaultMaxParallel.
	MaxParallel int
	// Fence, when set, is shared by every batch and single call of the
	// session: a strand's Exclusive call then runs alone among all of
	// that strand's calls dispatched through it, not only within its
	// batch. Nil fences each batch alone. Plane.Dispatcher sets the
	// plane's.
	Fence *Fence
}

// Dispatch runs calls as one batch, step stepID of operation opID, each
// with a copy of c at its coordinates (c.At(opID, stepID, i) for the call
// at position i), and returns one Result per call, in the order of calls.
//
// Calls are scheduled by their tool's Mode: consecutive Concurrent calls
// run in parallel (at most MaxParallel at once); an Exclusive call runs
// alone: every call before it has ended before it starts, and no call
// after it starts until it has ended. A name the registry does not know is
// scheduled as Concurrent and answered by the registry's refusal.
//
// With a Fence, each call also waits its turn among the strand's calls
// dispatched elsewhere (see Fence).
//
// Once ctx ends, calls not yet started are answered without running, with
// tool.CodeCancelled; calls already running see the cancellation through
// their context. Dispatch never panics: a panic escaping Registry.Dispatch
// (a host's holds gate, for instance) becomes that call's error outcome
// coded tool.CodeToolPanicked.
func (d Dispatcher) Dispatch(ctx context.Context, c *tool.Call, opID, stepID string, calls []ToolCall) []Result {
	results := make([]Result, len(calls))
	for i, tc := range calls {
		results[i] = Result{ID: tc.ID, Name: tc.Name}
	}
	if c == nil {
		c = &tool.Call{}
	}
	limit := d.MaxParallel
	if limit <= 0 {
		limit = DefaultMaxParallel
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i, tc := range calls {
		if d.exclusive(tc.Name) {
			wg.Wait() // everything before it has ended
			results[i].Outcome = d.fenced(ctx, c.At(opID, stepID, i), tc, true)
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			results[i].Outcome = d.one(ctx, c.At(opID, stepID, i), tc)
			continue
		}
		wg.Add(1)
		go func(i int, tc ToolCall) {
			defer wg.Done()
			defer func() { <-sem }()
			results[i].Outcome = d.fenced(ctx, c.At(opID, stepID, i), tc, false)
		}(i, tc)
	}
	wg.Wait()
	return results
}

// Offered returns the tools to offer the model of strand, in
// registration order: those the strand holds (tool.Registry.Holds; in a
// registry without a holds gate, every strand holds every tool),
// narrowed to the names in only when only is not nil. Nil without a
// Registry.
func (d Dispatcher) Offered(ctx context.Context, strand string, only []string) []tool.Tool {
	if d.Registry == nil {
		return nil
	}
	var out []tool.Tool
	for _, t := range d.Registry.Registered() {
		if (only == nil || slices.Contains(only, t.Name)) && d.Registry.Holds(ctx, strand, t.Name) {
			out = append(out, t)
		}
	}
	return out
}

// DispatchOne runs one call, at position index of step stepID of
// operation opID, with a copy of c at those coordinates, and returns its
// Result: what a framework that schedules calls itself (one goroutine per
// call, say) dispatches each call with. The call holds d's Fence as a
// batch's call does, so an Exclusive tool never runs beside another call
// of its strand however the framework schedules them; without a Fence it
// is not fenced at all. It never panics, and answers tool.CodeCancelled
// without running when ctx ends before the call's turn comes.
func (d Dispatcher) DispatchOne(ctx context.Context, c *tool.Call, opID, stepID string, index int, tc ToolCall) Result {
	if c == nil {
		c = &tool.Call{}
	}
	return Result{ID: tc.ID, Name: tc.Name, Outcome: d.fenced(ctx, c.At(opID, stepID, index), tc, d.exclusive(tc.Name))}
}

// fenced dispatches a single call once d's Fence lets it run.
func (d Dispatcher) fenced(ctx context.Context, c *tool.Call, tc ToolCall, exclusive bool) tool.Outcome {
	if d.Fence == nil {
		return d.one(ctx, c, tc)
	}
	leave, err := d.Fence.enter(ctx, c.Strand, exclusive)
	if err != nil {
		return d.one(ctx, c, tc) // ctx ended: answered without running
	}
	defer leave()
	return d.one(ctx, c, tc)
}

// exclusive reports whether the tool named name must run alone.
func (d Dispatcher) exclusive(name string) bool {
	if d.Registry == nil {
		return false
	}
	t, ok := d.Registry.Lookup(name)
	return ok && t.Mode == tool.Exclusive
}

// one dispatches a single call, turning a panic that escapes the registry
// into an error outcome.
func (d Dispatcher) one(ctx context.Context, c *tool.Call, tc ToolCall) (out tool.Outcome) {
	defer func() {
		if p := recover(); p != nil {
			out = tool.Fail(tool.CodeToolPanicked, fmt.Sprintf("the call failed internally (a bug in the host, not in your arguments): %v", p))
			out.Details = tool.PanicDetails{Stack: string(debug.Stack())}
		}
	}()
	if d.Registry == nil {
		return tool.Fail(tool.CodeUnknownTool, "unknown tool: this host registers no tools")
	}
	return d.Registry.Dispatch(ctx, c, tc.Name, tc.Args)
}
