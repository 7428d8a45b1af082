package broker

import (
	"github.com/agentloom/loom/internal/errno"
	"github.com/agentloom/loom/sandbox"

	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentloom/loom/broker/internal/jail"
)

// selfExe is the default helper executable: the running program.
const selfExe = jail.SelfExe

// pipeBufferBytes is the capacity of a Linux pipe by default: a write of
// at most this much never blocks on an empty pipe.
const pipeBufferBytes = 64 << 10

// maxHelperReportBytes bounds what the broker reads from a helper's
// report pipe.
const maxHelperReportBytes = 1 << 20

// kill sends SIGKILL to the command (the pid namespace's init, whose
// death takes every process in the namespace with it) and to its process
// group.
//
// Behind a launcher, the command is the helper the launcher started as
// the broker's child: once the launcher reported it, it and its group are
// the targets; before that, the launcher is (a helper is only ready for
// its configuration once the launcher named it).
func (p *jailProcess) kill() {
	p.mu.Lock()
	switch {
	case p.jailPidfd > 0:
		unix.PidfdSendSignal(p.jailPidfd, unix.SIGKILL, nil, 0)
	case p.jailPid > 0:
		unix.Kill(p.jailPid, unix.SIGKILL)
	case !p.reaped:
		unix.Kill(p.pid, unix.SIGKILL)
	}
	p.mu.Unlock()
	p.killGroup()
}

// killGroup sends SIGKILL to the command's process group, until the
// execution settled (after which the group id may name someone else's).
// A launched command's group is left alone once its init has exited, and
// any command's that was its pid namespace's init once it was reaped: the
// group lived in its pid namespace, which is empty by then, and its
// number may already name another process's group.
func (p *jailProcess) killGroup() {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.settled, p.reaped && p.pidNamespace:
	case p.jailPidfd > 0:
		if !pidfdExited(p.jailPidfd) {
			unix.Kill(-p.jailPid, unix.SIGKILL)
		}
	case p.jailPid > 0:
		unix.Kill(-p.jailPid, unix.SIGKILL)
	default:
		unix.Kill(-p.pid, unix.SIGKILL)
	}
}

// holdMountNamespace keeps the mount namespace of pid alive past its exit,
// so its teardown (an RCU grace period per unmount batch) happens in
// release, off the settlement path.
func (p *jailProcess) holdMountNamespace(pid int) {
	if fd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/mnt", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
		p.nsHold = fd
	}
}

// settle converts a reaped command's state into a Settled.
func settle(st exitState, execErr string) sandbox.Settled {
	if execErr != "" {
		return sandbox.Settled{ExitCode: sandbox.ExitCodeNotExecuted, Failed: execErr}
	}
	if st == nil {
		return sandbox.Settled{ExitCode: -1, Failed: "process state unavailable"}
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return sandbox.Settled{ExitCode: -1, Signal: ws.Signal().String()}
	}
	return sandbox.Settled{ExitCode: st.ExitCode()}
}

// availability renders a probe as a report: which layers this host can
// apply at all.
func availability(p probeResult) sandbox.Enforcement {
	var e sandbox.Enforcement
	if p.usernsErr != nil {
		e.Add(sandbox.Layer{Name: sandbox.LayerNamespaces, Reason: errno.Name(p.usernsErr)})
	} else {
		e.Add(sandbox.Layer{Name: sandbox.LayerNamespaces, Applied: true, Params: "user,mount,net,pid,ipc,uts"})
	}
	if p.landlockABI > 0 {
		e.Add(sandbox.Layer{Name: sandbox.LayerLandlock, Applied: true, Detail: fmt.Sprintf("abi %d", min(p.landlockABI, jail.LandlockMaxKnownABI))})
	} else {
		e.Add(sandbox.Layer{Name: sandbox.LayerLandlock, Reason: errno.Name(p.landlockErr)})
	}
	if p.seccompErr == nil {
		e.Add(sandbox.Layer{Name: sandbox.LayerSeccomp, Applied: true})
	} else {
		e.Add(sandbox.Layer{Name: sandbox.LayerSeccomp, Reason: errno.Name(p.seccompErr)})
	}
	return e
}

// benchHostViewByRemount, set only by a benchmark, makes every jail
// build its read-only host view one mount at a time (see
// the helper's hostViewReadOnly).
var benchHostViewByRemount atomic.Bool

// start hands req to a helper (a warm one when the broker holds one of the
// right flavour, else one started now) and reads its report up to exec.
// It returns the running process and its Enforcement; execErr is set when
// confinement completed but the command could not be exec'd (the process
// then exits on its own).
func (b *Broker) start(req jailRequest) (proc *jailProcess, enf sandbox.Enforcement, execErr string, d *sandbox.Denial) {
	namespaces := req.probe.usernsErr == nil
	networkOff := req.policy.Network != sandbox.NetworkFull
	cfg := jail.Config{
		Argv: req.argv, Env: req.env, Dir: req.dir,
		Namespaces: namespaces, NetworkOff: networkOff,
		SystemRoots:   req.policy.SystemRoots,
		ReadableRoots: req.policy.ReadableRoots, WritableRoots: req.policy.WritableRoots,
		Protected:             req.policy.Protected,
		Sockets:               req.policy.Sockets,
		Required:              req.required,
		HostViewByRemount:     benchHostViewByRemount.Load(),
		TestHookPolicyRootOff: b.test.policyRootOff,
		LandlockABI:           req.probe.landlockABI,
		Seccomp:               req.probe.seccompErr == nil,
		Limits:                withDefaults(req.policy.Limits),
		NullStdin:             req.stdin == nil,
		EmptyRoot:             req.emptyRoot,
		Trace:                 req.trace != nil,
	}
	req.trace.Mark("guarded")
	if namespaces && req.emptyRoot == nil {
		// Landlock does not mediate connect(2): a host socket anywhere in
		// the jail's view is reachable, whatever the roots, so every one
		// the host has bound is masked. (An empty root shows none.)
		cfg.MaskSockets = b.maskedSockets(req.policy.Sockets)
	}
	req.trace.Mark("sockets")
	if req.probe.landlockABI <= 0 {
		cfg.LandlockSkip = errno.Name(req.probe.landlockErr)
	}
	if req.probe.seccompErr != nil {
		cfg.SeccompSkip = errno.Name(req.probe.seccompErr)
	}
	// Every command's policy is noted while it runs, with where it may
	// write (a helper primed for another policy that read there is not
	// handed a command meanwhile: see noteStart), and the last one is
	// what the next warm helpers are primed for.
	key := string(jail.PrimeKey(cfg))
	writable := cfg.WritableRoots
	if !namespaces && cfg.LandlockABI <= 0 {
		writable = []string{"/"} // nothing but the host's permissions bounds it
	}
	done := noteStart(key, writable)
	defer func() {
		if proc == nil {
			done()
			return
		}
		proc.mu.Lock()
		proc.onRelease = done
		proc.mu.Unlock()
	}()
	// encode is the configuration for a helper that holds mode at
	// ExtraFileFD and, with stdinHandoff, is handed the command's stdin
	// file there first.
	encode := func(mode jail.Extra, stdinHandoff bool) ([]byte, *sandbox.Denial) {
		cfg.Extra, cfg.StdinHandoff = mode, stdinHandoff
		payload, err := json.Marshal(cfg)
		if err != nil {
			return nil, sandbox.NewDenial(sandbox.DenialJailFailed, "encode helper config: "+err.Error(), err)
		}
		return payload, nil
	}
	f := flavour{namespaces: namespaces, newNet: namespaces && networkOff}
	b.notePrimeSource(f, cfg)
	// A command whose stdin is a file gets that file as its fd 0, as
	// os/exec does: a helper started for it inherits it there, a warm
	// helper takes it over its handoff socket, as it takes the extra
	// file (a job's stdin pipe among them).
	stdinFile, _ := req.stdin.(*os.File)
	h := b.takeWarm(f, key)
	if h != nil && h.prime != nil && !b.primedFor(h, cfg) {
		// Something its priming read changed, or may have: it is
		// retired, and so are the others primed before the change.
		b.discard(h)
		h = b.takeWarm(f, "")
	}
	req.trace.Mark("taken")
	if h != nil {
		if (req.extra != nil || stdinFile != nil) && h.handoff == nil {
			b.discard(h) // no way to hand it the file
		} else {
			mode := jail.ExtraNone
			if req.extra != nil {
				mode = jail.ExtraHandoff
			}
			payload, d := encode(mode, stdinFile != nil)
			if d != nil {
				b.discard(h)
				return nil, enf, "", d
			}
			proc, enf, execErr, d, silent := b.configure(h, payload, req)
			if !silent {
				if proc != nil {
					proc.prestartNext = sync.OnceFunc(func() { b.prewarm(f) })
				}
				return proc, enf, execErr, d
			}
			// The warm helper died before it could say anything (killed
			// from outside, say): nothing ran, so a fresh helper may try.
		}
	}
	mode := jail.ExtraNone
	if req.extra != nil {
		mode = jail.ExtraInherited
	}
	payload, d := encode(mode, false)
	if d != nil {
		return nil, enf, "", d
	}
	h, err := b.spawnHelperWith(f, stdinFile, req.extra, false)
	req.trace.Mark("spawned")
	if err != nil {
		return nil, enf, "", sandbox.NewDenial(sandbox.DenialJailFailed, "start helper: "+errno.Name(jail.StartError(err)), err)
	}
	proc, enf, execErr, d, _ = b.configure(h, payload, req)
	if proc != nil {
		proc.prestartNext = sync.OnceFunc(func() { b.prewarm(f) })
	}
	return proc, enf, execErr, d
}

// configure sends a waiting helper its configuration and the command's
// stdin, then reads its report. silent is set when the helper ended
// without reporting anything: confinement never began and the command
// never ran.
func (b *Broker) configure(h *waitingHelper, payload []byte, req jailRequest) (proc *jailProcess, enf sandbox.Enforcement, execErr string, d *sandbox.Denial, silent bool) {
	proc = h.proc
	defer h.repR.Close()
	b.limitHelperCgroup(proc, withDefaults(req.policy.Limits)) // before the command reaches the helper
	setup := time.AfterFunc(jailSetupTimeout, proc.kill)
	defer setup.Stop()
	// A warm helper is handed the command's stdin file, when it has one,
	// and then its extra file, in that order, before the configuration
	// that tells it to take them.
	stdinFile, _ := req.stdin.(*os.File)
	handedStdin := h.handoff != nil && stdinFile != nil
	if h.handoff != nil {
		if handedStdin {
			sendExtraFile(h.handoff, stdinFile) // an error means the helper is gone; its report says so
		}
		if req.extra != nil {
			sendExtraFile(h.handoff, req.extra)
		}
		h.handoff.Close()
	}
	payload = append(payload, '\n') // the helper reads one configuration per line
	if len(payload) <= pipeBufferBytes {
		h.cfgW.Write(payload) // an error means the helper is gone; its report says so
		h.cfgW.Close()
	} else {
		go func() {
			h.cfgW.Write(payload)
			h.cfgW.Close()
		}()
	}
	switch {
	case h.stdinW == nil: // the command's own file is its fd 0
	case req.stdin == nil, handedStdin: // /dev/null, or the file handed over
		h.stdinW.Close()
	default:
		go func() {
			io.Copy(h.stdinW, req.stdin)
			h.stdinW.Close()
		}()
	}
	proc.started = time.Now()
	req.trace.Mark("configured")

	if h.flavour.namespaces {
		detail := "user,mount,pid,ipc,uts"
		if h.flavour.newNet {
			detail = "user,mount,net,pid,ipc,uts"
		}
		enf.Add(sandbox.Layer{Name: sandbox.LayerNamespaces, Applied: true, Params: detail})
	} else {
		enf.Add(sandbox.Layer{Name: sandbox.LayerNamespaces, Reason: errno.Name(req.probe.usernsErr)})
	}
	layers, fatal, execErr, refused, reported := readHelperReport(h.rep, proc.setJailPid, req.trace)
	req.trace.Mark("exec")
	for _, l := range layers {
		enf.Add(l)
	}
	if refused != nil {
		proc.kill()
		proc.wait()
		proc.closeOutput()
		proc.release()
		return nil, enf, "", layerRequired(refused), false
	}
	if fatal != "" {
		proc.kill()
		ended := "state unavailable"
		if st := proc.wait(); st != nil {
			ended = strings.TrimSpace(st.String())
		}
		proc.closeOutput()
		proc.release()
		return nil, enf, "", sandbox.NewDenial(sandbox.DenialJailFailed, fmt.Sprintf("%s (helper %s)", fatal, ended), nil), !reported
	}
	return proc, enf, execErr, nil, false
}

// readHelperReport reads a helper's report stream to EOF (at most
// maxHelperReportBytes): the layers it applied, a fatal setup error, an
// exec error, or the required layer it refused to run without. A stream that ends without any report is fatal: the
// helper died before it could say what it did.
//
// onJailPid is called with a launcher's report of the helper's pid as
// soon as it is read.
func readHelperReport(r io.Reader, onJailPid func(int), trace *jail.PhaseLog) (layers []sandbox.Layer, fatal, execErr string, refused *sandbox.MissingLayer, reported bool) {
	sc := bufio.NewScanner(io.LimitReader(r, maxHelperReportBytes))
	sc.Buffer(make([]byte, 0, 64<<10), maxHelperReportBytes)
	for sc.Scan() {
		var rep jail.Report
		if err := json.Unmarshal(sc.Bytes(), &rep); err != nil {
			return layers, "malformed helper report: " + err.Error(), "", nil, true
		}
		if rep.Prepared {
			continue // a warm helper's word before its configuration
		}
		if rep.JailPid != 0 {
			// The launcher's word, not the helper's: the helper has said
			// nothing yet.
			onJailPid(rep.JailPid)
			continue
		}
		reported = true
		if trace != nil {
			trace.Marks = append(trace.Marks, rep.Phases...)
		}
		layers = append(layers, rep.Layers...)
		if rep.Fatal != "" {
			fatal = rep.Fatal
		}
		if rep.Exec != "" {
			execErr = rep.Exec
		}
		if rep.Refused != nil {
			refused = rep.Refused
		}
	}
	if err := sc.Err(); err != nil && fatal == "" {
		fatal = "helper report: " + err.Error()
	}
	if !reported && fatal == "" {
		fatal = "helper ended before reporting"
	}
	return layers, fatal, execErr, refused, reported
}

func closeFd(fd int) { unix.Close(fd) }
