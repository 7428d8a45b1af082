package plane

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloom/loom/tool"
	"pgregory.net/rapid"
)

// barrierWait bounds how long an instrumented call waits for its
// siblings to start: reaching it means the dispatcher did not run them
// in parallel, and the call fails instead of hanging the test.
const barrierWait = 30 * time.Second

// event is one instrumented call starting or ending.
type event struct {
	index int
	start bool
}

// recorder is the shared state of one batch's instrumented tools.
type recorder struct {
	mu       sync.Mutex
	events   []event
	inflight int
	peak     int
	// waves[k] is closed once k calls are in flight at once.
	waves map[int]chan struct{}
	ran   map[int]bool
}

func newRecorder() *recorder {
	return &recorder{waves: map[int]chan struct{}{}, ran: map[int]bool{}}
}

func (r *recorder) wave(k int) chan struct{} {
	ch, ok := r.waves[k]
	if !ok {
		ch = make(chan struct{})
		r.waves[k] = ch
	}
	return ch
}

func (r *recorder) begin(i int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event{i, true})
	r.ran[i] = true
	r.inflight++
	if r.inflight > r.peak {
		r.peak = r.inflight
	}
	for k := 1; k <= r.inflight; k++ {
		if ch := r.wave(k); !closed(ch) {
			close(ch)
		}
	}
}

func (r *recorder) end(i int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event{i, false})
	r.inflight--
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// callArgs are an instrumented call's arguments: its own index, and how
// many calls must be in flight at once before it may end (0: none).
type callArgs struct {
	Index int `json:"index"`
	Await int `json:"await"`
}

// coords is what an instrumented call echoes: the coordinates its Call
// carried and the index its arguments named.
type coords struct {
	Index  int    `json:"index"`
	Source int    `json:"source"`
	Op     string `json:"op"`
	Step   string `json:"step"`
}

// instrumented returns a tool named name of mode mode recording into r.
func instrumented(r *recorder, name string, mode tool.ExecMode) tool.Tool {
	return tool.Typed(tool.Tool{Name: name, Mode: mode},
		func(ctx context.Context, c *tool.Call, a callArgs) tool.Outcome {
			r.begin(a.Index)
			defer r.end(a.Index)
			if a.Await > 0 {
				r.mu.Lock()
				ch := r.wave(a.Await)
				r.mu.Unlock()
				select {
				case <-ch:
				case <-time.After(barrierWait):
					return tool.Fail("barrier_timeout", fmt.Sprintf("call %d: %d calls never ran at once", a.Index, a.Await))
				}
			}
			text, _ := json.Marshal(coords{Index: a.Index, Source: c.SourceIndex, Op: c.OpID, Step: c.StepID})
			return tool.Success(string(text))
		})
}

// batchOf builds the calls of a mode string: 'c' a Concurrent call, 'e'
// an Exclusive one, 'u' a call of an unknown tool. Concurrent calls await
// the wave their segment must reach under maxParallel when await is set.
func batchOf(modes string, maxParallel int, await bool) []ToolCall {
	calls := make([]ToolCall, len(modes))
	limit := maxParallel
	if limit <= 0 {
		limit = DefaultMaxParallel
	}
	for i := 0; i < len(modes); i++ {
		name := map[byte]string{'c': "conc", 'e': "excl", 'u': "nosuch"}[modes[i]]
		a := callArgs{Index: i}
		if await && modes[i] == 'c' {
			// The segment of consecutive non-Exclusive calls around i, and
			// how many of them are instrumented.
			lo, hi := i, i
			for lo > 0 && modes[lo-1] != 'e' {
				lo--
			}
			for hi+1 < len(modes) && modes[hi+1] != 'e' {
				hi++
			}
			seg := modes[lo : hi+1]
			switch {
			case len(seg) <= limit:
				// One wave: every instrumented call of the segment at once.
				a.Await = strings.Count(seg, "c")
			case !strings.Contains(seg, "u") && i-lo < limit:
				// Only the first wave of a segment can be held to the bound:
				// the calls started after a slot frees may be fewer.
				a.Await = limit
			}
		}
		args, _ := json.Marshal(a)
		calls[i] = ToolCall{ID: fmt.Sprintf("id-%d", i), Name: name, Args: args}
	}
	return calls
}

func newBatchRegistry(t interface {
	Helper()
	Fatal(...any)
}, r *recorder, extra ...tool.Tool) *tool.Registry {
	t.Helper()
	reg, err := tool.NewRegistry(append([]tool.Tool{instrumented(r, "conc", tool.Concurrent), instrumented(r, "excl", tool.Exclusive)}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// checkFences reports the first way the events of one batch break the
// dispatcher's contract for modes: an Exclusive call overlapping any
// other call, or a call starting before an Exclusive call before it
// ended.
func checkFences(modes string, events []event) error {
	startAt, endAt := map[int]int{}, map[int]int{}
	for pos, e := range events {
		if e.start {
			startAt[e.index] = pos
		} else {
			endAt[e.index] = pos
		}
	}
	for i := 0; i < len(modes); i++ {
		if modes[i] != 'e' {
			continue
		}
		s, e := startAt[i], endAt[i]
		if e != s+1 {
			return fmt.Errorf("exclusive call %d: another call started or ended while it ran (events %v)", i, events)
		}
		for j := range modes {
			if _, ran := startAt[j]; !ran || j == i {
				continue
			}
			if j < i && endAt[j] > s {
				return fmt.Errorf("exclusive call %d started before call %d before it ended (events %v)", i, j, events)
			}
			if j > i && startAt[j] < e {
				return fmt.Errorf("call %d started before exclusive call %d before it ended (events %v)", j, i, events)
			}
		}
	}
	return nil
}

// checkResults reports the first result out of order or without the
// coordinates of its position.
func checkResults(modes, op, step string, calls []ToolCall, results []Result) error {
	if len(results) != len(calls) {
		return fmt.Errorf("%d results for %d calls", len(results), len(calls))
	}
	for i, res := range results {
		if res.ID != calls[i].ID || res.Name != calls[i].Name {
			return fmt.Errorf("result %d answers %s/%s, not %s/%s", i, res.ID, res.Name, calls[i].ID, calls[i].Name)
		}
		if modes[i] == 'u' {
			if res.Outcome.Code != tool.CodeUnknownTool {
				return fmt.Errorf("result %d of an unknown tool: %+v", i, res.Outcome)
			}
			continue
		}
		if res.Outcome.IsError {
			return fmt.Errorf("result %d: %s", i, res.Outcome.Text)
		}
		var got coords
		if err := json.Unmarshal([]byte(res.Outcome.Text), &got); err != nil {
			return fmt.Errorf("result %d: %v", i, err)
		}
		if want := (coords{Index: i, Source: i, Op: op, Step: step}); got != want {
			return fmt.Errorf("result %d: ran with %+v, want %+v", i, got, want)
		}
	}
	return nil
}

// TestDispatchOrdersAndFences: each batch's outcomes come back in input
// order with their coordinates, Exclusive calls run alone, and the
// Concurrent calls of a segment are in flight together up to the bound
// (each of the segment's first wave waits until that many run at once,
// which a serial dispatcher never reaches).
func TestDispatchOrdersAndFences(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		modes       string
		maxParallel int
		wantPeak    int
	}{
		{"empty", "", 0, 0},
		{"one concurrent", "c", 0, 1},
		{"concurrent pair", "cc", 0, 2},
		{"one exclusive", "e", 0, 1},
		{"exclusives alone", "eee", 0, 1},
		{"fence in the middle", "ccecc", 0, 2},
		{"fences at the ends", "ecce", 0, 2},
		{"alternating", "cecec", 0, 1},
		{"bounded", "cccccc", 3, 3},
		{"bound of one", "cccc", 1, 1},
		{"wide segment after a fence", "eccccc", 0, 5},
		{"unknown tools scheduled as concurrent", "cuceu", 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRecorder()
			d := Dispatcher{Registry: newBatchRegistry(t, r), MaxParallel: tt.maxParallel}
			calls := batchOf(tt.modes, tt.maxParallel, true)
			results := d.Dispatch(context.Background(), &tool.Call{Strand: "main"}, "op-7", "step-3", calls)
			if err := checkResults(tt.modes, "op-7", "step-3", calls, results); err != nil {
				t.Fatal(err)
			}
			if err := checkFences(tt.modes, r.events); err != nil {
				t.Fatal(err)
			}
			if r.peak != tt.wantPeak {
				t.Fatalf("at most %d calls ran at once, want %d (events %v)", r.peak, tt.wantPeak, r.events)
			}
		})
	}
}

// TestDispatchProperty: for any batch of Concurrent, Exclusive and
// unknown calls under any bound, every call gets one result in input
// order with its own coordinates, no Exclusive call overlaps another
// call, and no more calls run at once than the bound.
func TestDispatchProperty(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) {
		modes := rapid.StringOfN(rapid.SampledFrom([]rune("ceu")), 0, 24, -1).Draw(rt, "modes")
		maxParallel := rapid.IntRange(-1, 5).Draw(rt, "maxParallel")
		r := newRecorder()
		d := Dispatcher{Registry: newBatchRegistry(rt, r), MaxParallel: maxParallel}
		calls := batchOf(modes, maxParallel, false)
		results := d.Dispatch(context.Background(), &tool.Call{}, "op", "s", calls)
		if err := checkResults(modes, "op", "s", calls, results); err != nil {
			rt.Fatal(err)
		}
		if err := checkFences(modes, r.events); err != nil {
			rt.Fatal(err)
		}
		limit := maxParallel
		if limit <= 0 {
			limit = DefaultMaxParallel
		}
		if r.peak > limit {
			rt.Fatalf("%d calls ran at once past the bound %d", r.peak, limit)
		}
	})
}

// TestDispatchCancellation: a batch dispatched under an ended context
// runs nothing and answers every call cancelled; a context ending during
// an Exclusive call leaves the calls after it unrun and cancelled, while
// the calls before it keep their outcomes.
func TestDispatchCancellation(t *testing.T) {
	t.Parallel()
	t.Run("before the batch", func(t *testing.T) {
		t.Parallel()
		r := newRecorder()
		d := Dispatcher{Registry: newBatchRegistry(t, r)}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		results := d.Dispatch(ctx, &tool.Call{}, "op", "s", batchOf("ccecc", 0, false))
		for i, res := range results {
			if res.Outcome.Code != tool.CodeCancelled {
				t.Errorf("result %d: %+v, want %s", i, res.Outcome, tool.CodeCancelled)
			}
		}
		if len(r.ran) != 0 {
			t.Fatalf("calls ran under an ended context: %v", r.ran)
		}
	})
	t.Run("during an exclusive call", func(t *testing.T) {
		t.Parallel()
		r := newRecorder()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stopper := tool.Typed(tool.Tool{Name: "stop", Mode: tool.Exclusive},
			func(context.Context, *tool.Call, struct{}) tool.Outcome { cancel(); return tool.Success("stopped") })
		d := Dispatcher{Registry: newBatchRegistry(t, r, stopper)}
		calls := batchOf("cc", 0, false)
		calls = append(calls, ToolCall{ID: "stop", Name: "stop", Args: json.RawMessage(`{}`)})
		calls = append(calls, batchOf("cce", 0, false)...)
		results := d.Dispatch(ctx, &tool.Call{}, "op", "s", calls)
		for i, res := range results {
			switch {
			case i < 2 && res.Outcome.IsError, i == 2 && res.Outcome.Text != "stopped":
				t.Errorf("result %d before the cancellation: %+v", i, res.Outcome)
			case i > 2 && res.Outcome.Code != tool.CodeCancelled:
				t.Errorf("result %d after the cancellation: %+v, want %s", i, res.Outcome, tool.CodeCancelled)
			}
		}
		if len(r.ran) != 2 {
			t.Fatalf("ran %v, want only the two calls before the cancellation", r.ran)
		}
	})
}

// TestDispatchNeverPanics: a panic escaping the registry (here the host's
// holds gate) becomes that call's outcome, the other calls are answered,
// and a Dispatcher without a registry answers every call as unknown.
func TestDispatchNeverPanics(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	reg := newBatchRegistry(t, r)
	reg.SetHolds(func(_ context.Context, _, name string) bool {
		if name == "excl" {
			panic("gate fault")
		}
		return true
	})
	results := Dispatcher{Registry: reg}.Dispatch(context.Background(), &tool.Call{}, "op", "s", batchOf("cec", 0, false))
	if results[1].Outcome.Code != tool.CodeToolPanicked {
		t.Errorf("the panicking call: %+v", results[1].Outcome)
	}
	if results[0].Outcome.IsError || results[2].Outcome.IsError {
		t.Errorf("the other calls: %+v, %+v", results[0].Outcome, results[2].Outcome)
	}
	for i, res := range (Dispatcher{}).Dispatch(context.Background(), nil, "op", "s", batchOf("ce", 0, false)) {
		if res.Outcome.Code != tool.CodeUnknownTool {
			t.Errorf("result %d without a registry: %+v", i, res.Outcome)
		}
	}
}

// TestOffered: the tools offered a strand are those it holds, in
// registration order, narrowed by only when only is not nil; an empty
// only offers nothing, and a Dispatcher without a Registry offers nil.
func TestOffered(t *testing.T) {
	var tools []tool.Tool
	for _, n := range []string{"c", "a", "b"} {
		tools = append(tools, tool.Tool{Name: n, Description: n, Schema: json.RawMessage(`{"type":"object"}`),
			Run: func(context.Context, *tool.Call, json.RawMessage) tool.Outcome { return tool.Success("") }})
	}
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	reg.SetHolds(func(_ context.Context, strand, name string) bool { return strand == "root" || name != "b" })
	d := Dispatcher{Registry: reg}
	names := func(ts []tool.Tool) string {
		var s []string
		for _, t := range ts {
			s = append(s, t.Name)
		}
		return strings.Join(s, ",")
	}
	for _, tc := range []struct {
		strand string
		only   []string
		want   string
	}{
		{"root", nil, "c,a,b"},
		{"sub:child", nil, "c,a"},
		{"root", []string{"b", "c", "zzz"}, "c,b"},
		{"sub:child", []string{"b"}, ""},
		{"root", []string{}, ""},
	} {
		if got := names(d.Offered(context.Background(), tc.strand, tc.only)); got != tc.want {
			t.Errorf("Offered(%q, %q) = %q, want %q", tc.strand, tc.only, got, tc.want)
		}
	}
	if got := (Dispatcher{}).Offered(context.Background(), "root", nil); got != nil {
		t.Errorf("no Registry: %v", got)
	}
}
