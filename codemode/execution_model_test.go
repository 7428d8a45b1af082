package codemode

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
	"pgregory.net/rapid"
)

// modelExecution is the simple model of one launched execution.
type modelExecution struct {
	handle    string
	owner     string
	state     ExecutionState
	ready     bool
	endpoints []string
	queued    map[string]int
	end       chan struct{} // closing it makes the fake program exit
	x         *execution
}

func (m *modelExecution) total() int {
	n := 0
	for _, q := range m.queued {
		n += q
	}
	return n
}

// executionModel checks the live-execution table, driven with a fake
// runner, against modelExecution values.
type executionModel struct {
	t       *executions
	byOwner map[string][]*modelExecution // oldest first, forgotten ones removed
	endings map[string][]*modelExecution // each strand's ended ones kept, in the order they ended
	aborted map[sandbox.StepKey]bool
	noticed chan ExecutionNotice // what the table's notify was told
	notices []ExecutionNotice    // received from noticed so far
	want    []ExecutionNotice
	mu      sync.Mutex
	sites   int
}

func newExecutionModel() *executionModel {
	m := &executionModel{byOwner: map[string][]*modelExecution{}, endings: map[string][]*modelExecution{}, aborted: map[sandbox.StepKey]bool{}, noticed: make(chan ExecutionNotice, 4096)}
	m.t = newExecutions(func(k sandbox.StepKey) {
		m.mu.Lock()
		m.aborted[k] = true
		m.mu.Unlock()
	}, func(n ExecutionNotice) { m.noticed <- n })
	return m
}

func (m *executionModel) all() []*modelExecution {
	var out []*modelExecution
	for _, s := range []string{"a", "b"} {
		out = append(out, m.byOwner[s]...)
	}
	return out
}

func (m *executionModel) pick(t *rapid.T, keep func(*modelExecution) bool) *modelExecution {
	var c []*modelExecution
	for _, e := range m.all() {
		if keep == nil || keep(e) {
			c = append(c, e)
		}
	}
	if len(c) == 0 {
		t.Skip("no such execution")
	}
	return rapid.SampledFrom(c).Draw(t, "execution")
}

func running(e *modelExecution) bool { return e.state == ExecutionRunning }

func codeOfErr(err error) tool.Code {
	var ce *CapError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return ""
}

// ended moves e out of running in the model; past maxEndedExecutions
// ended ones, its strand forgets the one that ended first.
func (m *executionModel) ended(e *modelExecution, state ExecutionState) {
	e.state, e.queued = state, map[string]int{}
	q := append(m.endings[e.owner], e)
	if len(q) > maxEndedExecutions {
		gone := q[0]
		q = q[1:]
		m.byOwner[e.owner] = slices.DeleteFunc(m.byOwner[e.owner], func(y *modelExecution) bool { return y == gone })
	}
	m.endings[e.owner] = q
}

func (m *executionModel) launch(t *rapid.T) {
	m.launchAs(t, rapid.SampledFrom([]string{"a", "b"}).Draw(t, "strand"))
}

// fill launches for one strand until one launch past the live bound.
func (m *executionModel) fill(t *rapid.T) {
	strand := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "strand")
	for range maxLiveExecutions + 1 {
		m.launchAs(t, strand)
	}
}

func (m *executionModel) launchAs(t *rapid.T, strand string) {
	live := 0
	for _, e := range m.byOwner[strand] {
		if running(e) {
			live++
		}
	}
	m.sites++
	c := (&tool.Call{Strand: strand}).At("op", fmt.Sprint("step-", m.sites), 0)
	x, err := m.t.reserve(c)
	if live >= maxLiveExecutions {
		if codeOfErr(err) != CodeExecutionCeiling {
			t.Fatalf("launch %d of strand %s: %v, want %s", live+1, strand, err, CodeExecutionCeiling)
		}
		return
	}
	if err != nil {
		t.Fatalf("launch %d of strand %s refused: %v", live+1, strand, err)
	}
	if x.key.StepID != c.StepID+executionStepPrefix+m.t.epoch+"-"+fmt.Sprint(m.t.tab.Minted()) || x.call.StepID != x.key.StepID || x.call.Strand != strand {
		t.Fatalf("execution step %+v, call %s/%s", x.key, x.call.Strand, x.call.StepID)
	}
	e := &modelExecution{handle: x.handle, owner: strand, state: ExecutionRunning, queued: map[string]int{}, end: make(chan struct{}), x: x}
	if err := m.t.start(x, &Execution{}, func(ctx context.Context) (*RunResult, error) {
		select {
		case <-ctx.Done():
			return &RunResult{Code: CodeRunCancelled, Exit: -1}, nil
		case <-e.end:
			return &RunResult{}, nil
		}
	}); err != nil {
		t.Fatal(err)
	}
	m.byOwner[strand] = append(m.byOwner[strand], e)
}

func (m *executionModel) exit(t *rapid.T) {
	e := m.pick(t, running)
	close(e.end)
	<-e.x.done
	m.ended(e, ExecutionExited)
	m.want = append(m.want, ExecutionNotice{Owner: e.owner, Handle: e.handle, State: ExecutionExited})
	// The notice is sent after the end is recorded: wait for it.
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	select {
	case n := <-m.noticed:
		m.notices = append(m.notices, n)
	case <-deadline.C:
		t.Fatalf("no notice of %s's end", e.handle)
	}
}

func (m *executionModel) register(t *rapid.T) {
	e := m.pick(t, running)
	ready := rapid.Bool().Draw(t, "ready")
	name := defaultEndpoint
	if !ready {
		name = rapid.SampledFrom([]string{"a", "b", defaultEndpoint}).Draw(t, "endpoint")
	}
	if err := m.t.register(e.x, name, ready); err != nil {
		t.Fatal(err)
	}
	e.ready = e.ready || ready
	if !slices.Contains(e.endpoints, name) {
		e.endpoints = append(e.endpoints, name)
	}
}

func (m *executionModel) send(t *rapid.T) {
	m.sendTo(t, m.pick(t, nil), rapid.SampledFrom([]string{"a", "b", defaultEndpoint}).Draw(t, "endpoint"))
}

// flood sends to one endpoint until one send past the inbox bound.
func (m *executionModel) flood(t *rapid.T) {
	e := m.pick(t, func(e *modelExecution) bool { return running(e) && len(e.endpoints) > 0 })
	endpoint := rapid.SampledFrom(e.endpoints).Draw(t, "endpoint")
	for range maxQueuedInputs + 1 {
		m.sendTo(t, e, endpoint)
	}
}

func (m *executionModel) sendTo(t *rapid.T, e *modelExecution, endpoint string) {
	_, err := m.t.send(e.x, endpoint, []byte("in"))
	var want tool.Code
	switch {
	case !running(e):
		want = CodeExecutionEnded
	case !e.ready:
		want = CodeExecutionNotReady
	case !slices.Contains(e.endpoints, endpoint):
		want = CodeUnknownEndpoint
	case e.total() >= maxQueuedInputs:
		want = CodeInboxFull
	default:
		e.queued[endpoint]++
	}
	if codeOfErr(err) != want || (want == "") != (err == nil) {
		t.Fatalf("send to %s of %+v: %v, want %q", endpoint, e, err, want)
	}
}

func (m *executionModel) receive(t *rapid.T) {
	e := m.pick(t, func(e *modelExecution) bool { return running(e) && len(e.endpoints) > 0 })
	endpoint := rapid.SampledFrom(e.endpoints).Draw(t, "endpoint")
	in, ok, err := m.t.receive(context.Background(), e.x, endpoint, 0)
	if err != nil || ok != (e.queued[endpoint] > 0) || ok && string(in) != "in" {
		t.Fatalf("receive %s of %+v: %q %v %v", endpoint, e, in, ok, err)
	}
	if ok {
		e.queued[endpoint]--
	}
}

func (m *executionModel) join(t *rapid.T) {
	e := m.pick(t, nil)
	_, ended, _ := m.t.join(context.Background(), e.x, 0)
	if ended == running(e) {
		t.Fatalf("join of %+v: ended %v", e, ended)
	}
}

func (m *executionModel) cancel(t *rapid.T) {
	e := m.pick(t, nil)
	if !m.t.teardown(context.Background(), e.x) {
		t.Fatal("teardown did not reap a fake program")
	}
	m.mu.Lock()
	aborted := m.aborted[e.x.key]
	m.mu.Unlock()
	if !aborted {
		t.Fatalf("cancel of %s reaped no step", e.handle)
	}
	if running(e) {
		m.ended(e, ExecutionCancelled)
	}
}

func (m *executionModel) foreign(t *rapid.T) {
	e := m.pick(t, nil)
	other := map[string]string{"a": "b", "b": "a"}[e.owner]
	if _, err := m.t.lookup(other, e.handle); codeOfErr(err) != CodeUnknownExecution {
		t.Fatalf("strand %s looked up %s of %s: %v", other, e.handle, e.owner, err)
	}
	lost := "exec-" + map[bool]string{true: "00000001", false: "00000000"}[m.t.epoch == "00000000"] + e.handle[len("exec-00000000"):]
	if _, err := m.t.lookup(e.owner, lost); codeOfErr(err) != CodeExecutionLost {
		t.Fatalf("a handle of another epoch: %v", err)
	}
}

// check compares every execution the model knows with the table, and the
// notices with those expected.
func (m *executionModel) check(t *rapid.T) {
	known := 0
	for strand, list := range m.byOwner {
		live := 0
		for _, e := range list {
			known++
			x, err := m.t.lookup(strand, e.handle)
			if err != nil {
				t.Fatalf("lookup %s: %v", e.handle, err)
			}
			st := m.t.status(x)
			if st.State != e.state || st.Ready != e.ready || !slices.Equal(st.Endpoints, e.endpoints) || st.Queued != e.total() {
				t.Fatalf("status %+v, model %+v", st, e)
			}
			if running(e) {
				live++
			}
		}
		if live > maxLiveExecutions {
			t.Fatalf("strand %s has %d live", strand, live)
		}
	}
	m.t.mu.Lock()
	n := m.t.tab.Len()
	m.t.mu.Unlock()
	if n != known {
		t.Fatalf("the table holds %d executions, the model %d", n, known)
	}
	for drained := false; !drained; {
		select {
		case n := <-m.noticed:
			m.notices = append(m.notices, n)
		default:
			drained = true
		}
	}
	if !slices.Equal(m.notices, m.want) {
		t.Fatalf("notices %+v, want %+v", m.notices, m.want)
	}
}

// TestExecutionLifecycleModel: any sequence of launches by two strands,
// readiness, registrations, sends, receives, joins, cancels, lookups by
// the other strand and the programs' own exits leaves the table agreeing
// with a simple model: the live bound per strand, states, readiness,
// endpoints, queued inputs, forgotten ended executions, notices only for
// executions that ended on their own; and Close reaps every one.
func TestExecutionLifecycleModel(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		m := newExecutionModel()
		t.Repeat(map[string]func(*rapid.T){
			"launch": m.launch, "fill": m.fill, "flood": m.flood, "exit": m.exit, "register": m.register, "send": m.send,
			"receive": m.receive, "join": m.join, "cancel": m.cancel, "foreign": m.foreign,
			"": m.check,
		})
		if err := m.t.close(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, e := range m.all() {
			if running(e) {
				m.ended(e, ExecutionCancelled)
			}
		}
		m.check(t)
		if _, err := m.t.reserve((&tool.Call{Strand: "a"}).At("op", "late", 0)); codeOfErr(err) != CodeEngineClosed {
			t.Fatalf("launch after close: %v", err)
		}
	})
}
