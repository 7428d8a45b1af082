package agent

import (
	"context"
	"slices"
	"time"

	"github.com/agentloom/loom/tool"
)

// Wait implements Agency. Every handle is checked before anything waits;
// then one deadline covers them all, and each answer is a snapshot taken
// when the last run finished or the deadline passed.
func (a *Reference) Wait(ctx context.Context, c Caller, handles []Handle, wait time.Duration) ([]Waited, error) {
	switch {
	case len(handles) == 0:
		return nil, refuse(CodeInvalidRequest, "name at least one handle")
	case len(handles) > MaxWaitHandles:
		return nil, refuse(CodeInvalidRequest, "%d handles, more than %d", len(handles), MaxWaitHandles)
	case wait < 0 || wait > a.opts.MaxWait:
		return nil, refuse(CodeWaitTooLong, "a wait must be between 0 and %d ms; got %d ms", a.MaxWaitMs(), wait.Milliseconds())
	}
	a.mu.Lock()
	if _, err := a.callerLocked(c); err != nil {
		a.mu.Unlock()
		return nil, err
	}
	runs := make([]*run, len(handles))
	for i, h := range handles {
		s, err := a.targetLocked(c, h.Strand)
		if err != nil {
			a.mu.Unlock()
			return nil, err
		}
		for _, r := range s.runs {
			if r.op == h.Operation {
				runs[i] = r
			}
		}
		if runs[i] == nil {
			a.mu.Unlock()
			return nil, refuse(CodeUnknownHandle, "strand %q has no operation %q", h.Strand, h.Operation)
		}
	}
	a.mu.Unlock()

	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for _, r := range runs {
		select {
		case <-r.done:
		case <-wctx.Done():
		}
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Waited, len(handles))
	for i, r := range runs {
		out[i] = Waited{
			Handle: handles[i], Ready: r.state != Running, State: r.state,
			Report: r.report, AbortReason: r.reason, Result: r.result, Deadline: r.deadline,
		}
	}
	return out, nil
}

// Roster implements Agency: the caller's descendants in creation order.
func (a *Reference) Roster(ctx context.Context, c Caller) ([]Peer, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.callerLocked(c); err != nil {
		return nil, err
	}
	var peers []Peer
	for _, name := range a.order {
		s := a.strands[name]
		if !a.descendantLocked(c.Strand, s) {
			continue
		}
		rel := Descendant
		if s.parent == c.Strand {
			rel = Child
		}
		r := s.latest()
		peers = append(peers, Peer{
			Strand: s.name, Relation: rel, Parent: s.parent, Purpose: s.purpose, Depth: s.depth,
			Latest: r.handle(s.name), State: r.state, AbortReason: r.reason, Model: s.model,
			Deadline: r.deadline, Runs: len(s.runs),
		})
	}
	return peers, nil
}

// Holds implements Agency.
func (a *Reference) Holds(ctx context.Context, c Caller, name string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, err := a.callerLocked(c)
	if err != nil {
		return err
	}
	held := s != nil && s.holds(name)
	if s == nil {
		held = a.opts.RootTools == nil || slices.Contains(a.opts.RootTools, name)
	}
	if !held {
		return refuse(tool.CodeToolNotHeld, "%q does not hold %s", c.Strand, name)
	}
	return nil
}
