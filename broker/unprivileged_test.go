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

// UnprivilegedFullEnv, set to any value (CI's .ci/run sets it), makes
// the unprivileged re-run run the escape suite in every helper flavour.
// Without it the re-run leaves out the cold-launched flavour: what an
// ordinary user's jail does once its helper runs (the uid it maps, the
// capabilities it drops, the limits the kernel applies to it) is the
// same code in every flavour, and the warm flavour runs all of it; the
// cold-launched flavour adds only another way of starting the helper,
// which the root run covers.
const UnprivilegedFullEnv = "LOOM_TEST_UNPRIVILEGED_FULL"

// unprivilegedLeftOut is the -test.skip pattern of the flavours the
// unprivileged re-run leaves out without UnprivilegedFullEnv.
const unprivilegedLeftOut = "^TestEscapeSuite$/^cold-launched$"

// TestUnprivileged runs the jail tests as an ordinary user. Started as
// root, it copies this test binary somewhere nobody can execute it and
// re-runs TestClearEcho and the escape suite (minus the cases whose
// control needs root, and, unless UnprivilegedFullEnv is set, the
// cold-launched flavour) as uid 65534. Started unprivileged, it is already
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

	args := []string{"-test.run", "^(TestClearEcho|TestEscapeSuite|TestUnprivileged)$", "-test.v", "-test.count=1"}
	full := os.Getenv(UnprivilegedFullEnv) != ""
	if !full {
		args = append(args, "-test.skip", unprivilegedLeftOut)
		t.Logf("the unprivileged escape suite leaves out %s (set %s to run every flavour)", unprivilegedLeftOut, UnprivilegedFullEnv)
	}
	cmd := exec.Command(copyExe, args...)
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
	want := []string{"--- PASS: TestEscapeSuite ", "--- PASS: TestEscapeSuite/warm "}
	if full {
		want = append(want, "--- PASS: TestEscapeSuite/cold-launched ")
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Fatalf("the unprivileged escape suite did not pass (no %q):\n%s", strings.TrimSpace(w), out)
		}
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
