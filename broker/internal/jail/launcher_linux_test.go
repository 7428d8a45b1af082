//go:build linux

package jail

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"

	"github.com/agentloom/loom/internal/errno"
)

func TestLauncherProbeError(t *testing.T) {
	exitErr := &exec.ExitError{}
	for _, tc := range []struct {
		out  string
		err  error
		want string
	}{
		{"errno 1\n", exitErr, "EPERM"},
		{"errno 28\n", exitErr, "ENOSPC"},
		{"fork/exec: something odd\n", exitErr, "fork/exec: something odd"},
		{"errno x\n", exitErr, "errno x"},
		{"", errors.New("signal: killed"), "signal: killed"},
	} {
		got := launcherProbeError([]byte(tc.out), tc.err)
		if errno.Name(got) != tc.want {
			t.Errorf("%q: %q, want %q", tc.out, errno.Name(got), tc.want)
		}
	}
	if !errors.Is(launcherProbeError([]byte("errno 1"), exitErr), syscall.EPERM) {
		t.Error("errno 1 is not EPERM")
	}
}
