package broker

import (
	"fmt"
	"os"
	"os/exec"
	"time"
)

// flavour is what a helper must be started with, before anything about
// its command is known: whether it gets namespaces, and whether a
// network namespace among them.
type flavour struct{ namespaces, newNet bool }

// waitingHelper is a helper process started and blocked reading its
// configuration. It holds no policy and has confined nothing yet: its
// namespaces are fresh, empty and its own.
type waitingHelper struct {
	proc    *jailProcess
	flavour flavour
	cfgW    *os.File // fd 3 in the helper: configuration in
	repR    *os.File // fd 4 in the helper: report out
	stdinW  *os.File // fd 0 in the helper; nil when the command's own file is
	// handoff is the broker's end of a warm helper's handoff socket (the
	// helper's ExtraFileFD; see extraHandoff); nil for a helper started
	// for its command.
	handoff *os.File
	born    time.Time
	retire  *time.Timer // set while the helper waits in the warm slot
	// who is the host's identity when the helper was started, which the
	// helper (and so the command) carries.
	who identity
	// lease is a warm helper's share of the host-wide bounds (nil for a
	// helper started for a command, which holds its own); released when
	// the helper is discarded or handed its command.
	lease *hostLease
	// cg is the cgroup the helper was born into, or nil; a discarded
	// helper's is removed once it is reaped.
	cg *helperCgroup
}

// identity is a process's user and group ids.
type identity struct{ uid, gid, euid, egid int }

// currentIdentity is this process's identity now.
func currentIdentity() identity {
	return identity{os.Getuid(), os.Getgid(), os.Geteuid(), os.Getegid()}
}

// pipe is one os.Pipe whose ends are closed together on failure.
type pipe struct{ r, w *os.File }

// spawnHelper is spawnHelperWith holding no extra file.
func (b *Broker) spawnHelper(f flavour, stdin *os.File, warm bool) (*waitingHelper, error) {
	return b.spawnHelperWith(f, stdin, nil, warm)
}

// spawnHelperWith starts a helper of flavour f with fresh pipes for its
// standard streams, configuration and report; stdin, when not nil, is
// the helper's fd 0 instead of a pipe, and extra, when not nil, its
// ExtraFileFD (the command's CallSpec.ExtraFile); a warm helper holds a
// handoff socket there instead. A helper with namespaces is
// started through a launcher when the host is large, and always when
// warm (not awaited by a command): the launcher is a vfork, while a
// direct start copies the host's page tables and stalls the host's
// allocating threads meanwhile — a cost a command waiting for its own
// helper would rather pay than the launcher's start, and one nothing
// else should.
func (b *Broker) spawnHelperWith(f flavour, stdin, extra *os.File, warm bool) (*waitingHelper, error) {
	var ps [5]pipe // stdin, stdout, stderr, config, report
	for i := range ps {
		r, w, err := os.Pipe()
		if err != nil {
			for _, p := range ps[:i] {
				p.r.Close()
				p.w.Close()
			}
			return nil, fmt.Errorf("pipe: %w", err)
		}
		ps[i] = pipe{r, w}
	}
	in, stdout, stderr, cfg, rep := ps[0], ps[1], ps[2], ps[3], ps[4]
	fd0 := in.r
	if stdin != nil {
		fd0 = stdin
	}
	cmd := &exec.Cmd{
		Path:        b.opts.HelperPath,
		Args:        []string{helperArg0},
		Env:         helperProcessEnv,
		Dir:         "/",
		Stdin:       fd0,
		Stdout:      stdout.w,
		Stderr:      stderr.w,
		ExtraFiles:  []*os.File{cfg.r, rep.w}, // fds 3 and 4
		SysProcAttr: jailSysProcAttr(f.namespaces, f.newNet),
	}
	var handoff, handoffChild *os.File
	if warm {
		var err error
		if handoffChild, handoff, err = newHandoff(); err != nil {
			for _, p := range ps {
				p.r.Close()
				p.w.Close()
			}
			return nil, err
		}
		extra = handoffChild
	}
	if extra != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, extra) // ExtraFileFD
	}
	launched := f.namespaces && (warm || b.hostIsLarge())
	if launched {
		// The namespaces are the launcher's to make (see launcherArg0).
		cmd.Args = launcherArgs(f, extra != nil)
		cmd.SysProcAttr = jailSysProcAttr(false, false)
	}
	// Born into its cgroup (a launcher's helper inherits it), so no
	// process of the command ever runs outside it.
	cg := b.newHelperCgroup()
	if cg != nil && cg.fd >= 0 {
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = cg.fd
	}
	who := currentIdentity()
	err := cmd.Start()
	for _, f := range []*os.File{in.r, stdout.w, stderr.w, cfg.r, rep.w, handoffChild} {
		if f != nil {
			f.Close()
		}
	}
	stdinW := in.w
	if stdin != nil {
		stdinW.Close()
		stdinW = nil
	}
	if err != nil {
		for _, f := range []*os.File{stdinW, stdout.r, stderr.r, cfg.w, rep.r, handoff} {
			if f != nil {
				f.Close()
			}
		}
		cg.remove()
		return nil, err
	}
	if cg != nil && cg.fd >= 0 {
		cg.placed()
	}
	if b.onSpawn != nil {
		b.onSpawn(cmd.Process.Pid)
	}
	proc := &jailProcess{cmd: cmd, pid: cmd.Process.Pid, exited: make(chan struct{}),
		pidNamespace: f.namespaces, launched: launched, stdout: stdout.r, stderr: stderr.r}
	h := &waitingHelper{proc: proc, flavour: f, cfgW: cfg.w, repR: rep.r, stdinW: stdinW, handoff: handoff, born: time.Now(), who: who, cg: cg}
	b.trackCgroup(proc, cg)
	switch {
	case launched:
		// Ready only once the launcher has started the helper and said
		// its pid (nothing else is on the report pipe before the helper
		// has its configuration).
		if err := h.awaitLauncher(); err != nil {
			b.discard(h)
			return nil, err
		}
	case f.namespaces:
		proc.holdMountNamespace(proc.pid)
	}
	return h, nil
}

// discard kills a helper that will never be configured and reaps it in
// the background; once it is reaped, its cgroup is removed and its share
// of the host-wide bounds returned.
func (b *Broker) discard(h *waitingHelper) {
	h.cfgW.Close()
	h.repR.Close()
	h.stdinW.Close()  // nil-safe: a warm helper always has its pipe
	h.handoff.Close() // nil-safe too
	h.proc.kill()
	go func() {
		h.proc.wait()
		h.proc.closeOutput()
		h.proc.release()
		b.claimCgroup(h.proc).remove()
		h.lease.release()
	}()
}

// takeWarm removes and returns the warm helper when it has flavour f, has
// not outlived the broker's idle allowance and carries the host's
// identity of now (a host that changed its uid since must not run a
// command as the old one); otherwise nil. One that fails the last two is
// discarded on the way.
func (b *Broker) takeWarm(f flavour) *waitingHelper {
	b.warmMu.Lock()
	h := b.warm
	if h == nil || h.flavour != f {
		b.warmMu.Unlock()
		return nil
	}
	b.warm = nil
	h.retire.Stop()
	b.warmMu.Unlock()
	if time.Since(h.born) >= b.warmIdle() || h.who != currentIdentity() {
		b.discard(h)
		return nil
	}
	// The command holds its own share of the host-wide bounds now.
	h.lease.release()
	h.lease = nil
	return h
}

// prewarm starts, in the background, a helper of flavour f for the next
// command, unless one is ready or starting, prestarting is off, or the
// broker is closed. A warm helper of another flavour is replaced: the
// command just cleared predicts the next one.
func (b *Broker) prewarm(f flavour) {
	idle := b.warmIdle()
	b.warmMu.Lock()
	if idle <= 0 || b.closed || b.warming || (b.warm != nil && b.warm.flavour == f) {
		b.warmMu.Unlock()
		return
	}
	// A warm helper counts against the host-wide bounds, and never takes
	// a slot a command waits for.
	lease := b.hostBounds().tryAcquire(0)
	if lease == nil {
		// Started once a slot frees (see prewarmDeferred).
		b.warmDeferred, b.warmDeferredFlavour = true, f
		b.warmMu.Unlock()
		return
	}
	b.warmDeferred = false
	b.warming = true
	b.warmMu.Unlock()
	go func() {
		h, err := b.spawnHelper(f, nil, true)
		if err != nil {
			lease.release()
		} else {
			h.lease = lease
		}
		b.warmMu.Lock()
		b.warming = false
		b.warmErr = err
		if err != nil || b.closed {
			b.warmMu.Unlock()
			if h != nil {
				b.discard(h)
			}
			return
		}
		old := b.warm
		b.warm = h
		h.retire = time.AfterFunc(idle, func() { b.retireWarm(h) })
		b.warmMu.Unlock()
		if old != nil {
			old.retire.Stop()
			b.discard(old)
		}
		if b.hostBounds().waiting() {
			// A command began waiting while this helper started (see
			// makeRoom): it needs the slot more.
			b.retireWarm(h)
		}
	}()
}

// retireWarm discards h if it still waits in the warm slot.
func (b *Broker) retireWarm(h *waitingHelper) {
	b.warmMu.Lock()
	if b.warm != h {
		b.warmMu.Unlock()
		return
	}
	b.warm = nil
	b.warmMu.Unlock()
	b.discard(h)
}

// closeWarm stops prestarting and discards the warm helper, if any.
func (b *Broker) closeWarm() { b.dropWarm(true) }

// makeRoom discards the warm helper, if any, so a command waiting for the
// host-wide bounds gets its slot once the helper is reaped.
func (b *Broker) makeRoom() { b.dropWarm(false) }

// dropWarm discards the warm helper, if any, and with closing stops
// prestarting for good.
func (b *Broker) dropWarm(closing bool) {
	b.warmMu.Lock()
	if closing {
		b.closed = true
	}
	h := b.warm
	b.warm = nil
	b.warmMu.Unlock()
	if h != nil {
		h.retire.Stop()
		b.discard(h)
	}
}

// prewarmDeferred starts the warm helper a prewarm had to forgo because
// the host-wide bounds were full, now that a slot was released.
func (b *Broker) prewarmDeferred() {
	b.warmMu.Lock()
	f, deferred := b.warmDeferredFlavour, b.warmDeferred
	b.warmDeferred = false
	b.warmMu.Unlock()
	if deferred {
		b.prewarm(f)
	}
}
