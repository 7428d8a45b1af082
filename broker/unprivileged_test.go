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

	"github.com/agentloom/loom/internal/jailtest"
)

// unprivilegedUID is the uid (and gid) the suite re-runs itself as when
// it starts as root: nobody on common distributions.
const unprivilegedUID = 65534

// TestUnprivileged runs the jail tests as an ordinary user. Started as
// root, it copies this test binary somewhere nobody can execute it and
// re-runs TestClearEcho and the escape suite (minus the cases whose
// control needs root) as uid 65534. Started unprivileged, it is already
// that run and checks a jailed command confines the same way.
func TestUnprivileged(t *testing.T) {
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
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyExe := filepath.Join(dir, "broker.test")
	copyExecutable(t, exe, copyExe)
	// The helper the escape suite uses is built here: nobody has no Go
	// build cache to build it with.
	helper := filepath.Join(dir, "host-helper")
	copyExecutable(t, jailtest.HostHelper(t), helper)

	cmd := exec.Command(copyExe, "-test.run", "^(TestClearEcho|TestEscapeSuite|TestUnprivileged)$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "TMPDIR=/tmp", jailtest.HelperEnv + "=" + helper, "GORACE=" + os.Getenv("GORACE")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: unprivilegedUID, Gid: unprivilegedUID}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("unprivileged run failed: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "sandbox:") || strings.HasPrefix(strings.TrimSpace(line), "--- ") {
			t.Log(strings.TrimSpace(line))
		}
	}
	if !strings.Contains(string(out), "--- PASS: TestEscapeSuite") {
		t.Fatalf("the unprivileged escape suite did not pass:\n%s", out)
	}
}

// copyExecutable copies the program at src to dst, executable by all.
func copyExecutable(t *testing.T, src, dst string) {
	t.Helper()
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
