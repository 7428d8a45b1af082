//go:build linux

package broker

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
)

// startAtPid starts "sleep 60" as a process group leader with pid want,
// through ns_last_pid (root only), or returns nil when another process
// took that pid first.
func startAtPid(t *testing.T, want int) *exec.Cmd {
	t.Helper()
	if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(want-1)), 0); err != nil {
		t.Fatalf("ns_last_pid: %v (this attack needs root)", err)
	}
	c := exec.Command("sleep", "60")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if c.Process.Pid != want {
		c.Process.Kill()
		c.Wait()
		return nil
	}
	return c
}

// TestRedteamTodayReapedHelperGroupIsNotSignalled: once a helper that is
// its pid namespace's init was reaped, the broker still sent SIGKILL to
// its process group (killGroup, called right after the reap to take what
// the command left), though the group died with the namespace and its
// number was free: a process that took the pid meanwhile and leads a
// group of its own was killed. The attack reuses the pid through
// ns_last_pid. The control: the same killGroup before the reap reaches
// the helper's group.
func TestRedteamTodayReapedHelperGroupIsNotSignalled(t *testing.T) {
	for attempt := 0; ; attempt++ {
		if attempt == 20 {
			t.Fatal("the reaped pid was taken by another process every time")
		}
		helper := exec.Command("sleep", "60")
		helper.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := helper.Start(); err != nil {
			t.Fatal(err)
		}
		p := &jailProcess{cmd: helper, pid: helper.Process.Pid, exited: make(chan struct{}), pidNamespace: true}
		// The control: before its reap the helper's group is killed.
		p.killGroup()
		st := p.wait()
		if ws, ok := st.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("control: killGroup before the reap left the helper to end %v", st)
		}
		victim := startAtPid(t, p.pid)
		if victim == nil {
			continue
		}
		p.killGroup()
		victim.Process.Signal(syscall.SIGTERM)
		victim.Wait()
		if ws := victim.ProcessState.Sys().(syscall.WaitStatus); ws.Signal() == syscall.SIGKILL {
			t.Fatalf("a process that reused the reaped helper's pid %d was killed by the broker", p.pid)
		}
		return
	}
}
