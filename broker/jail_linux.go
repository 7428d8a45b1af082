package broker

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// selfExe is the default helper executable: the running program.
const selfExe = "/proc/self/exe"

// helperEnvName is the name part of helperEnv.
const helperEnvName = "LOOM_JAIL_HELPER"

// maxHelperReportBytes bounds what the broker reads from a helper's
// report pipe.
const maxHelperReportBytes = 1 << 20

// jailRequest is one command to start, already cleared.
type jailRequest struct {
	argv           []string
	env            []string
	dir            string
	policy         Policy
	stdin          io.Reader
	stdout, stderr *os.File
	probe          probeResult
}

// jailProcess is a started helper (and, after exec, the command).
type jailProcess struct {
	cmd     *exec.Cmd
	pid     int
	started time.Time
	exited  chan struct{}

	mu     sync.Mutex
	reaped bool
}

// kill sends SIGKILL to the command (the pid namespace's init, whose
// death takes every process in the namespace with it) and to its process
// group.
func (p *jailProcess) kill() {
	p.mu.Lock()
	if !p.reaped {
		unix.Kill(p.pid, unix.SIGKILL)
	}
	p.mu.Unlock()
	p.killGroup()
}

// killGroup sends SIGKILL to the command's process group.
func (p *jailProcess) killGroup() { unix.Kill(-p.pid, unix.SIGKILL) }

// wait reaps the command and returns its state.
func (p *jailProcess) wait() *os.ProcessState {
	p.cmd.Wait() // the state is in ProcessState even when err != nil
	p.mu.Lock()
	p.reaped = true
	p.mu.Unlock()
	close(p.exited)
	return p.cmd.ProcessState
}

// settle converts a reaped command's state into a Settled.
func settle(st *os.ProcessState, execErr string) Settled {
	if execErr != "" {
		return Settled{ExitCode: ExitCodeNotExecuted, Failed: execErr}
	}
	if st == nil {
		return Settled{ExitCode: -1, Failed: "process state unavailable"}
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return Settled{ExitCode: -1, Signal: ws.Signal().String()}
	}
	return Settled{ExitCode: st.ExitCode()}
}

// availability renders a probe as a report: which layers this host can
// apply at all.
func availability(p probeResult) Enforcement {
	var e Enforcement
	if p.usernsErr != nil {
		e.add(Layer{Name: LayerNamespaces, Reason: errnoName(p.usernsErr)})
	} else {
		e.add(Layer{Name: LayerNamespaces, Applied: true, Detail: "user,mount,net,pid,ipc"})
	}
	if p.landlockABI > 0 {
		e.add(Layer{Name: LayerLandlock, Applied: true, Detail: fmt.Sprintf("abi %d", min(p.landlockABI, landlockMaxKnownABI))})
	} else {
		e.add(Layer{Name: LayerLandlock, Reason: errnoName(p.landlockErr)})
	}
	if p.seccompErr == nil {
		e.add(Layer{Name: LayerSeccomp, Applied: true})
	} else {
		e.add(Layer{Name: LayerSeccomp, Reason: errnoName(p.seccompErr)})
	}
	return e
}

// start launches the helper for req, hands it the configuration, and
// reads its report up to exec. It returns the running process and its
// Enforcement; execErr is set when confinement completed but the command
// could not be exec'd (the process then exits on its own).
func (b *Broker) start(req jailRequest) (proc *jailProcess, enf Enforcement, execErr string, d *Denial) {
	namespaces := req.probe.usernsErr == nil
	networkOff := req.policy.Network != NetworkFull
	cfg := helperConfig{
		Argv: req.argv, Env: req.env, Dir: req.dir,
		Namespaces: namespaces, NetworkOff: networkOff,
		ReadableRoots: req.policy.ReadableRoots, WritableRoots: req.policy.WritableRoots,
		Protected:   req.policy.Protected,
		LandlockABI: req.probe.landlockABI,
		Seccomp:     req.probe.seccompErr == nil,
		Limits:      req.policy.Limits.withDefaults(),
	}
	if req.probe.landlockABI <= 0 {
		cfg.LandlockSkip = errnoName(req.probe.landlockErr)
	}
	if req.probe.seccompErr != nil {
		cfg.SeccompSkip = errnoName(req.probe.seccompErr)
	}
	payload, err := json.Marshal(cfg)
	if err != nil {
		return nil, enf, "", NewDenial(DenialJailFailed, "encode helper config: "+err.Error(), err)
	}
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return nil, enf, "", NewDenial(DenialJailFailed, "config pipe: "+err.Error(), err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		cfgR.Close()
		cfgW.Close()
		return nil, enf, "", NewDenial(DenialJailFailed, "report pipe: "+err.Error(), err)
	}
	defer repR.Close()
	cmd := &exec.Cmd{
		Path:        b.opts.HelperPath,
		Args:        []string{helperArg0},
		Env:         []string{helperEnv},
		Dir:         "/",
		Stdin:       req.stdin,
		Stdout:      req.stdout,
		Stderr:      req.stderr,
		ExtraFiles:  []*os.File{cfgR, repW}, // fds 3 and 4
		SysProcAttr: jailSysProcAttr(namespaces, networkOff),
		WaitDelay:   OutputDrainGrace,
	}
	err = cmd.Start()
	cfgR.Close()
	repW.Close()
	if err != nil {
		cfgW.Close()
		return nil, enf, "", NewDenial(DenialJailFailed, "start helper: "+errnoName(unwrapSyscallErr(err)), err)
	}
	proc = &jailProcess{cmd: cmd, pid: cmd.Process.Pid, started: time.Now(), exited: make(chan struct{})}
	setup := time.AfterFunc(JailSetupTimeout, proc.kill)
	defer setup.Stop()
	go func() {
		cfgW.Write(payload)
		cfgW.Close()
	}()

	if namespaces {
		detail := "user,mount,pid,ipc"
		if networkOff {
			detail = "user,mount,net,pid,ipc"
		}
		enf.add(Layer{Name: LayerNamespaces, Applied: true, Detail: detail})
	} else {
		enf.add(Layer{Name: LayerNamespaces, Reason: errnoName(req.probe.usernsErr)})
	}
	var fatal string
	reported := false
	sc := bufio.NewScanner(io.LimitReader(repR, maxHelperReportBytes))
	sc.Buffer(make([]byte, 64<<10), maxHelperReportBytes)
	for sc.Scan() {
		var r helperReport
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			fatal = "malformed helper report: " + err.Error()
			break
		}
		reported = true
		for _, l := range r.Layers {
			enf.add(l)
		}
		if r.Fatal != "" {
			fatal = r.Fatal
		}
		if r.Exec != "" {
			execErr = r.Exec
		}
	}
	if !reported && fatal == "" {
		fatal = "helper ended before reporting"
	}
	if fatal != "" {
		proc.kill()
		st := proc.wait()
		return nil, enf, "", NewDenial(DenialJailFailed, fmt.Sprintf("%s (helper %s)", fatal, strings.TrimSpace(st.String())), nil)
	}
	return proc, enf, execErr, nil
}
