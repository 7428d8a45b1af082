package broker

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// selfExe is the default helper executable: the running program.
const selfExe = "/proc/self/exe"

// helperEnvName is the name part of helperEnv.
const helperEnvName = "LOOM_JAIL_HELPER"

// pipeBufferBytes is the capacity of a Linux pipe by default: a write of
// at most this much never blocks on an empty pipe.
const pipeBufferBytes = 64 << 10

// maxHelperReportBytes bounds what the broker reads from a helper's
// report pipe.
const maxHelperReportBytes = 1 << 20

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

// killGroup sends SIGKILL to the command's process group, until the
// execution settled (after which the group id may name someone else's).
func (p *jailProcess) killGroup() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.settled {
		unix.Kill(-p.pid, unix.SIGKILL)
	}
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
		e.add(Layer{Name: LayerNamespaces, Applied: true, Params: "user,mount,net,pid,ipc,uts"})
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
		Env:         helperProcessEnv,
		Dir:         "/",
		Stdin:       req.stdin,
		Stdout:      req.stdout,
		Stderr:      req.stderr,
		ExtraFiles:  []*os.File{cfgR, repW}, // fds 3 and 4
		SysProcAttr: jailSysProcAttr(namespaces, networkOff),
		WaitDelay:   OutputDrainGrace,
	}
	// A configuration that fits the pipe is written before the start, so
	// the helper never waits for this goroutine to be scheduled.
	early := len(payload) <= pipeBufferBytes
	if early {
		cfgW.Write(payload)
		cfgW.Close()
	}
	err = cmd.Start()
	cfgR.Close()
	repW.Close()
	if err != nil {
		if !early {
			cfgW.Close()
		}
		return nil, enf, "", NewDenial(DenialJailFailed, "start helper: "+errnoName(unwrapSyscallErr(err)), err)
	}
	proc = &jailProcess{cmd: cmd, pid: cmd.Process.Pid, started: time.Now(), exited: make(chan struct{}), pidNamespace: namespaces}
	if namespaces {
		// Hold the mount namespace so its teardown (an RCU grace period per
		// unmount batch) happens off the settlement path; see release.
		if fd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/mnt", proc.pid), unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
			proc.nsHold = fd
		}
	}
	setup := time.AfterFunc(JailSetupTimeout, proc.kill)
	defer setup.Stop()
	if !early {
		go func() {
			cfgW.Write(payload)
			cfgW.Close()
		}()
	}

	if namespaces {
		detail := "user,mount,pid,ipc,uts"
		if networkOff {
			detail = "user,mount,net,pid,ipc,uts"
		}
		enf.add(Layer{Name: LayerNamespaces, Applied: true, Params: detail})
	} else {
		enf.add(Layer{Name: LayerNamespaces, Reason: errnoName(req.probe.usernsErr)})
	}
	layers, fatal, execErr := readHelperReport(repR)
	for _, l := range layers {
		enf.add(l)
	}
	if fatal != "" {
		proc.kill()
		st := proc.wait()
		proc.release()
		return nil, enf, "", NewDenial(DenialJailFailed, fmt.Sprintf("%s (helper %s)", fatal, strings.TrimSpace(st.String())), nil)
	}
	return proc, enf, execErr, nil
}

// readHelperReport reads a helper's report stream to EOF (at most
// maxHelperReportBytes): the layers it applied, a fatal setup error, or
// an exec error. A stream that ends without any report is fatal: the
// helper died before it could say what it did.
func readHelperReport(r io.Reader) (layers []Layer, fatal, execErr string) {
	reported := false
	sc := bufio.NewScanner(io.LimitReader(r, maxHelperReportBytes))
	sc.Buffer(make([]byte, 0, 64<<10), maxHelperReportBytes)
	for sc.Scan() {
		var rep helperReport
		if err := json.Unmarshal(sc.Bytes(), &rep); err != nil {
			return layers, "malformed helper report: " + err.Error(), ""
		}
		reported = true
		layers = append(layers, rep.Layers...)
		if rep.Fatal != "" {
			fatal = rep.Fatal
		}
		if rep.Exec != "" {
			execErr = rep.Exec
		}
	}
	if err := sc.Err(); err != nil && fatal == "" {
		fatal = "helper report: " + err.Error()
	}
	if !reported && fatal == "" {
		fatal = "helper ended before reporting"
	}
	return layers, fatal, execErr
}

func closeFd(fd int) { unix.Close(fd) }
