//go:build linux

package broker

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// unprivilegedUID is the uid (and gid) the suite re-runs itself as when
// it starts as root: nobody on common distributions.
const unprivilegedUID = 65534

// UnprivilegedFullEnv, set to any value (CI's .ci/run sets it), makes
// the unprivileged re-run run the escape suite in every helper flavour.
// Without it the re-run leaves out the cold-launched flavour: what an
// ordinary user's jail does once its helper runs (the uid it maps, the
// capabilities it drops, the limits the kernel applies to it) is the
// same code in every flavour, and the warm flavour runs all of it; the
// cold-launched flavour adds only another way of starting the helper,
// which the root run covers.
const UnprivilegedFullEnv = "LOOM_TEST_UNPRIVILEGED_FULL"

// unprivilegedLeftOut is the escape suite's flavour the unprivileged
// re-run leaves out without UnprivilegedFullEnv.
const unprivilegedLeftOut = "cold-launched"

// TestUnprivileged runs the jail tests as an ordinary user. Started as
// root, it copies this test binary and the package's host-built helper
// where uid 65534 can execute them and re-runs, as that user, the escape
// suite (minus the cases whose control needs root, and, unless
// UnprivilegedFullEnv is set, the cold-launched flavour), one re-run per
// helper flavour, all at once: each is a process of its own, so one
// flavour's commands never taint another's priming, and the re-run of
// the first flavour runs TestClearEcho and TestUnprivileged too. Started
// unprivileged, it is already such a re-run and checks a jailed command
// confines the same way.
func TestUnprivileged(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		b := newTestBroker(t, Options{})
		r := run(t, b, testPolicy(t.TempDir()), 0, "sh", "-c", "id -u; grep ^CapEff /proc/self/status")
		if r.settled.ExitCode != 0 || !strings.Contains(r.stdout, "CapEff:\t0000000000000000") {
			t.Fatalf("unprivileged jailed run: %+v stdout=%q stderr=%q", r.settled, r.stdout, r.stderr)
		}
		t.Logf("%s", r.enf)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("/var/tmp", "loom-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyExe := filepath.Join(dir, "broker.test")
	copyExecutable(t, exe, copyExe)
	// The helper the escape suite uses is the package's own, copied
	// beside the binary: uid 65534 has no Go build cache to build one
	// with.
	helper := filepath.Join(dir, "host-helper")
	copyExecutable(t, testHelper(t), helper)

	full := os.Getenv(UnprivilegedFullEnv) != ""
	if !full {
		t.Logf("the unprivileged escape suite leaves out the %s flavour (set %s to run every flavour)", unprivilegedLeftOut, UnprivilegedFullEnv)
	}
	var fs []escapeFlavour
	for _, f := range escapeFlavours() {
		if full || f.name != unprivilegedLeftOut {
			fs = append(fs, f)
		}
	}
	runs := flavourRuns(fs)
	runs[0].tests = append(runs[0].tests, "TestClearEcho", "TestUnprivileged")
	runEscapeFlavours(t, runs, func() *exec.Cmd {
		cmd := exec.Command(copyExe)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: unprivilegedUID, Gid: unprivilegedUID}}
		return cmd
	}, []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "TMPDIR=/tmp", "GORACE=" + os.Getenv("GORACE")}, helper)
}

// copyExecutable copies the program at src to dst, executable by all.
// It holds syscall.ForkLock while dst is open for writing, so no child
// this process forks meanwhile (a parallel test's helper or flavour
// process) inherits the write descriptor: until such a child exec'd,
// the kernel refused to run dst (ETXTBSY), and a flavour process whose
// probe met that ran every case without namespaces.
func copyExecutable(t *testing.T, src, dst string) {
	t.Helper()
	syscall.ForkLock.Lock()
	defer syscall.ForkLock.Unlock()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
