package sandbox

import (
	"fmt"
	"sync"
	"time"
)

// DefaultMaxOutstanding is the number of clearances one {operation, step}
// may have in flight when its Budget does not say: one, so an Exclusive
// tool is alone in its step. A Concurrent tool declares more headroom.
const DefaultMaxOutstanding = 1

// StepKey identifies the pool a budget is shared in: one step (one batch
// of tool calls, or a sibling such as "job/<id>") of one operation.
type StepKey struct{ OpID, StepID string }

// Budget is what one admission asks of its step's pool.
type Budget struct {
	// MaxOutstanding caps the tickets in flight in the step, this one
	// included; <= 0 means DefaultMaxOutstanding. The cap is checked
	// against each admission's own value, so a tool declaring headroom
	// does not lend it to a tool that declares none.
	MaxOutstanding int
	// Wall bounds the step's pooled wall-clock time, measured from the
	// step's first admission; 0 means no step deadline. Only the first
	// admission's Wall counts: a step's deadline never moves.
	Wall time.Duration
}

// Ticket is one admitted clearance. It stays outstanding until Release.
type Ticket struct {
	key      StepKey
	deadline time.Time
	cancel   func()

	// guarded by the ledger's mutex
	released  bool
	cancelled bool
}

// Key returns the step the ticket was admitted in.
func (t *Ticket) Key() StepKey { return t.key }

// Deadline returns the step's pooled wall deadline; the zero time means
// none.
func (t *Ticket) Deadline() time.Time { return t.deadline }

// Ledger pools clearance budgets per StepKey: how many are in flight, the
// step's wall deadline, and whether the step or its operation was
// aborted. It is safe for concurrent use. Cancel funcs are always run
// outside the ledger's lock, each at most once, so they may call back
// into the ledger.
//
// The ledger keeps a small record per step it has seen (the deadline and
// the abort must outlive the step's tickets); Forget drops an operation's
// records once the host is done with it, and a host that never calls it
// holds one record per step for the ledger's lifetime.
//
// The zero value is an empty ledger reading time from time.Now, as
// NewLedger(nil) returns.
type Ledger struct {
	now func() time.Time

	mu        sync.Mutex
	steps     map[StepKey]*stepState
	abortedOp map[string]bool
}

type stepState struct {
	deadline    time.Time
	aborted     bool
	outstanding map[*Ticket]struct{}
}

// NewLedger returns an empty ledger reading time from now (nil means
// time.Now).
func NewLedger(now func() time.Time) *Ledger {
	if now == nil {
		now = time.Now
	}
	return &Ledger{now: now, steps: map[StepKey]*stepState{}, abortedOp: map[string]bool{}}
}

// Admit admits one clearance into key's pool, or refuses it in band with
// an error holding a *Denial (found with errors.As) whose Code is:
//   - DenialStepAborted after AbortStep(key) or AbortOperation(key.OpID);
//   - DenialBudgetExpired once the step's wall deadline (fixed at its first
//     admission as now + b.Wall) has been reached;
//   - DenialOutstandingCapReached when Outstanding(key) already equals the
//     cap (b.MaxOutstanding, or DefaultMaxOutstanding).
//
// cancel (may be nil) is what Cancel, AbortStep and AbortOperation run to
// stop the admitted work; it runs at most once and never after Release.
func (l *Ledger) Admit(key StepKey, b Budget, cancel func()) (*Ticket, error) {
	limit := b.MaxOutstanding
	if limit <= 0 {
		limit = DefaultMaxOutstanding
	}
	now := time.Now
	if l.now != nil {
		now = l.now
	}
	at := now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	st := l.steps[key]
	if l.abortedOp[key.OpID] || (st != nil && st.aborted) {
		return nil, &Denial{Code: DenialStepAborted, Reason: fmt.Sprintf("step %q of operation %q was aborted", key.StepID, key.OpID)}
	}
	if st == nil {
		st = &stepState{outstanding: map[*Ticket]struct{}{}}
		if b.Wall > 0 {
			st.deadline = at.Add(b.Wall)
		}
		l.steps[key] = st
	}
	if !st.deadline.IsZero() && !at.Before(st.deadline) {
		return nil, &Denial{Code: DenialBudgetExpired, Reason: fmt.Sprintf("step %q of operation %q passed its wall deadline %s", key.StepID, key.OpID, st.deadline.Format(time.RFC3339Nano))}
	}
	if len(st.outstanding) >= limit {
		return nil, &Denial{Code: DenialOutstandingCapReached, Reason: fmt.Sprintf("step %q already has %d of %d commands in flight; wait for one to finish", key.StepID, len(st.outstanding), limit)}
	}
	t := &Ticket{key: key, deadline: st.deadline, cancel: cancel}
	st.outstanding[t] = struct{}{}
	return t, nil
}

// Release ends t: it no longer counts as outstanding and can no longer be
// cancelled. Releasing twice, or a nil ticket, does nothing.
func (l *Ledger) Release(t *Ticket) {
	if t == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if t.released {
		return
	}
	t.released = true
	if st := l.steps[t.key]; st != nil {
		delete(st.outstanding, t)
	}
}

// Cancel runs t's cancel func unless it already ran or t was released.
// The ticket stays outstanding until Release: the work is stopping, not
// stopped.
func (l *Ledger) Cancel(t *Ticket) {
	if t == nil {
		return
	}
	l.mu.Lock()
	f := l.markCancelled(t)
	l.mu.Unlock()
	if f != nil {
		f()
	}
}

// markCancelled reports the cancel func to run for t, if any. l.mu held.
func (l *Ledger) markCancelled(t *Ticket) func() {
	if t.released || t.cancelled {
		return nil
	}
	t.cancelled = true
	if t.cancel == nil {
		return func() {}
	}
	return t.cancel
}

// AbortStep cancels every outstanding ticket of key and refuses every
// later admission into it. It returns how many tickets it cancelled
// (those already cancelled are not counted again).
func (l *Ledger) AbortStep(key StepKey) int {
	l.mu.Lock()
	l.init()
	st := l.steps[key]
	if st == nil {
		st = &stepState{outstanding: map[*Ticket]struct{}{}}
		l.steps[key] = st
	}
	st.aborted = true
	fs := l.cancelAll(st)
	l.mu.Unlock()
	return runAll(fs)
}

// AbortOperation aborts every step of opID (sibling steps such as
// "job/<id>" included) and refuses later admissions into any step of it,
// including steps not yet seen. It returns how many tickets it cancelled.
func (l *Ledger) AbortOperation(opID string) int {
	l.mu.Lock()
	l.init()
	l.abortedOp[opID] = true
	var fs []func()
	for k, st := range l.steps {
		if k.OpID == opID {
			st.aborted = true
			fs = append(fs, l.cancelAll(st)...)
		}
	}
	l.mu.Unlock()
	return runAll(fs)
}

// init makes the maps of a zero Ledger. l.mu held.
func (l *Ledger) init() {
	if l.steps == nil {
		l.steps = map[StepKey]*stepState{}
	}
	if l.abortedOp == nil {
		l.abortedOp = map[string]bool{}
	}
}

func (l *Ledger) cancelAll(st *stepState) []func() {
	var fs []func()
	for t := range st.outstanding {
		if f := l.markCancelled(t); f != nil {
			fs = append(fs, f)
		}
	}
	return fs
}

func runAll(fs []func()) int {
	for _, f := range fs {
		f()
	}
	return len(fs)
}

// Outstanding returns how many tickets of key are admitted and not yet
// released.
func (l *Ledger) Outstanding(key StepKey) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st := l.steps[key]; st != nil {
		return len(st.outstanding)
	}
	return 0
}

// Forget drops everything the ledger remembers about opID (deadlines,
// aborts), after cancelling any ticket still outstanding in it; a later
// admission into that operation starts afresh. A host calls it when an
// operation has ended for good, so a long-lived ledger stays small. It
// returns how many tickets it cancelled.
func (l *Ledger) Forget(opID string) int {
	l.mu.Lock()
	delete(l.abortedOp, opID)
	var fs []func()
	for k, st := range l.steps {
		if k.OpID == opID {
			fs = append(fs, l.cancelAll(st)...)
			delete(l.steps, k)
		}
	}
	l.mu.Unlock()
	return runAll(fs)
}
