package broker

import (
	"context"
	"errors"
	"io"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/agentloom/loom/broker/internal/gitguard"
	"github.com/agentloom/loom/broker/internal/jail"
)

// Bounds on a running command's output plumbing. Host memory held for
// one command's output is at most OutputQueueChunks*OutputChunkBytes per
// stream plus one read buffer: a consumer slower than the command
// back-pressures the command through its pipe instead.
const (
	// OutputChunkBytes is the largest Output.Bytes the broker delivers.
	OutputChunkBytes = 32 << 10
	// OutputQueueChunks is how many undelivered chunks may wait for the
	// consumer before the pipe readers stop reading.
	OutputQueueChunks = 16
	// OutputDrainGrace is how long, after the command exited, the broker
	// keeps reading its pipes when the pid namespace layer was skipped
	// (a process that left the command's group may still hold them);
	// output still unread then is dropped.
	OutputDrainGrace = 2 * time.Second
	// JailSetupTimeout bounds how long a helper may take to confine
	// itself and exec before the broker kills it.
	JailSetupTimeout = 10 * time.Second
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

// Output is one chunk of a command's output, at most OutputChunkBytes.
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
	// TimedOut: the broker killed the tree at the call's deadline (its
	// Timeout, the policy's WallMs, the step's wall budget, or the
	// context's deadline).
	TimedOut bool `json:"timed_out,omitempty"`
	// Cancelled: the broker killed the tree because the caller's context
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
	// read-only, so the broker moves each aside once the command's tree
	// is gone, before anything outside the jail can run it.
	ProtectedCreated []Quarantine     `json:"protected_created,omitempty"`
	GitNeutralised   []Neutralisation `json:"git_neutralised,omitempty"` // repository-controlled execution the git guard disarmed in the writable roots; see Neutralisation
	// OutputLimited: the command wrote more than its output bound
	// (CallSpec.MaxOutputBytes, lowered by Options.MaxOutputBytes). The
	// broker delivered exactly the bound (both streams together), dropped
	// the rest and killed the tree at the first byte past it, as at a
	// timeout; TimedOut and Cancelled stay false unless those happened
	// too. Output of exactly the bound is not limited.
	OutputLimited bool `json:"output_limited,omitempty"`
}

// QuarantineSuffix marks where the broker moved a protected path a
// command created: <path><QuarantineSuffix>-<unix nanoseconds>.
const QuarantineSuffix = gitguard.QuarantineSuffix

// Quarantine is one protected path a command created.
type Quarantine struct {
	Path string `json:"path"`
	// MovedTo is where the broker renamed it; empty when it could not.
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
	// stderr together; past the bound the broker stops its tree and the
	// execution settles with OutputLimited (see there). Zero or less means
	// 256 MiB, and Options.MaxOutputBytes lowers any value:
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
	// without, on top of Options.RequiredLayers: when the probe already
	// says the kernel cannot apply one, Clear refuses before starting
	// anything; otherwise the helper refuses before exec once it finds
	// one not applied. Either way the refusal is DenialLayerRequired
	// wrapping a *MissingLayer that names the layer, and nothing ran.
	RequiredLayers []string
}

// Execution is a running command. Drain Output until it is closed, then
// Wait; the command is killed at its deadline whatever the consumer does,
// and output waits in a bounded queue (see OutputQueueChunks).
type Execution struct {
	// Enforcement reports how the command is confined. It is final when
	// Clear returns.
	Enforcement Enforcement

	out     chan Output
	done    chan struct{}
	settled Settled
	stop    func(cancelled bool)
	// phases are the marks of its way from Clear to settlement, kept only
	// when the broker traces them (nil otherwise); complete once Done is
	// closed.
	phases *jail.PhaseLog
}

// Output returns the command's output chunks in the order each stream
// produced them. It is closed once both streams ended, before Wait
// returns.
func (e *Execution) Output() <-chan Output { return e.out }

// Done is closed once the execution settled.
func (e *Execution) Done() <-chan struct{} { return e.done }

// Wait blocks until the execution settled and returns how. Call it after
// Output is closed (or from another goroutine than the one draining).
func (e *Execution) Wait() Settled {
	<-e.done
	return e.settled
}

// Cancel kills the command's whole process tree; the execution settles
// with Cancelled set (unless it had already settled).
func (e *Execution) Cancel() { e.stop(true) }

// Clear checks spec against its policy and budget and starts the command
// in the jail. It returns an error holding a *Denial (found with
// errors.As), and no Execution, when the policy is invalid, the budget
// refuses, no confinement exists and unconfined runs are not allowed, the
// host stays busy, the workspace is fenced, a required layer was not
// applied, or the jail could not be built. A nil error comes with a
// non-nil Execution.
func (b *Broker) Clear(ctx context.Context, spec CallSpec) (*Execution, error) {
	if err := Validate(spec.Policy); err != nil {
		return nil, NewDenial(DenialInvalidPolicy, err.Error(), err)
	}
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return nil, NewDenial(DenialInvalidPolicy, "empty argv", nil)
	}
	if d := checkEmptyRoot(spec); d != nil {
		return nil, d
	}
	probe := b.probed()
	required := b.requiredLayers(spec)
	if m := unavailableLayer(required, probe); m != nil {
		return nil, layerRequired(m)
	}
	if !probe.anyLayer() && !b.opts.AllowUnconfined {
		return nil, NewDenial(DenialUnconfinedRefused, availability(probe).String(), nil)
	}
	if err := ctx.Err(); err != nil {
		return nil, NewDenial(DenialStepAborted, "context ended before the command started: "+err.Error(), err)
	}

	ex := &Execution{out: make(chan Output, OutputQueueChunks), done: make(chan struct{})}
	if b.test.tracePhases {
		ex.phases = &jail.PhaseLog{On: true}
		ex.phases.Mark("clear")
	}
	kill := newKiller()
	ex.stop = kill.fire
	ticket, err := b.ledger.Admit(spec.Key, spec.Budget, func() { kill.fire(true) })
	if err != nil {
		return nil, err
	}
	deadline := callDeadline(spec, ticket)
	lease, d := b.admitHost(ctx, kill, deadline, probe)
	if d != nil {
		b.ledger.Release(ticket)
		return nil, d
	}

	ex.phases.Mark("admitted")
	dir := workDir(spec)
	guard, d := b.guardGit(spec.Policy)
	if d != nil {
		lease.release()
		b.ledger.Release(ticket)
		return nil, d
	}
	proc, enf, execErr, d := b.start(jailRequest{
		argv: spec.Argv, env: buildEnv(spec.Env, spec.Policy.EnvAllow), dir: dir,
		policy: spec.Policy, stdin: spec.Stdin, probe: probe,
		extra: spec.ExtraFile, emptyRoot: spec.EmptyRoot, required: required,
		trace: ex.phases,
	})
	if d != nil {
		guard.Abandon()
		b.sweepCgroups()
		lease.release()
		b.ledger.Release(ticket)
		return nil, d
	}
	cg := b.claimCgroup(proc)
	if cg != nil {
		enf.add(cg.layer)
	}
	ex.Enforcement = enf
	if enf.Degraded {
		b.Audit(AuditEvent{Kind: AuditDegraded, Workspace: dir, Detail: enf.String(), Enforcement: &ex.Enforcement})
	}
	kill.attach(proc)
	prestart := proc.schedulePrestart()

	bound := newOutputBound(b.maxOutputBytes(spec), kill.outputLimit)
	var readers sync.WaitGroup
	readers.Add(2)
	go pump(&readers, proc.stdout, Stdout, ex.out, bound)
	go pump(&readers, proc.stderr, Stderr, ex.out, bound)

	go kill.watch(ctx, proc, deadline)

	ex.phases.Mark("pumping")
	go func() {
		state := proc.wait()
		ex.phases.Mark("reaped")
		kill.killGroup() // whatever the command left in its group goes with it
		cg.remove()      // and whatever it left in its cgroup
		b.sweepCgroups() // and any helper that died unclaimed
		// In a pid namespace the kernel reaps the init only after every
		// process in it is gone, so the pipes end by themselves. Without
		// one, writers that escaped the group are cut off after a grace.
		if !proc.pidNamespace {
			grace := time.AfterFunc(OutputDrainGrace, func() {
				proc.stdout.SetReadDeadline(time.Now())
				proc.stderr.SetReadDeadline(time.Now())
			})
			defer grace.Stop()
		}
		readers.Wait()
		ex.phases.Mark("drained")
		proc.closeOutput()
		s := settle(state, execErr)
		s.Duration = time.Since(proc.started)
		settleGit(guard, &s)
		ex.phases.Mark("guard.settle")
		if s.Signal != "" { // a tree that exited on its own was not killed
			s.TimedOut, s.Cancelled = kill.cause()
		}
		s.OutputLimited = bound.limited() // its output was cut, however it ended
		lease.release()
		b.ledger.Release(ticket)
		ex.settled = s
		ex.phases.Mark("settled")
		close(ex.out)
		close(ex.done)
		proc.release()
		prestart()
	}()
	return ex, nil
}

// buildEnv keeps exactly the entries of env whose names allow lists, in
// sorted order. The helper's own marker never passes.
func buildEnv(env map[string]string, allow []string) []string {
	ok := make(map[string]bool, len(allow))
	for _, a := range allow {
		ok[a] = true
	}
	out := make([]string, 0, len(allow))
	for k, v := range env {
		if ok[k] && k != jail.EnvName {
			out = append(out, k+"="+v)
		}
	}
	sort.Strings(out)
	return out
}

// callDeadline is when spec's command is killed as timed out: the
// earliest of its Timeout, its policy's WallMs and its step's wall
// budget; zero when none applies (the context's deadline is watched
// apart).
func callDeadline(spec CallSpec, ticket *Ticket) time.Time {
	deadline := time.Time{}
	if spec.Timeout > 0 {
		deadline = time.Now().Add(spec.Timeout)
	}
	if spec.Policy.WallMs > 0 {
		deadline = earliest(deadline, time.Now().Add(time.Duration(spec.Policy.WallMs)*time.Millisecond))
	}
	return earliest(deadline, ticket.Deadline())
}

// workDir is the command's working directory: spec.Dir, else the first
// writable root, else "/".
func workDir(spec CallSpec) string {
	switch {
	case spec.Dir != "":
		return spec.Dir
	case len(spec.Policy.WritableRoots) > 0:
		return spec.Policy.WritableRoots[0]
	}
	return "/"
}

// watch kills the tree at deadline (a timeout), or when ctx ends (a
// timeout at its deadline, a cancellation otherwise), unless the command
// exited or was killed first.
func (k *killer) watch(ctx context.Context, proc *jailProcess, deadline time.Time) {
	var timer <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-proc.exited:
	case <-timer:
		k.timeout()
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			k.timeout() // the caller's deadline is a timeout too
		} else {
			k.fire(true)
		}
	case <-k.fired:
	}
}

// admitHost waits for the host-wide bounds (see Options.MaxLiveCommands
// and Options.ScratchBudgetBytes) within the call's deadline, and at most
// MaxHostBusyWait; a jail with a mount namespace reserves its scratch
// too. The ledger's cancellation of the call ends the wait as well.
func (b *Broker) admitHost(ctx context.Context, kill *killer, deadline time.Time, probe probeResult) (*hostLease, *Denial) {
	var scratch int64
	if probe.usernsErr == nil {
		scratch = jailScratchBytes
	}
	wait := MaxHostBusyWait
	if b.test.hostBusyWait > 0 {
		wait = b.test.hostBusyWait
	}
	deadline = earliest(deadline, time.Now().Add(wait))
	return b.hostBounds().acquire(ctx, kill.fired, deadline, scratch)
}

func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero():
		return a
	case b.Before(a):
		return b
	}
	return a
}

// killer kills a process tree once, remembering why.
type killer struct {
	mu        sync.Mutex
	proc      *jailProcess
	fired     chan struct{}
	once      sync.Once
	timedOut  bool
	cancelled bool
	pending   bool // fired before the process was attached
}

func newKiller() *killer { return &killer{fired: make(chan struct{})} }

func (k *killer) attach(p *jailProcess) {
	k.mu.Lock()
	k.proc = p
	pending := k.pending
	k.mu.Unlock()
	if pending {
		p.kill()
	}
}

func (k *killer) fire(cancelled bool) {
	k.once.Do(func() {
		k.mu.Lock()
		k.cancelled = cancelled
		p := k.proc
		if p == nil {
			k.pending = true
		}
		k.mu.Unlock()
		close(k.fired)
		if p != nil {
			p.kill()
		}
	})
}

func (k *killer) timeout() {
	k.once.Do(func() {
		k.mu.Lock()
		k.timedOut = true
		p := k.proc
		k.mu.Unlock()
		close(k.fired)
		p.kill()
	})
}

// outputLimit kills the tree because its output reached its bound; the
// execution's Settled then says OutputLimited, neither timed out nor
// cancelled.
func (k *killer) outputLimit() {
	k.once.Do(func() {
		k.mu.Lock()
		p := k.proc
		k.mu.Unlock()
		close(k.fired)
		p.kill()
	})
}

func (k *killer) killGroup() {
	k.mu.Lock()
	p := k.proc
	k.mu.Unlock()
	p.killGroup()
}

func (k *killer) cause() (timedOut, cancelled bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.timedOut, k.cancelled
}
