package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Tool names of the agent family.
const (
	SpawnToolName  = "agent_spawn"
	SendToolName   = "agent_send"
	WaitToolName   = "agent_wait"
	NoteToolName   = "agent_note"
	NotesToolName  = "agent_notes"
	RosterToolName = "agent_roster"
	TodoToolName   = "todo"
)

// FloorTools is a child's communication floor: added back to an explicit
// tools list (when the parent holds them) so a child can always report.
// agent_spawn is never part of it.
var FloorTools = []string{NoteToolName, SendToolName}

// Defaults of Limits. Each applies when the corresponding field is zero.
const (
	// DefaultDepthCap: children nest at most this deep below a root.
	DefaultDepthCap = 3
	// DefaultFanOut: running children of one parent at once.
	DefaultFanOut = 8
	// DefaultSessionStrands: running strands of the whole session at once.
	DefaultSessionStrands = 32
	// DefaultMaxWait: the longest single wait.
	DefaultMaxWait = 30 * time.Second
	// DefaultRunBudget: a run's deadline when the request names none.
	DefaultRunBudget = 10 * time.Minute
	// DefaultMaxRunBudget: the longest deadline a request may name.
	DefaultMaxRunBudget = time.Hour
)

// Bounds the reference Agency enforces on requests.
const (
	// MaxPurposeBytes bounds a spawn's purpose.
	MaxPurposeBytes = 200
	// MaxPromptBytes bounds a spawn's prompt and a sent message.
	MaxPromptBytes = 64 << 10
	// MaxSpawnTools bounds an explicit tools list.
	MaxSpawnTools = 64
	// MaxWaitHandles bounds the handles of one wait.
	MaxWaitHandles = 16
	// MaxInboxMessages bounds the messages queued for one strand.
	MaxInboxMessages = 64
	// MaxNoteBytes bounds one note's JSON value.
	MaxNoteBytes = 16 << 10
	// MaxNoteKeyBytes bounds a note's relative key.
	MaxNoteKeyBytes = 128
	// MaxNotesPerStrand bounds the notes one strand may write.
	MaxNotesPerStrand = 256
	// MaxNotesListed bounds the entries one Notes read returns.
	MaxNotesListed = 64
)

// Limits configures NewAgency. Zero fields take the Default constants.
type Limits struct {
	DepthCap       int
	FanOut         int
	SessionStrands int
	MaxWait        time.Duration
	RunBudget      time.Duration
	MaxRunBudget   time.Duration
	// Models are the catalogue names a spawn may ask for.
	Models []string
	// RootTools are the tools a root strand holds; nil means every tool.
	RootTools []string
	// ChildTools is a child's tool set when its spawn names none; nil
	// means the parent's own set without agent_spawn.
	ChildTools []string
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.DepthCap, DefaultDepthCap)
	def(&l.FanOut, DefaultFanOut)
	def(&l.SessionStrands, DefaultSessionStrands)
	defd(&l.MaxWait, DefaultMaxWait)
	defd(&l.RunBudget, DefaultRunBudget)
	defd(&l.MaxRunBudget, DefaultMaxRunBudget)
	if l.RunBudget > l.MaxRunBudget {
		l.RunBudget = l.MaxRunBudget
	}
	l.Models = slices.Clone(l.Models)
	l.RootTools = slices.Clone(l.RootTools)
	l.ChildTools = slices.Clone(l.ChildTools)
	return l
}

// Turn is one child run handed to the host's Runner.
type Turn struct {
	Strand    string
	Operation string
	Parent    string
	Purpose   string
	// Prompt is the spawn's prompt, or the message(s) that started a
	// continuation.
	Prompt string
	// Tools is the child's tool set; Model its model ("" = host routing).
	Tools []string
	Model string
	// Notice tells the child its real tool set, that its final message is
	// its report, and where a result contract wants its value. A runner
	// shows it to the model (for example as a system message).
	Notice string
	// Result is the spawn's contract, or nil.
	Result *ResultSchema
	// Deadline is when the run is aborted.
	Deadline time.Time
	// Inbox drains the messages sent to the strand while it runs. A
	// runner calls it between model steps; messages never drained are
	// prepended to the strand's next continuation.
	Inbox func() []string
}

// Runner runs one child turn (a model with its tools, until it gives a
// final answer) and returns that final text. It must honour ctx: its
// deadline is the run's budget. A Runner is called from its own goroutine
// and must be safe for concurrent use. The host dispatches the child's
// tool calls with a tool.Call whose Strand is Turn.Strand and whose OpID
// is Turn.Operation.
type Runner interface {
	Run(ctx context.Context, t Turn) (string, error)
}

// RunnerFunc adapts a function to Runner.
type RunnerFunc func(ctx context.Context, t Turn) (string, error)

// Run calls f.
func (f RunnerFunc) Run(ctx context.Context, t Turn) (string, error) { return f(ctx, t) }

// Reference is the in-process Agency: a lineage ledger, the session
// blackboard and todo cells in memory, and child runs in goroutines.
// Safe for concurrent use. Close it when the session ends.
type Reference struct {
	runner Runner
	limits Limits

	base   context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	strands  map[string]*strand
	order    []string       // strand names in creation order
	live     int            // running runs in the session
	children map[string]int // running children per parent strand
	notes    map[string]noteEntry
	written  map[string]int // notes written per strand
	todos    map[string]*todoCell
}

var _ Agency = (*Reference)(nil)

// NewAgency returns the reference Agency running children with runner
// under limits (zero fields take the defaults).
func NewAgency(runner Runner, limits Limits) *Reference {
	base, cancel := context.WithCancelCause(context.Background())
	return &Reference{
		runner:   runner,
		limits:   limits.withDefaults(),
		base:     base,
		cancel:   cancel,
		strands:  map[string]*strand{},
		children: map[string]int{},
		notes:    map[string]noteEntry{},
		written:  map[string]int{},
		todos:    map[string]*todoCell{},
	}
}

// Limits returns the limits in force, defaults applied.
func (a *Reference) Limits() Limits { return a.limits }

// MaxWaitMs implements Agency.
func (a *Reference) MaxWaitMs() int { return int(a.limits.MaxWait / time.Millisecond) }

// ModelNames implements Agency.
func (a *Reference) ModelNames() []string { return slices.Clone(a.limits.Models) }

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

func (s *strand) holds(tool string) bool {
	return s.tools == nil || slices.Contains(s.tools, tool)
}

// run is one operation of a strand.
type run struct {
	op       string
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
	if IsSubagent(c.Strand) {
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
		return nil, refuse(CodeUnknownHandle, "no strand %q exists; use a handle agent_spawn or agent_send returned", name)
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
		return a.limits.RunBudget, nil
	case d > a.limits.MaxRunBudget:
		return a.limits.MaxRunBudget, nil
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
