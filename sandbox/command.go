package sandbox

import (
	"io"
	"os"
	"sync"
	"time"
)

// ExitCodeNotExecuted is Settled.ExitCode when the command never ran.
const ExitCodeNotExecuted = 127

// Stream names which pipe an Output chunk came from.
type Stream int

const (
	// Stdout is the command's standard output.
	Stdout Stream = 1
	// Stderr is the command's standard error.
	Stderr Stream = 2
)

// String returns "stdout" or "stderr".
func (s Stream) String() string {
	if s == Stderr {
		return "stderr"
	}
	return "stdout"
}

// Output is one chunk of a command's output, at most 32 KiB from the jail.
// Bytes is owned by the receiver.
type Output struct {
	Stream Stream
	Bytes  []byte
}

// Settled is how a command ended; every Execution settles exactly once.
type Settled struct {
	// ExitCode is the command's exit status; -1 when a signal ended it.
	ExitCode int `json:"exit_code"`
	// Signal names the signal that ended it ("killed"), or is empty.
	Signal string `json:"signal,omitempty"`
	// TimedOut: the jail killed the tree at the call's deadline (its
	// Timeout, the policy's WallMs, the step's wall budget, or the
	// context's deadline).
	TimedOut bool `json:"timed_out,omitempty"`
	// Cancelled: the jail killed the tree because the caller's context
	// was cancelled, Execution.Cancel was called, or the ledger cancelled
	// the call (Cancel, AbortStep, AbortOperation).
	Cancelled bool `json:"cancelled,omitempty"`
	// Failed says why the command could not run at all (e.g. it was not
	// found); empty when it ran.
	Failed string `json:"failed,omitempty"`
	// Duration is wall time from start to settlement.
	Duration time.Duration `json:"duration_ns"`
	// ProtectedCreated lists protected paths that did not exist when the
	// command started and did when it ended (a hooks directory a
	// repository lacked, say). No mount can hold a missing path
	// read-only, so the jail moves each aside once the command's tree
	// is gone, before anything outside the jail can run it.
	ProtectedCreated []Quarantine     `json:"protected_created,omitempty"`
	GitNeutralised   []Neutralisation `json:"git_neutralised,omitempty"` // repository-controlled execution the git guard disarmed in the writable roots; see Neutralisation
	// OutputLimited: the command wrote more than its output bound
	// (CallSpec.MaxOutputBytes, lowered by the jail's own bound). The
	// broker delivered exactly the bound (both streams together), dropped
	// the rest and killed the tree at the first byte past it, as at a
	// timeout; TimedOut and Cancelled stay false unless those happened
	// too. Output of exactly the bound is not limited.
	OutputLimited bool `json:"output_limited,omitempty"`
}

// Quarantine is one protected path a command created.
type Quarantine struct {
	Path string `json:"path"`
	// MovedTo is where the jail renamed it; empty when it could not.
	MovedTo string `json:"moved_to,omitempty"`
	// Err says why it could not be moved.
	Err string `json:"err,omitempty"`
}

// CallSpec is one command to clear.
type CallSpec struct {
	// Key is the {operation, step} whose budget the call is pooled in.
	Key StepKey
	// Argv is the command; Argv[0] is looked up in the PATH of the
	// command's own environment.
	Argv []string
	// Dir is the working directory (absolute); empty means the first
	// writable root, else "/".
	Dir string
	// Env is offered to the command; only names in Policy.EnvAllow pass.
	Env map[string]string
	// Stdin feeds the command; nil means /dev/null. An *os.File is the
	// command's fd 0 itself, as with os/exec (the caller may close its
	// copy once Clear returns); any other reader is copied into a pipe
	// until it ends or the command exits.
	Stdin io.Reader
	// Policy is the already composed policy the command runs under.
	Policy Policy
	// Budget is the call's demand on its step's pool.
	Budget Budget
	// Timeout kills the tree after this long; 0 means no own timeout (the
	// policy's WallMs, the step's wall budget and ctx still apply).
	Timeout time.Duration
	// MaxOutputBytes bounds what the command may write to stdout and
	// stderr together; past the bound the jail stops its tree and the
	// execution settles with OutputLimited (see there). Zero or less means
	// 256 MiB, and a jail may lower any value (broker.Options.MaxOutputBytes):
	// it is never unlimited.
	MaxOutputBytes int64
	// ExtraFile, when not nil, is handed to the command as descriptor
	// ExtraFileFD (5), open across exec (not close-on-exec), whether the
	// command's helper is started for it (the file is inherited) or was
	// started ahead (the file is passed over the helper's handoff socket
	// with SCM_RIGHTS). The command holds whatever the descriptor grants,
	// whatever its policy says: pass only what the command may use (code
	// mode passes one end of a socketpair). Descriptors 3 and 4 stay the
	// broker's own, and the command inherits no other. Nil means nothing
	// is open at ExtraFileFD in the command. The caller may close its copy
	// once Clear returns.
	ExtraFile *os.File
	// EmptyRoot, when not nil, runs the command as EmptyRootProgram in a
	// root holding nothing else (see EmptyRoot); Argv is then the
	// argument vector it is exec'd with, Argv[0] its name. Policy must
	// list no roots and keep the network off.
	EmptyRoot *EmptyRoot
	// RequiredLayers names layers (Layer* names) this call will not run
	// without, on top of the jail's own (broker.Options.RequiredLayers): when the probe already
	// says the kernel cannot apply one, Clear refuses before starting
	// anything; otherwise the helper refuses before exec once it finds
	// one not applied. Either way the refusal is DenialLayerRequired
	// wrapping a *MissingLayer that names the layer, and nothing ran.
	RequiredLayers []string
}

// Execution is a running command. Drain Output until it is closed, then
// Wait; the command is killed at its deadline whatever the consumer does,
// and output waits in a bounded queue (its size is the jail's: the broker's holds
// 16 chunks). A jail makes one with NewExecution; the zero Execution is
// a command that never ran (no output, settled with ExitCodeNotExecuted
// and Failed saying so), so a consumer never waits on one forever.
type Execution struct {
	// Enforcement reports how the command is confined. It is final when
	// Clear returns.
	Enforcement Enforcement

	out     chan Output
	done    chan struct{}
	settled Settled
	cancel  func()
	once    sync.Once

	// sending is held (shared) by every Send in flight; Settle takes it
	// alone to close out, after closing settling so blocked Sends give up.
	sending  sync.RWMutex
	settling chan struct{}
	closed   bool
}

// Output returns the command's output chunks in the order each stream
// produced them. It is closed once both streams ended, before Wait
// returns.
func (e *Execution) Output() <-chan Output {
	if e.out == nil {
		return noOutput
	}
	return e.out
}

// Done is closed once the execution settled.
func (e *Execution) Done() <-chan struct{} {
	if e.done == nil {
		return settledAlready
	}
	return e.done
}

// Wait blocks until the execution settled and returns how. Call it after
// Output is closed (or from another goroutine than the one draining).
func (e *Execution) Wait() Settled {
	if e.done == nil {
		return Settled{ExitCode: ExitCodeNotExecuted, Failed: "the jail returned an Execution it did not make with NewExecution"}
	}
	<-e.done
	return e.settled
}

// noOutput and settledAlready are the zero Execution's closed channels.
var (
	noOutput       = func() chan Output { c := make(chan Output); close(c); return c }()
	settledAlready = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
)

// Cancel kills the command's whole process tree; the execution settles
// with Cancelled set (unless it had already settled).
func (e *Execution) Cancel() {
	if e.cancel != nil {
		e.cancel()
	}
}

// Feed is a jail's end of an Execution: where it delivers the command's
// output, and how it settles it.
type Feed struct{ e *Execution }

// NewExecution returns the Execution of a command a jail is starting,
// with room for queue undelivered output chunks, and the Feed the jail
// delivers through. Cancel on the Execution calls cancel. Enforcement is
// the caller's to fill before handing the Execution out.
func NewExecution(queue int, cancel func()) (*Execution, Feed) {
	e := &Execution{
		out: make(chan Output, max(queue, 0)), done: make(chan struct{}),
		settling: make(chan struct{}), cancel: cancel,
	}
	return e, Feed{e}
}

// Send delivers one output chunk, waiting while the queue is full. It
// reports false, delivering nothing, once Settle has been called (a chunk
// sent while Settle runs may go either way) or on the zero Feed. It is
// safe from any goroutine, before or after Settle.
func (f Feed) Send(o Output) bool {
	if f.e == nil {
		return false
	}
	f.e.sending.RLock()
	defer f.e.sending.RUnlock()
	if f.e.closed {
		return false
	}
	select {
	case f.e.out <- o:
		return true
	case <-f.e.settling:
		return false
	}
}

// Settle records how the command ended, closes Output and then Done. A
// Send still waiting gives up; only the first call counts; the zero Feed
// ignores it.
func (f Feed) Settle(s Settled) {
	if f.e == nil {
		return
	}
	f.e.once.Do(func() {
		close(f.e.settling)
		f.e.sending.Lock()
		defer f.e.sending.Unlock()
		f.e.settled = s
		f.e.closed = true
		close(f.e.out)
		close(f.e.done)
	})
}
