package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentloom/loom/tool"
)

// Reference is the in-process Agency: a lineage ledger, the session
// blackboard and todo cells in memory, and child runs in goroutines.
// Safe for concurrent use. Close it when the session ends.
type Reference struct {
	runner   Runner
	opts     Options                       // defaults applied
	registry atomic.Pointer[tool.Registry] // set by Govern; nil: tool names unchecked

	base   context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup

	mu           sync.Mutex
	closed       bool
	strands      map[string]*strand
	sites        map[CallSite]string // the child each call site minted
	order        []string            // strand names in creation order
	kids         map[string][]string // child names per parent, in creation order
	live         int                 // running runs in the session
	children     map[string]int      // running children per parent strand
	notes        map[string]noteEntry
	written      map[string]int // notes written per strand
	writtenBytes map[string]int // note bytes written per strand
	todos        map[string]*todoCell
}

var _ Agency = (*Reference)(nil)

// NewAgency returns the reference Agency running children with runner
// under opts (zero fields take the defaults Options documents). A runner
// that panics, or a nil one, fails the run it was handed; nothing panics
// into the host.
func NewAgency(runner Runner, opts Options) *Reference {
	base, cancel := context.WithCancelCause(context.Background())
	return &Reference{
		runner:       runner,
		opts:         opts.withDefaults(),
		base:         base,
		cancel:       cancel,
		strands:      map[string]*strand{},
		sites:        map[CallSite]string{},
		children:     map[string]int{},
		kids:         map[string][]string{},
		notes:        map[string]noteEntry{},
		written:      map[string]int{},
		writtenBytes: map[string]int{},
		todos:        map[string]*todoCell{},
	}
}

// Options returns the options in force, defaults applied.
func (a *Reference) Options() Options { return a.opts }

// MaxWaitMs implements Agency.
func (a *Reference) MaxWaitMs() int { return int(a.opts.MaxWait / time.Millisecond) }

// ModelNames implements Agency.
func (a *Reference) ModelNames() []string { return slices.Clone(a.opts.Models) }

// Close aborts every running run with AbortClosed, refuses everything
// that would start one, and waits for the runners to return.
func (a *Reference) Close() error {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.cancel(abortCause{AbortClosed})
	a.wg.Wait()
	return nil
}

// RunEnded tells the Agency that a root strand's run ended: its running
// children that were not detached are aborted with AbortParentFinished.
// (A child's own run ending does the same to its children without being
// told.)
func (a *Reference) RunEnded(strand string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reapChildrenLocked(strand)
}

// strand is one ledger entry.
type strand struct {
	name, parent, purpose, model string
	depth                        int
	tools                        []string // nil: every tool
	schema                       *ResultSchema
	detach                       bool
	receipt                      Spawned
	runs                         []*run
	inbox                        []string
}

func (s *strand) latest() *run { return s.runs[len(s.runs)-1] }

func (s *strand) holds(name string) bool {
	return s.tools == nil || slices.Contains(s.tools, name)
}

// run is one operation of a strand.
type run struct {
	op       string
	prompt   string // what started the run, then what it drained
	cut      bool   // prompt was cut to maxExchangeBytes
	deadline time.Time
	state    State
	report   string
	reason   AbortReason
	result   TerminalResult
	abort    context.CancelCauseFunc
	done     chan struct{}
}

func (r *run) handle(strand string) Handle { return Handle{Strand: strand, Operation: r.op} }

// abortCause is the cancellation cause carrying an abort reason.
type abortCause struct{ reason AbortReason }

func (c abortCause) Error() string { return "aborted: " + string(c.reason) }

// caller checks that c names a strand this Agency can judge: a known
// subagent, or a root whose name cannot be confused with minted names or
// handles. It returns the ledger entry (nil for a root).
func (a *Reference) callerLocked(c Caller) (*strand, error) {
	if tool.IsSubagent(c.Strand) {
		s, ok := a.strands[c.Strand]
		if !ok {
			return nil, refuse(CodeUnknownHandle, "the calling strand %q is not one this Agency minted", c.Strand)
		}
		return s, nil
	}
	if c.Strand == "" || strings.ContainsAny(c.Strand, "#@/ \t\n") {
		return nil, refuse(CodeInvalidRequest, "a root strand name must be non-empty without '#', '@', '/' or spaces; got %q", c.Strand)
	}
	return nil, nil
}

// descendantLocked reports whether target descends from ancestor.
func (a *Reference) descendantLocked(ancestor string, target *strand) bool {
	for p := target.parent; ; {
		if p == ancestor {
			return true
		}
		s, ok := a.strands[p]
		if !ok {
			return false
		}
		p = s.parent
	}
}

// targetLocked resolves a strand a caller addresses, enforcing lineage.
func (a *Reference) targetLocked(c Caller, name string) (*strand, error) {
	s, ok := a.strands[name]
	if !ok {
		return nil, refuse(CodeUnknownHandle, "no strand %s exists; use a handle agent_spawn or agent_send returned", quote(name))
	}
	if !a.descendantLocked(c.Strand, s) {
		return nil, refuse(CodeNotDescendant, "strand %q is not a descendant of %q; only strands you spawned (or they spawned) can be addressed", name, c.Strand)
	}
	return s, nil
}

func (a *Reference) clampBudget(d time.Duration) (time.Duration, error) {
	switch {
	case d < 0:
		return 0, refuse(CodeInvalidRequest, "a deadline must not be negative")
	case d == 0:
		return a.opts.RunBudget, nil
	case d > a.opts.MaxRunBudget:
		return a.opts.MaxRunBudget, nil
	}
	return d, nil
}

func notice(s *strand) string {
	var b strings.Builder
	tools := "every tool the host offers"
	if s.tools != nil {
		tools = strings.Join(s.tools, ", ")
		if tools == "" {
			tools = "none"
		}
	}
	fmt.Fprintf(&b, "You are sub-agent %s, spawned by %s for: %s. Your tools: %s. Your final message is your report to your parent.",
		s.name, s.parent, s.purpose, tools)
	if s.schema != nil {
		fmt.Fprintf(&b, " Before you finish, record your result with %s under key %q as a JSON object matching %s.",
			NoteToolName, ResultNoteKey, s.schema.String())
	}
	return b.String()
}
