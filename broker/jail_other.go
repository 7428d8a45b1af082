//go:build !linux

package broker

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/agentloom/loom/broker/internal/jail"
	"github.com/agentloom/loom/sandbox"
)

// selfExe is unused outside Linux: no helper is re-executed.
const selfExe = ""

// errNoJail is every layer's skip reason outside Linux.
var errNoJail = errors.New("no jail on " + runtime.GOOS + ": the command runs unconfined")

// HelperMain does nothing outside Linux, where there is no jail helper.
func HelperMain() {}

func probeLayers(string, bool) probeResult {
	return probeResult{usernsErr: errNoJail, landlockErr: errNoJail, seccompErr: errNoJail}
}

// availability says plainly that nothing confines a command here.
func availability(probeResult) sandbox.Enforcement {
	var e sandbox.Enforcement
	e.Add(sandbox.Layer{Name: sandbox.LayerJail, Reason: errNoJail.Error()})
	return e
}

// kill ends the command itself; outside Linux its descendants are not
// tracked and may outlive it.
func (p *jailProcess) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reaped {
		p.cmd.Process.Kill()
	}
}

func (p *jailProcess) killGroup() {}

func settle(st exitState, execErr string) sandbox.Settled {
	if execErr != "" {
		return sandbox.Settled{ExitCode: sandbox.ExitCodeNotExecuted, Failed: execErr}
	}
	if st == nil {
		return sandbox.Settled{ExitCode: -1, Failed: "process state unavailable"}
	}
	if !st.Exited() {
		return sandbox.Settled{ExitCode: -1, Signal: "killed"}
	}
	return sandbox.Settled{ExitCode: st.ExitCode()}
}

// start runs the command unconfined (Clear only gets here when the host
// set AllowUnconfined).
func (b *Broker) start(req jailRequest) (*jailProcess, sandbox.Enforcement, string, *sandbox.Denial) {
	enf := availability(req.probe)
	if m := jail.MissingRequired(req.required, false, enf.Layers); m != nil {
		return nil, enf, "", layerRequired(m)
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, enf, "", sandbox.NewDenial(sandbox.DenialJailFailed, "stdout pipe: "+err.Error(), err)
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		stdoutR.Close()
		stdoutW.Close()
		return nil, enf, "", sandbox.NewDenial(sandbox.DenialJailFailed, "stderr pipe: "+err.Error(), err)
	}
	cmd := exec.Command(req.argv[0], req.argv[1:]...)
	cmd.Env = req.env
	cmd.Dir = req.dir
	cmd.Stdin = req.stdin
	if req.extra != nil {
		cmd.ExtraFiles = []*os.File{nil, nil, req.extra} // at sandbox.ExtraFileFD
	}
	cmd.Stdout = stdoutW
	cmd.Stderr = stderrW
	cmd.WaitDelay = outputDrainGrace
	err = cmd.Start()
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		stdoutR.Close()
		stderrR.Close()
		var ee *exec.Error
		if errors.As(err, &ee) {
			return nil, enf, "", sandbox.NewDenial(sandbox.DenialJailFailed, err.Error(), err)
		}
		return nil, enf, "", sandbox.NewDenial(sandbox.DenialJailFailed, "start: "+err.Error(), err)
	}
	return &jailProcess{cmd: cmd, pid: cmd.Process.Pid, started: time.Now(), exited: make(chan struct{}),
		stdout: stdoutR, stderr: stderrR}, enf, "", nil
}

// waitingHelper exists only where helpers do: on Linux.
type waitingHelper struct{}

// primeBook exists only where helpers do: on Linux.
type primeBook struct{}

func (b *Broker) closeWarm() {}

func (b *Broker) hostIsLarge() bool { return false }

func closeFd(int) {}

// wait reaps the command and returns its state.
func (p *jailProcess) wait() exitState {
	p.cmd.Wait() // the state is in ProcessState even when err != nil
	p.mu.Lock()
	p.reaped = true
	p.mu.Unlock()
	close(p.exited)
	if p.cmd.ProcessState == nil {
		return nil
	}
	return p.cmd.ProcessState
}
