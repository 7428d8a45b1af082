package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentloom/loom/tool"
)

// Spawn implements Agency. The child is named MintName(c, req.Purpose); a
// call site (SiteOf(c)) that already minted a child reconciles onto it
// (Reconciled), whatever the purpose, and starts nothing. Otherwise the
// depth cap, the parent's fan-out and the session's running strands are
// checked, the child's tool set is fixed, and its first run starts in its
// own goroutine. Under Govern, a tools list naming a tool the registry
// does not offer is refused first, with CodeUnknownSpawnTool.
func (a *Reference) Spawn(ctx context.Context, c Caller, req SpawnRequest) (Spawned, error) {
	if err := a.checkSpawn(req); err != nil {
		return Spawned{}, err
	}
	budget, err := a.clampBudget(req.Deadline)
	if err != nil {
		return Spawned{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return Spawned{}, refuse(CodeAgencyClosed, "the session's Agency is closed")
	}
	parent, err := a.callerLocked(c)
	if err != nil {
		return Spawned{}, err
	}
	site := SiteOf(c)
	if name, ok := a.sites[site]; ok {
		r := a.strands[name].receipt
		r.Reconciled = true
		return r, nil
	}
	name := MintName(c, req.Purpose)
	depth := 1
	if parent != nil {
		depth = parent.depth + 1
	}
	if depth > a.opts.DepthCap {
		return Spawned{}, refuse(CodeDepthCap, "a child of %q would be at depth %d; the cap is %d", c.Strand, depth, a.opts.DepthCap)
	}
	if err := a.capacityLocked(c.Strand); err != nil {
		return Spawned{}, err
	}
	tools, err := a.childTools(parent, c, req.Tools)
	if err != nil {
		return Spawned{}, err
	}
	s := &strand{
		name: name, parent: c.Strand, purpose: strings.TrimSpace(req.Purpose), model: req.Model,
		depth: depth, tools: tools, schema: req.Result, detach: req.Detach,
	}
	r := a.startLocked(s, req.Prompt, budget)
	s.receipt = Spawned{Handle: r.handle(name), Tools: slices.Clone(tools), Model: req.Model, Deadline: r.deadline, Budget: budget, Purpose: s.purpose}
	a.strands[name] = s
	a.sites[site] = name
	a.order = append(a.order, name)
	a.kids[c.Strand] = append(a.kids[c.Strand], name)
	return s.receipt, nil
}

func (a *Reference) checkSpawn(req SpawnRequest) error {
	if err := req.Check(); err != nil {
		return err
	}
	if err := a.checkToolNames(req.Tools); err != nil {
		return err
	}
	if req.Model != "" && !slices.Contains(a.opts.Models, req.Model) {
		if len(a.opts.Models) == 0 {
			return refuse(CodeUnknownModel, "this host offers no model choice; omit model")
		}
		return refuse(CodeUnknownModel, "model %s is not offered; choose one of %s", quote(req.Model), strings.Join(a.opts.Models, ", "))
	}
	return nil
}

// capacityLocked checks the caps a new running run of a child of parent
// must fit under.
func (a *Reference) capacityLocked(parent string) error {
	if a.children[parent] >= a.opts.FanOut {
		return refuse(CodeFanOut, "%q already has %d children running, the most allowed; wait for one to finish", parent, a.opts.FanOut)
	}
	if a.live >= a.opts.SessionStrands {
		return refuse(CodeSessionStrands, "the session already has %d strands running, the most allowed; wait for one to finish", a.opts.SessionStrands)
	}
	return nil
}

// childTools fixes a child's tool set: the explicit list (every name held
// by the parent) or the default, then the floor the parent holds. nil
// means every tool (a root holding everything, with no ChildTools set).
func (a *Reference) childTools(parent *strand, c Caller, asked []string) ([]string, error) {
	holds := func(t string) bool {
		if parent != nil {
			return parent.holds(t)
		}
		return a.opts.RootTools == nil || slices.Contains(a.opts.RootTools, t)
	}
	var base []string
	switch {
	case asked != nil:
		for _, t := range asked {
			if !holds(t) {
				return nil, refuse(tool.CodeToolNotHeld, "tool %s is not held by %q, so a child cannot be given it", quote(t), c.Strand)
			}
		}
		base = asked
	case a.opts.ChildTools != nil:
		for _, t := range a.opts.ChildTools {
			if holds(t) {
				base = append(base, t)
			}
		}
	case parent != nil && parent.tools != nil:
		base = parent.tools
	case parent == nil && a.opts.RootTools != nil:
		base = a.opts.RootTools
	default:
		return nil, nil
	}
	var out []string
	for _, t := range base {
		if (asked != nil || t != SpawnToolName) && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	for _, t := range FloorTools() {
		if holds(t) && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	if out == nil {
		out = []string{}
	}
	return out, nil
}

// Send implements Agency.
func (a *Reference) Send(ctx context.Context, c Caller, req SendRequest) (Delivery, error) {
	if err := req.Check(); err != nil {
		return Delivery{}, err
	}
	budget, err := a.clampBudget(req.Budget)
	if err != nil {
		return Delivery{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return Delivery{}, refuse(CodeAgencyClosed, "the session's Agency is closed")
	}
	if _, err := a.callerLocked(c); err != nil {
		return Delivery{}, err
	}
	s, err := a.targetLocked(c, req.To)
	if err != nil {
		return Delivery{}, err
	}
	if r := s.latest(); r.state == Running {
		if len(s.inbox) >= maxInboxMessages {
			return Delivery{}, refuse(CodeInvalidRequest, "%q already has %d undelivered messages; wait for it", s.name, maxInboxMessages)
		}
		s.inbox = append(s.inbox, req.Message)
		return Delivery{Kind: Delivered, Handle: r.handle(s.name), Deadline: r.deadline}, nil
	}
	if err := a.capacityLocked(s.parent); err != nil {
		return Delivery{}, err
	}
	prompt := strings.Join(append(s.inbox, req.Message), "\n\n")
	s.inbox = nil
	r := a.startLocked(s, prompt, budget)
	return Delivery{Kind: Started, Handle: r.handle(s.name), Deadline: r.deadline, Budget: budget}, nil
}

// startLocked appends a run to s and starts it.
func (a *Reference) startLocked(s *strand, prompt string, budget time.Duration) *run {
	deadline := time.Now().Add(budget)
	ctx, abort := context.WithCancelCause(a.base)
	ctx, stop := context.WithDeadlineCause(ctx, deadline, abortCause{AbortBudgetExpired})
	earlier, omitted := earlierOf(s.runs)
	r := &run{
		op:       fmt.Sprintf("run-%d", len(s.runs)+1),
		deadline: deadline,
		state:    Running,
		abort:    abort,
		done:     make(chan struct{}),
	}
	r.prompt, r.cut = truncate(prompt, maxExchangeBytes)
	s.runs = append(s.runs, r)
	a.live++
	a.children[s.parent]++
	turn := Turn{
		Strand: s.name, Operation: r.op, Parent: s.parent, Purpose: s.purpose,
		Prompt: prompt, Earlier: earlier, EarlierOmitted: omitted, Tools: slices.Clone(s.tools), Model: s.model, Notice: notice(s),
		Result: s.schema, Deadline: deadline, Inbox: func() []string { return a.drain(s) },
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer stop()
		defer abort(nil)
		text, err := a.call(ctx, turn)
		a.finish(ctx, s, r, text, err)
	}()
	return r
}

// call runs the runner, returning early (and abandoning its answer) when
// ctx ends, and turning a runner panic into an error.
func (a *Reference) call(ctx context.Context, t Turn) (string, error) {
	type answer struct {
		text string
		err  error
	}
	ch := make(chan answer, 1)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer func() {
			if p := recover(); p != nil {
				ch <- answer{err: fmt.Errorf("the runner panicked: %v", p)}
			}
		}()
		text, err := a.runner.Run(ctx, t)
		ch <- answer{text, err}
	}()
	select {
	case ans := <-ch:
		return ans.text, ans.err
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
}

// drain hands the runner s's inbox and records the messages on the
// running run, where a later continuation's Turn.Earlier shows them.
func (a *Reference) drain(s *strand) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := s.inbox
	s.inbox = nil
	if r := s.latest(); len(m) > 0 && r.state == Running && !r.cut {
		r.prompt, r.cut = truncate(r.prompt+"\n\n"+strings.Join(m, "\n\n"), maxExchangeBytes)
	}
	return m
}

// earlierOf is Turn.Earlier of a run following runs (all ended): the
// newest runs whose prompts and reports fit in MaxEarlierBytes, oldest
// first, and how many older ones it leaves out.
func earlierOf(runs []*run) ([]Exchange, int) {
	var out []Exchange
	total := 0
	i := len(runs) - 1
	for ; i >= 0; i-- {
		r := runs[i]
		report, cut := truncate(r.report, maxExchangeBytes)
		if total+len(r.prompt)+len(report) > MaxEarlierBytes {
			break
		}
		total += len(r.prompt) + len(report)
		out = append(out, Exchange{Operation: r.op, Prompt: r.prompt, Report: report, State: r.state, Cut: cut || r.cut})
	}
	slices.Reverse(out)
	return out, i + 1
}

// finish records a run's end, judges its result and reaps its children.
func (a *Reference) finish(ctx context.Context, s *strand, r *run, text string, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var ac abortCause
	switch {
	case ctx.Err() != nil && err != nil && errors.As(context.Cause(ctx), &ac):
		r.state, r.reason = Aborted, ac.reason
		r.report = fmt.Sprintf("the run was aborted (%s)", ac.reason)
	case ctx.Err() != nil && err != nil:
		r.state, r.reason = Aborted, AbortCancelled
		r.report = "the run was cancelled"
	case err != nil:
		r.state, r.report = Failed, err.Error()
	default:
		r.state, r.report = Completed, text
	}
	var note []byte
	if e, ok := a.notes[NoteKey(s.name, ResultNoteKey)]; ok {
		note = e.value
	}
	r.result = Judge(s.schema, note)
	a.live--
	a.children[s.parent]--
	if a.children[s.parent] == 0 {
		delete(a.children, s.parent)
	}
	close(r.done)
	a.reapChildrenLocked(s.name)
}

// reapChildrenLocked aborts the running, undetached children of parent.
func (a *Reference) reapChildrenLocked(parent string) {
	for _, name := range a.kids[parent] {
		c := a.strands[name]
		if !c.detach && c.latest().state == Running {
			c.latest().abort(abortCause{AbortParentFinished})
		}
	}
}
