package broker

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/agentloom/loom/broker/internal/jail"
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
	// rep reads repR; what it buffered past a line the broker read before
	// the configuration (the launcher's, the helper's prepared one) is
	// the start of the helper's report.
	rep *bufio.Reader
	// prepared: the helper said it has prepared (see awaitPrepared).
	prepared bool
	stdinW   *os.File // fd 0 in the helper; nil when the command's own file is
	// handoff is the broker's end of a warm helper's handoff socket (the
	// helper's ExtraFileFD; see jail.ExtraHandoff); nil for a helper started
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
	// prime is the record of the policy the helper was primed with, or
	// nil when it holds none (see warmprime_linux.go).
	prime *primeRecord
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
		Args:        jail.HelperArgs(f.namespaces, f.newNet, warm),
		Env:         jail.ProcessEnv(),
		Dir:         "/",
		Stdin:       fd0,
		Stdout:      stdout.w,
		Stderr:      stderr.w,
		ExtraFiles:  []*os.File{cfg.r, rep.w}, // fds 3 and 4
		SysProcAttr: jail.SysProcAttr(f.namespaces, f.newNet),
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
		// The namespaces are the launcher's to make (see launcher_linux.go).
		cmd.Args = jail.LauncherArgs(f.newNet, extra != nil, warm)
		cmd.SysProcAttr = jail.SysProcAttr(false, false)
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
	proc := &jailProcess{cmd: cmd, pid: cmd.Process.Pid, exited: make(chan struct{}),
		pidNamespace: f.namespaces, launched: launched, stdout: stdout.r, stderr: stderr.r}
	h := &waitingHelper{proc: proc, flavour: f, cfgW: cfg.w, repR: rep.r, rep: bufio.NewReaderSize(rep.r, maxLauncherLineBytes),
		stdinW: stdinW, handoff: handoff, born: time.Now(), who: who, cg: cg}
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
		if warm {
			// Ready once it has prepared what it can (its skeleton).
			if err := h.awaitPrepared(); err != nil {
				b.discard(h)
				return nil, err
			}
		}
	case f.namespaces:
		proc.holdMountNamespace(proc.pid)
	}
	if b.test.onSpawn != nil {
		pid := proc.pid
		if launched {
			pid = proc.jailPid
		}
		b.test.onSpawn(pid, warm)
	}
	return h, nil
}

// discard kills a helper that will never be configured and reaps it in
// the background; once it is reaped, its cgroup is removed and its share
// of the host-wide bounds returned.
func (b *Broker) discard(h *waitingHelper) {
	b.forgetPrime(h)
	h.cfgW.Close()
	h.repR.Close()
	h.stdinW.Close()  // nil-safe: a warm helper always has its pipe
	h.handoff.Close() // nil-safe too
	h.proc.kill()
	b.pool.work.add()
	go func() {
		defer b.pool.work.done()
		h.proc.wait()
		h.proc.closeOutput()
		h.proc.release()
		b.claimCgroup(h.proc).remove()
		h.lease.release()
	}()
}
