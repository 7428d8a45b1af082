package broker

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/agentloom/loom/broker/internal/jail"
	"github.com/agentloom/loom/sandbox"
)

// Bounds on a running command's output plumbing. Host memory held for
// one command's output is at most outputQueueChunks*outputChunkBytes per
// stream plus one read buffer: a consumer slower than the command
// back-pressures the command through its pipe instead.
const (
	// outputChunkBytes is the largest Output.Bytes the broker delivers.
	outputChunkBytes = 32 << 10
	// outputQueueChunks is how many undelivered chunks may wait for the
	// consumer before the pipe readers stop reading.
	outputQueueChunks = 16
	// outputDrainGrace is how long, after the command exited, the broker
	// keeps reading its pipes when the pid namespace layer was skipped
	// (a process that left the command's group may still hold them);
	// output still unread then is dropped.
	outputDrainGrace = 2 * time.Second
	// jailSetupTimeout bounds how long a helper may take to confine
	// itself and exec before the broker kills it.
	jailSetupTimeout = 10 * time.Second
)

// Clear checks spec against its policy and budget and starts the command
// in the jail. It returns an error holding a *Denial (found with
// errors.As), and no Execution, when the policy is invalid, the budget
// refuses, no confinement exists and unconfined runs are not allowed, the
// host stays busy, the workspace is fenced, a required layer was not
// applied, or the jail could not be built. A nil error comes with a
// non-nil Execution.
func (b *Broker) Clear(ctx context.Context, spec sandbox.CallSpec) (*sandbox.Execution, error) {
	if err := sandbox.Validate(spec.Policy); err != nil {
		return nil, sandbox.NewDenial(sandbox.DenialInvalidPolicy, err.Error(), err)
	}
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return nil, sandbox.NewDenial(sandbox.DenialInvalidPolicy, "empty argv", nil)
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
		return nil, sandbox.NewDenial(sandbox.DenialUnconfinedRefused, availability(probe).String(), nil)
	}
	if err := ctx.Err(); err != nil {
		return nil, sandbox.NewDenial(sandbox.DenialStepAborted, "context ended before the command started: "+err.Error(), err)
	}

	kill := newKiller()
	ex, feed := sandbox.NewExecution(outputQueueChunks, func() { kill.fire(true) })
	phases := b.tracePhases(ex)
	phases.Mark("clear")
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

	phases.Mark("admitted")
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
		trace: phases,
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
		enf.Add(cg.layer)
	}
	ex.Enforcement = enf
	if enf.Degraded {
		b.Audit(sandbox.AuditEvent{Kind: sandbox.AuditDegraded, Workspace: dir, Detail: enf.String(), Enforcement: &ex.Enforcement})
	}
	kill.attach(proc)
	prestart := proc.schedulePrestart()

	bound := newOutputBound(b.maxOutputBytes(spec), kill.outputLimit)
	var readers sync.WaitGroup
	readers.Add(2)
	go pump(&readers, proc.stdout, sandbox.Stdout, feed, bound)
	go pump(&readers, proc.stderr, sandbox.Stderr, feed, bound)

	go kill.watch(ctx, proc, deadline)

	phases.Mark("pumping")
	go func() {
		state := proc.wait()
		phases.Mark("reaped")
		kill.killGroup() // whatever the command left in its group goes with it
		cg.remove()      // and whatever it left in its cgroup
		b.sweepCgroups() // and any helper that died unclaimed
		// In a pid namespace the kernel reaps the init only after every
		// process in it is gone, so the pipes end by themselves. Without
		// one, writers that escaped the group are cut off after a grace.
		if !proc.pidNamespace {
			grace := time.AfterFunc(outputDrainGrace, func() {
				proc.stdout.SetReadDeadline(time.Now())
				proc.stderr.SetReadDeadline(time.Now())
			})
			defer grace.Stop()
		}
		readers.Wait()
		phases.Mark("drained")
		proc.closeOutput()
		s := settle(state, execErr)
		s.Duration = time.Since(proc.started)
		settleGit(guard, &s)
		phases.Mark("guard.settle")
		if s.Signal != "" { // a tree that exited on its own was not killed
			s.TimedOut, s.Cancelled = kill.cause()
		}
		s.OutputLimited = bound.limited() // its output was cut, however it ended
		lease.release()
		b.ledger.Release(ticket)
		phases.Mark("settled")
		feed.Settle(s)
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
func callDeadline(spec sandbox.CallSpec, ticket *sandbox.Ticket) time.Time {
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
func workDir(spec sandbox.CallSpec) string {
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
// maxHostBusyWait; a jail with a mount namespace reserves its scratch
// too. The ledger's cancellation of the call ends the wait as well.
func (b *Broker) admitHost(ctx context.Context, kill *killer, deadline time.Time, probe probeResult) (*hostLease, *sandbox.Denial) {
	var scratch int64
	if probe.usernsErr == nil {
		scratch = jailScratchBytes
	}
	wait := maxHostBusyWait
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
