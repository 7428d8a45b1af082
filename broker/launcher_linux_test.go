//go:build linux

package broker

import (
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/agentloom/loom/internal/errno"
)

// The probe through a launcher finds what the direct probe finds.
func TestProbeThroughLauncher(t *testing.T) {
	direct := probeLayers(selfExe, false)
	launched := probeLayers(selfExe, true)
	if (direct.usernsErr == nil) != (launched.usernsErr == nil) || errno.Name(direct.usernsErr) != errno.Name(launched.usernsErr) {
		t.Fatalf("direct probe: %v; through a launcher: %v", direct.usernsErr, launched.usernsErr)
	}
}

func TestLaunchedHelperPidIsConfirmed(t *testing.T) {
	b := newTestBroker(t, Options{})
	b.test.launchAboveRSS = -1
	h, err := b.spawnHelper(flavour{namespaces: true, newNet: true}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	// The launcher starts the helper as this process's own child, which
	// keeps its pid until we reap it.
	child := h.proc.jailPid
	if child <= 0 || parentPid(child) != os.Getpid() || h.proc.jailPidfd <= 0 || h.proc.nsHold <= 0 {
		t.Fatalf("launcher %d: jailPid %d (parent %d, want %d) pidfd %d nsHold %d", h.proc.pid, child, parentPid(child), os.Getpid(), h.proc.jailPidfd, h.proc.nsHold)
	}
	// A pid that is not this process's child is not believed.
	stranger := &jailProcess{launched: true, pid: os.Getpid()}
	for _, pid := range []int{os.Getpid(), os.Getppid(), 1} {
		stranger.setJailPid(pid)
	}
	if stranger.jailPid != 0 || stranger.jailPidfd != 0 {
		t.Fatalf("a pid that is not this process's child was taken: %d", stranger.jailPid)
	}
	// Killing goes to the helper through its pidfd; wait reaps the helper
	// itself and says how it ended.
	h.proc.kill()
	st := h.proc.wait()
	if ws := st.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("helper ended %v, want killed", st)
	}
	waitGone(t, child)
	h.cfgW.Close()
	h.repR.Close()
	h.stdinW.Close()
	h.proc.closeOutput()
	h.proc.release()
}

// A helper the broker reaps itself reads as os/exec's state would: the
// same exit code, exit flag and text, for an exit and for a signal.
func TestDirectExitReadsAsProcessState(t *testing.T) {
	t.Parallel()
	for _, script := range []string{"exit 0", "exit 3", "kill -9 $$", "kill -15 $$"} {
		t.Run(script, func(t *testing.T) {
			cmd := exec.Command("sh", "-c", script)
			cmd.Run()
			ps := cmd.ProcessState
			if ps == nil {
				t.Fatal("no process state")
			}
			d := directExit(ps.Sys().(syscall.WaitStatus))
			if d.ExitCode() != ps.ExitCode() || d.Exited() != ps.Exited() || d.String() != ps.String() || d.Sys() != ps.Sys() {
				t.Fatalf("directExit reads (%d, %v, %q), os/exec (%d, %v, %q)", d.ExitCode(), d.Exited(), d.String(), ps.ExitCode(), ps.Exited(), ps.String())
			}
		})
	}
}
