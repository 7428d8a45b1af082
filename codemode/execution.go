package codemode

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentloom/loom/internal/handles"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// Bounds of background executions (code_mode's launch mode).
const (
	// maxLiveExecutions is how many launched executions one strand may
	// have running at once; a launch past it is refused with
	// CodeExecutionCeiling until one ends.
	maxLiveExecutions = 8
	// maxEndedExecutions is how many ended executions are kept per strand
	// for check and join; past it the one that ended longest ago is
	// forgotten (never the one ending).
	maxEndedExecutions = 8
	// maxEndpoints bounds the endpoints one execution registers,
	// "default" included.
	maxEndpoints = 16
	// maxEndpointNameBytes bounds an endpoint's name.
	maxEndpointNameBytes = 64
	// maxQueuedInputs bounds the inputs sent to one execution and not yet
	// received, over all its endpoints.
	maxQueuedInputs = 64
	// maxInputBytes bounds one send's input.
	maxInputBytes = 256 << 10
	// maxReceiveWait bounds how long one execution.receive waits.
	maxReceiveWait = 60 * time.Second
	// defaultJoinWait is how long a join waits when wait_ms is absent;
	// maxJoinWait the most it waits.
	defaultJoinWait = 30 * time.Second
	maxJoinWait     = 120 * time.Second
	// cancelWait bounds how long a cancel waits for the execution's
	// processes to be reaped before it answers.
	cancelWait = 10 * time.Second
)

// defaultEndpoint is the endpoint Ready registers and a send names when
// it names none.
const defaultEndpoint = "default"

// executionStepPrefix begins the StepID suffix of a launched execution's
// own broker step: {operation, <launching step>/execution-<epoch>-<n>}.
const executionStepPrefix = "/execution-"

// ExecutionState is where a launched execution is.
type ExecutionState string

const (
	// ExecutionRunning: the program is running.
	ExecutionRunning ExecutionState = "running"
	// ExecutionExited: the program ended on its own (a clean exit or a
	// failure; its result says which).
	ExecutionExited ExecutionState = "exited"
	// ExecutionCancelled: a cancel, or Engine.Close, tore it down.
	ExecutionCancelled ExecutionState = "cancelled"
)

// ExecutionNotice is what Options.Notify is told when a launched
// execution ends on its own (not by its owner's cancel, nor at Close).
type ExecutionNotice struct {
	// Owner is the strand that launched it; Handle its handle.
	Owner  string
	Handle string
	State  ExecutionState
	// Code is how the run failed ("" for a clean exit); Exit its exit
	// status.
	Code tool.Code
	Exit int
}

// ExecutionStatus is what check reports of one execution.
type ExecutionStatus struct {
	Handle string         `json:"handle"`
	State  ExecutionState `json:"state"`
	// Ready: the program called execution.Ready, so sends are delivered.
	Ready bool `json:"ready"`
	// Endpoints are the endpoints it registered, in order.
	Endpoints []string `json:"endpoints,omitempty"`
	// Queued counts inputs sent and not yet received.
	Queued int `json:"queued"`
	// ElapsedMs is the time since it started (to its end, once ended).
	ElapsedMs int64 `json:"elapsed_ms"`
}

// handlePattern is the shape of every handle an Engine mints:
// "exec-<engine epoch>-<digest of the call site>".
var handlePattern = regexp.MustCompile(`^exec-([0-9a-f]{8})-[0-9a-f]{12}$`)

// endpointPattern is what an endpoint name may be.
var endpointPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// executions is an Engine's table of launched executions: handles minted
// from the launching call's identity, an owner per execution, the
// per-strand bound, and a context owned by the Engine under which every
// execution runs. Safe for concurrent use.
type executions struct {
	epoch  string
	ctx    context.Context
	cancel context.CancelFunc
	abort  func(sandbox.StepKey) // reaps a step's clearances; nil: none
	notify func(ExecutionNotice)
	now    func() time.Time

	mu sync.Mutex
	// tab holds each strand's executions (mu held): one is live in it
	// while its state is ExecutionRunning, from reserve until finish or
	// drop; its run is begun from start until its goroutine returns.
	tab *handles.Table[string, *execution]
}

// execution is one launched program.
type execution struct {
	handle string
	owner  string
	key    sandbox.StepKey
	call   *tool.Call // the launching call's copy, under the execution's step
	// runner is the broker the launching call runs it on (nil: the
	// Engine's), whose ledger teardown aborts the step in.
	runner tool.Broker
	cancel context.CancelFunc
	ctx    context.Context
	done   chan struct{} // closed once it ended

	// guarded by executions.mu
	state     ExecutionState
	started   time.Time
	ended     time.Time
	built     time.Duration // the launch's vet and build
	ready     bool
	endpoints []string
	inbox     map[string][][]byte
	queued    int
	changed   chan struct{} // closed and replaced at every change
	byOwner   bool          // the owner's cancel (or Close) ended it
	begun     bool          // start ran it (a reserved one may never be)
	result    *Execution
	err       error
}

func newExecutions(abort func(sandbox.StepKey), notify func(ExecutionNotice)) *executions {
	var b [4]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	ctx, cancel := context.WithCancel(context.Background())
	return &executions{epoch: hex.EncodeToString(b[:]), ctx: ctx, cancel: cancel, abort: abort, notify: notify,
		now: time.Now, tab: handles.New[string, *execution](maxLiveExecutions, maxEndedExecutions)}
}

// signal wakes everyone waiting on x. t.mu held.
func (x *execution) signal() {
	close(x.changed)
	x.changed = make(chan struct{})
}

// reserve admits a launch by c's strand and mints its handle and step
// from c's identity, or refuses it (CodeExecutionCeiling,
// CodeEngineClosed). The execution counts as live from here; start or
// drop it.
func (t *executions) reserve(c *tool.Call) (*execution, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	site := func(n uint64) [sha256.Size]byte {
		return sha256.Sum256([]byte(strings.Join([]string{c.Strand, c.OpID, c.StepID, strconv.Itoa(c.SourceIndex), strconv.FormatUint(n, 10)}, "\x00")))
	}
	x, err := t.tab.Admit(c.Strand, func(n uint64) string {
		s := site(n)
		return "exec-" + t.epoch + "-" + hex.EncodeToString(s[:6])
	}, func(handle string, n uint64) *execution {
		served := *c
		served.StepID = c.StepID + executionStepPrefix + t.epoch + "-" + strconv.FormatUint(n, 10)
		served.RaiseRefusal, served.ObserveOutput = nil, nil
		ctx, cancel := context.WithCancel(t.ctx)
		var runner tool.Broker
		if !noBroker(c.Broker) {
			runner = c.Broker
		}
		return &execution{
			handle: handle,
			owner:  c.Strand, key: sandbox.StepKey{OpID: served.OpID, StepID: served.StepID},
			call: &served, runner: runner, ctx: ctx, cancel: cancel, done: make(chan struct{}),
			state: ExecutionRunning, started: t.now(), inbox: map[string][][]byte{}, changed: make(chan struct{}),
		}
	})
	switch err {
	case nil:
		return x, nil
	case handles.Closed:
		return nil, &CapError{Code: CodeEngineClosed, Message: "the session is closing; no program can be launched any more"}
	}
	return nil, &CapError{Code: CodeExecutionCeiling, Message: fmt.Sprintf("strand %s already has %d launched programs running, the most it may; cancel one (%s) or let one end before launching another",
		quoteArg(c.Strand), maxLiveExecutions, strings.Join(t.tab.LiveKeys(c.Strand), ", "))}
}

// drop forgets a reserved execution that never started.
func (t *executions) drop(x *execution) {
	t.mu.Lock()
	defer t.mu.Unlock()
	x.cancel()
	t.tab.Drop(x.handle)
}

// start runs x with run on x's own context (the Engine's, never the
// launching call's) until it ends; pre is what the launch's vet and
// build produced. It refuses (CodeEngineClosed, x dropped) once Close
// began.
func (t *executions) start(x *execution, pre *Execution, run func(ctx context.Context) (*RunResult, error)) error {
	t.mu.Lock()
	if t.tab.Begin() != nil {
		t.mu.Unlock()
		t.drop(x)
		return &CapError{Code: CodeEngineClosed, Message: "the session is closing; the program was built but not started"}
	}
	x.started, x.begun = t.now(), true
	t.mu.Unlock()
	go func() {
		defer t.tab.Done()
		res, err := runRecovered(x.ctx, run)
		t.finish(x, pre, res, err)
	}()
	return nil
}

// runRecovered is run(ctx), with a panic inside it (a bug in the host,
// which no foreground Dispatch's recover stands behind here) turned
// into a CodeToolPanicked failure, so the execution still ends and its
// waiters wake.
func runRecovered(ctx context.Context, run func(ctx context.Context) (*RunResult, error)) (res *RunResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			msg := fmt.Sprint(p)
			if len(msg) > maxErrorMessageBytes {
				msg = msg[:maxErrorMessageBytes] + "…"
			}
			res, err = nil, &CapError{Code: tool.CodeToolPanicked, Message: "the launched program's run failed inside the host (a bug in the host, not in the program): " + msg}
		}
	}()
	return run(ctx)
}

// finish records how x ended, wakes its waiters, forgets the strand's
// executions that ended longest ago past maxEndedExecutions (never x:
// the order they ended in, not the order they were launched, so a long
// run that just ended is kept) and tells the owner when it ended on its
// own.
func (t *executions) finish(x *execution, pre *Execution, res *RunResult, err error) {
	x.cancel()
	t.mu.Lock()
	r := *pre
	r.Run = res
	x.result, x.err = &r, err
	x.state, x.ended = ExecutionExited, t.now()
	if x.byOwner {
		x.state = ExecutionCancelled
	}
	x.inbox, x.queued = map[string][][]byte{}, 0
	x.signal()
	close(x.done)
	t.tab.End(x.handle)
	notify := t.notify != nil && !x.byOwner
	n := ExecutionNotice{Owner: x.owner, Handle: x.handle, State: x.state}
	if res != nil {
		n.Code, n.Exit = res.Code, res.Exit
	} else if err != nil {
		n.Code = stageCode(err)
	}
	t.mu.Unlock()
	if notify {
		t.notify(n)
	}
}

// lookup returns strand's execution under handle. A handle of another
// strand is refused exactly as one never minted (CodeUnknownExecution,
// naming the strand's own handles); a well-formed handle of an earlier
// instance of the host is CodeExecutionLost.
func (t *executions) lookup(strand, handle string) (*execution, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if x, ok := t.tab.Lookup(strand, handle); ok {
		return x, nil
	}
	if m := handlePattern.FindStringSubmatch(handle); m != nil && m[1] != t.epoch {
		return nil, &CapError{Code: CodeExecutionLost, Message: fmt.Sprintf("execution %s is lost: it was launched before the host restarted and ended with it; nothing of it is kept, so launch the program again", quoteArg(handle))}
	}
	mine := t.tab.Keys(strand)
	accepted := "this strand has launched none"
	if len(mine) > 0 {
		accepted = "this strand's are " + strings.Join(mine, ", ")
	}
	return nil, &CapError{Code: CodeUnknownExecution, Message: fmt.Sprintf("no execution %s of this strand (a handle is what launch answered, like exec-0123abcd-0123456789ab, and only the %d that ended last are kept once ended); %s", quoteArg(handle), maxEndedExecutions, accepted)}
}

// status is what check reports of x.
func (t *executions) status(x *execution) ExecutionStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	end := t.now()
	if x.state != ExecutionRunning {
		end = x.ended
	}
	return ExecutionStatus{Handle: x.handle, State: x.state, Ready: x.ready, Endpoints: slices.Clone(x.endpoints),
		Queued: x.queued, ElapsedMs: end.Sub(x.started).Milliseconds()}
}

// endpointError refuses a name no endpoint may have.
func endpointError(cap, name string) error {
	if len(name) == 0 || len(name) > maxEndpointNameBytes || !endpointPattern.MatchString(name) {
		return &CapError{Code: codeInvalidCapabilityArguments, Message: fmt.Sprintf("endpoint %s is not a name: use 1 to %d letters, digits, '-' or '_'", quoteArg(name), maxEndpointNameBytes)}
	}
	return nil
}

// register adds endpoint to x's, declaring x ready when ready is set.
func (t *executions) register(x *execution, endpoint string, ready bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !slices.Contains(x.endpoints, endpoint) {
		if len(x.endpoints) >= maxEndpoints {
			return &CapError{Code: codeInvalidCapabilityArguments, Message: fmt.Sprintf("the program already registered %d endpoints, the most it may (%s)", maxEndpoints, strings.Join(x.endpoints, ", "))}
		}
		x.endpoints = append(x.endpoints, endpoint)
	}
	x.ready = x.ready || ready
	x.signal()
	return nil
}

// send queues input for x's endpoint: refused before x is ready, after
// it ended, to an endpoint it did not register, and past
// maxQueuedInputs. It returns how many inputs are then queued.
func (t *executions) send(x *execution, endpoint string, input []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case x.state != ExecutionRunning:
		return 0, &CapError{Code: CodeExecutionEnded, Message: fmt.Sprintf("execution %s has %s; nothing receives input any more (join it for its result)", x.handle, x.state)}
	case !x.ready:
		return 0, &CapError{Code: CodeExecutionNotReady, Message: fmt.Sprintf("execution %s has not called execution.Ready yet, so it takes no input; check it again later", x.handle)}
	case !slices.Contains(x.endpoints, endpoint):
		return 0, &CapError{Code: CodeUnknownEndpoint, Message: fmt.Sprintf("execution %s has no endpoint %s; it registered %s", x.handle, quoteArg(endpoint), strings.Join(x.endpoints, ", "))}
	case x.queued >= maxQueuedInputs:
		return 0, &CapError{Code: CodeInboxFull, Message: fmt.Sprintf("execution %s already has %d inputs it has not received, the most it holds; wait for it to receive some", x.handle, maxQueuedInputs)}
	}
	x.inbox[endpoint] = append(x.inbox[endpoint], slices.Clone(input))
	x.queued++
	x.signal()
	return x.queued, nil
}

// receive takes the oldest input queued for x's endpoint, waiting up to
// wait (or ctx) for one; ok is false when none came.
func (t *executions) receive(ctx context.Context, x *execution, endpoint string, wait time.Duration) (input []byte, ok bool, err error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		t.mu.Lock()
		if !slices.Contains(x.endpoints, endpoint) {
			eps := strings.Join(x.endpoints, ", ")
			t.mu.Unlock()
			if eps == "" {
				eps = "none yet (execution.Ready registers \"default\")"
			}
			return nil, false, &CapError{Code: CodeUnknownEndpoint, Message: fmt.Sprintf("no endpoint %s is registered; registered: %s", quoteArg(endpoint), eps)}
		}
		if q := x.inbox[endpoint]; len(q) > 0 {
			x.inbox[endpoint] = q[1:]
			x.queued--
			x.signal()
			t.mu.Unlock()
			return q[0], true, nil
		}
		changed := x.changed
		t.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
			return nil, false, nil
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// awaitReady waits up to wait (or ctx) until x is ready for input or has
// ended, whichever comes first.
func (t *executions) awaitReady(ctx context.Context, x *execution, wait time.Duration) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		t.mu.Lock()
		settled, changed := x.ready || x.state != ExecutionRunning, x.changed
		t.mu.Unlock()
		if settled {
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// join waits up to wait (or ctx) for x to end; once it has, ended is
// set and res and refusal are what its stages produced and the refusal
// that stopped one (as Execute returns them).
func (t *executions) join(ctx context.Context, x *execution, wait time.Duration) (res *Execution, ended bool, refusal error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-x.done:
	case <-timer.C:
	case <-ctx.Done():
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if x.state == ExecutionRunning {
		return nil, false, nil
	}
	return x.result, true, x.err
}

// teardown ends x: its context, then every clearance of its own step
// (the program and its proc.run commands; a job it started through
// cap/job runs in a step of its own and is left running). It waits for
// x to be reaped until ctx ends and reports whether it was.
func (t *executions) teardown(ctx context.Context, x *execution) bool {
	t.mu.Lock()
	if x.state == ExecutionRunning {
		x.byOwner = true
	}
	t.mu.Unlock()
	x.cancel()
	t.abortStep(x)
	select {
	case <-x.done:
		return true
	case <-ctx.Done():
		return false
	}
}

// abortStep aborts every clearance of x's own step in the ledger of the
// broker that runs it: the launching call's, else the Engine's (abort).
func (t *executions) abortStep(x *execution) {
	switch {
	case x.runner != nil:
		x.runner.Ledger().AbortStep(x.key)
	case t.abort != nil:
		t.abort(x.key)
	}
}

// close refuses every later launch, tears every execution down and waits
// until they are reaped or ctx ends.
func (t *executions) close(ctx context.Context) error {
	t.mu.Lock()
	running := t.tab.Close()
	for _, x := range running {
		x.byOwner = true
	}
	t.mu.Unlock()
	t.cancel()
	for _, x := range running {
		t.abortStep(x)
	}
	if t.tab.Wait(ctx) == nil {
		return nil
	}
	t.mu.Lock()
	left := 0
	for _, x := range running {
		if x.begun && x.state == ExecutionRunning {
			left++
		}
	}
	t.mu.Unlock()
	return fmt.Errorf("codemode: %d launched programs were not reaped before the close deadline: %w", left, ctx.Err())
}
