//go:build linux

package broker

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
)

// The probe through a launcher finds what the direct probe finds.
func TestProbeThroughLauncher(t *testing.T) {
	direct := probeLayers(selfExe, false)
	launched := probeLayers(selfExe, true)
	if (direct.usernsErr == nil) != (launched.usernsErr == nil) || errnoName(direct.usernsErr) != errnoName(launched.usernsErr) {
		t.Fatalf("direct probe: %v; through a launcher: %v", direct.usernsErr, launched.usernsErr)
	}
}

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
		if errnoName(got) != tc.want {
			t.Errorf("%q: %q, want %q", tc.out, errnoName(got), tc.want)
		}
	}
	if !errors.Is(launcherProbeError([]byte("errno 1"), exitErr), syscall.EPERM) {
		t.Error("errno 1 is not EPERM")
	}
}
