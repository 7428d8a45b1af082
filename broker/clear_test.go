//go:build linux

package broker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentloom/loom/broker/internal/jail"
	"github.com/agentloom/loom/sandbox"
	"pgregory.net/rapid"
)

// testPolicy returns a policy with the system roots readable and ws
// writable, network off.
func testPolicy(ws string) sandbox.Policy {
	return sandbox.Policy{
		ReadableRoots: sandbox.SystemReadableRoots(),
		WritableRoots: []string{ws},
		Network:       sandbox.NetworkOff,
		EnvAllow:      []string{"PATH", "HOME"},
	}
}

type result struct {
	stdout, stderr string
	settled        sandbox.Settled
	enf            sandbox.Enforcement
}

// run clears argv under p and collects everything; a refusal fails the
// test. Call it only from the test's goroutine (see tryRun).
func run(t testing.TB, b *Broker, p sandbox.Policy, timeout time.Duration, argv ...string) result {
	t.Helper()
	r, d := tryRun(b, t.Name(), p, timeout, argv...)
	if d != nil {
		t.Fatalf("Clear(%q): %v", argv, d)
	}
	return r
}

// tryRun clears argv under p (pooled in step) and collects everything,
// or returns the refusal. It never touches a testing.TB, so any goroutine
// may call it.
func tryRun(b *Broker, step string, p sandbox.Policy, timeout time.Duration, argv ...string) (result, error) {
	ex, d := b.Clear(context.Background(), sandbox.CallSpec{
		Key:     sandbox.StepKey{OpID: "op", StepID: step},
		Argv:    argv,
		Env:     map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/nonexistent"},
		Policy:  p,
		Budget:  sandbox.Budget{MaxOutstanding: 64},
		Timeout: timeout,
	})
	if d != nil {
		return result{}, d
	}
	return collect(ex), nil
}

func TestClearEcho(t *testing.T) {
	ws := t.TempDir()
	b := newTestBroker(t, Options{})
	r := run(t, b, testPolicy(ws), 10*time.Second, "sh", "-c", "echo hello; echo err >&2; id; pwd; ls /proc; exit 3")
	t.Logf("stdout=%q stderr=%q settled=%+v\n%s", r.stdout, r.stderr, r.settled, r.enf)
	if r.settled.ExitCode != 3 {
		t.Fatalf("exit %d", r.settled.ExitCode)
	}
}

// withProbe returns a broker whose probe result is p, as if the kernel
// had answered so: the degraded paths run for real, with the layers the
// probe says are missing left out.
func withProbe(tb testing.TB, opts Options, p probeResult) *Broker {
	b := newTestBroker(tb, opts)
	b.probeOnce.Do(func() { b.probe = p })
	return b
}

func TestClearExitAndOutput(t *testing.T) {
	ws := t.TempDir()
	b := newTestBroker(t, Options{})
	for _, tc := range []struct {
		script string
		code   int
		out    string
	}{
		{"exit 0", 0, ""},
		{"echo hi; exit 7", 7, "hi\n"},
		{"printf 'a\\nb'", 0, "a\nb"},
	} {
		r := run(t, b, testPolicy(ws), 10*time.Second, "sh", "-c", tc.script)
		if r.settled.ExitCode != tc.code || r.stdout != tc.out || r.settled.TimedOut || r.settled.Cancelled || r.settled.Failed != "" {
			t.Errorf("%q: %+v stdout %q", tc.script, r.settled, r.stdout)
		}
	}
}

func TestClearExecFailure(t *testing.T) {
	r := run(t, newTestBroker(t, Options{}), testPolicy(t.TempDir()), 10*time.Second, "no-such-command-loom")
	if r.settled.Failed == "" || r.settled.ExitCode != sandbox.ExitCodeNotExecuted {
		t.Fatalf("settled %+v", r.settled)
	}
}

func TestClearRefusals(t *testing.T) {
	b := newTestBroker(t, Options{})
	ctx := context.Background()
	_, d := b.Clear(ctx, sandbox.CallSpec{Argv: []string{"true"}, Policy: sandbox.Policy{WritableRoots: []string{"relative"}}})
	if denialCode(d) != sandbox.DenialInvalidPolicy {
		t.Fatalf("relative root: %v", d)
	}
	_, d = b.Clear(ctx, sandbox.CallSpec{Policy: testPolicy(t.TempDir())})
	if denialCode(d) != sandbox.DenialInvalidPolicy {
		t.Fatalf("empty argv: %v", d)
	}
	none := probeResult{usernsErr: syscall.EPERM, landlockErr: syscall.ENOSYS, seccompErr: syscall.EINVAL}
	_, d = withProbe(t, Options{}, none).Clear(ctx, sandbox.CallSpec{Argv: []string{"true"}, Policy: testPolicy(t.TempDir())})
	if denialCode(d) != sandbox.DenialUnconfinedRefused {
		t.Fatalf("nothing available: %v", d)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, d = b.Clear(cctx, sandbox.CallSpec{Argv: []string{"true"}, Policy: testPolicy(t.TempDir())})
	if d == nil {
		t.Fatal("a cancelled context started a command")
	}
}

func TestClearUnconfinedAllowed(t *testing.T) {
	none := probeResult{usernsErr: syscall.EPERM, landlockErr: syscall.ENOSYS, seccompErr: syscall.EINVAL}
	b := withProbe(t, Options{AllowUnconfined: true}, none)
	r := run(t, b, testPolicy(t.TempDir()), 10*time.Second, "sh", "-c", "echo ran")
	if r.stdout != "ran\n" || !r.enf.Degraded {
		t.Fatalf("stdout %q report %s", r.stdout, r.enf)
	}
	for _, name := range []string{sandbox.LayerNamespaces, sandbox.LayerLandlock, sandbox.LayerSeccomp} {
		if r.enf.Applied(name) {
			t.Errorf("%s reported applied although the probe said it is missing", name)
		}
	}
	if !strings.Contains(r.enf.String(), "DEGRADED") || !strings.Contains(r.enf.String(), "namespaces: EPERM") {
		t.Errorf("report %q", r.enf)
	}
}

// TestClearWithoutNamespaces runs the fallback a host without user
// namespaces gets: Landlock and seccomp still hold writes to the
// writable roots.
func TestClearWithoutNamespaces(t *testing.T) {
	real := newTestBroker(t, Options{}).Available()
	if !real.Applied(sandbox.LayerLandlock) {
		t.Fatalf("this test needs Landlock; the host reports %s", real)
	}
	abi := newTestBroker(t, Options{}).probed().landlockABI
	b := withProbe(t, Options{}, probeResult{usernsErr: syscall.EPERM, landlockABI: abi})
	ws, out := t.TempDir(), t.TempDir()
	p := testPolicy(ws)
	p.ReadableRoots = append(p.ReadableRoots, out)
	r := run(t, b, p, 10*time.Second, "sh", "-c", "echo ok > "+ws+"/in; echo no > "+out+"/out")
	if r.enf.Applied(sandbox.LayerNamespaces) || !r.enf.Applied(sandbox.LayerLandlock) || !r.enf.Applied(sandbox.LayerSeccomp) || !r.enf.Degraded {
		t.Fatalf("report %s", r.enf)
	}
	if _, err := os.Stat(filepath.Join(ws, "in")); err != nil {
		t.Errorf("write inside the writable root failed: %v (%s)", err, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "out")); err == nil {
		t.Errorf("write outside the writable roots landed")
	}
}

func TestClearWithoutLandlock(t *testing.T) {
	b := withProbe(t, Options{}, probeResult{landlockErr: syscall.ENOSYS})
	r := run(t, b, testPolicy(t.TempDir()), 10*time.Second, "true")
	l, ok := r.enf.Layer(sandbox.LayerLandlock)
	if !ok || l.Applied || l.Reason != "ENOSYS" || !r.enf.Degraded || !r.enf.Applied(sandbox.LayerNamespaces) {
		t.Fatalf("report %s", r.enf)
	}
}

func TestClearCancellation(t *testing.T) {
	ws := t.TempDir()
	for _, how := range []string{"context", "execution", "ledger_abort_step", "ledger_abort_operation"} {
		t.Run(how, func(t *testing.T) {
			l := sandbox.NewLedger(nil)
			b := newTestBroker(t, Options{Ledger: l})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			key := sandbox.StepKey{OpID: "op", StepID: how}
			ex, d := b.Clear(ctx, sandbox.CallSpec{Key: key, Argv: []string{"sh", "-c", "echo up; sleep 300"}, Policy: testPolicy(ws),
				Env: map[string]string{"PATH": "/usr/bin:/bin"}})
			if d != nil {
				t.Fatal(d)
			}
			first := <-ex.Output()
			if string(first.Bytes) != "up\n" {
				t.Fatalf("first output %q", first.Bytes)
			}
			switch how {
			case "context":
				cancel()
			case "execution":
				ex.Cancel()
			case "ledger_abort_step":
				if n := l.AbortStep(key); n != 1 {
					t.Fatalf("AbortStep cancelled %d", n)
				}
			case "ledger_abort_operation":
				l.AbortOperation("op")
			}
			for range ex.Output() {
			}
			s := ex.Wait()
			if !s.Cancelled || s.TimedOut || s.Signal == "" {
				t.Fatalf("settled %+v", s)
			}
			if n := l.Outstanding(key); n != 0 {
				t.Fatalf("%d tickets outstanding after settlement", n)
			}
		})
	}
}

func TestClearBudget(t *testing.T) {
	b := newTestBroker(t, Options{})
	key := sandbox.StepKey{OpID: "op", StepID: "budget"}
	spec := sandbox.CallSpec{Key: key, Argv: []string{"sleep", "300"}, Policy: testPolicy(t.TempDir()),
		Env: map[string]string{"PATH": "/usr/bin:/bin"}, Budget: sandbox.Budget{MaxOutstanding: 1}}
	ex, d := b.Clear(context.Background(), spec)
	if d != nil {
		t.Fatal(d)
	}
	if _, d := b.Clear(context.Background(), spec); denialCode(d) != sandbox.DenialOutstandingCapReached {
		t.Fatalf("second call in a full step: %v", d)
	}
	ex.Cancel()
	for range ex.Output() {
	}
	ex.Wait()
	ex2, d := b.Clear(context.Background(), spec)
	if d != nil {
		t.Fatalf("after settlement the step should admit again: %v", d)
	}
	ex2.Cancel()
	ex2.Wait()
}

func TestClearTimeoutSources(t *testing.T) {
	ws := t.TempDir()
	b := newTestBroker(t, Options{})
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		wallMs  int
		budget  time.Duration
	}{
		{"spec", 200 * time.Millisecond, 0, 0},
		{"policy_wall", 0, 200, 0},
		{"step_budget", 0, 0, 200 * time.Millisecond},
		{"context_deadline", 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPolicy(ws)
			p.WallMs = tc.wallMs
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			if tc.name != "context_deadline" {
				ctx = context.Background()
			}
			ex, d := b.Clear(ctx, sandbox.CallSpec{Key: sandbox.StepKey{OpID: "op", StepID: tc.name}, Argv: []string{"sleep", "300"},
				Policy: p, Env: map[string]string{"PATH": "/usr/bin:/bin"}, Timeout: tc.timeout, Budget: sandbox.Budget{Wall: tc.budget}})
			if d != nil {
				t.Fatal(d)
			}
			for range ex.Output() {
			}
			if s := ex.Wait(); !s.TimedOut || s.Cancelled {
				t.Fatalf("settled %+v", s)
			}
		})
	}
}

func TestClearEnvAllowlist(t *testing.T) {
	t.Setenv("LOOM_HOST_ONLY", "host")
	b := newTestBroker(t, Options{})
	p := testPolicy(t.TempDir())
	p.EnvAllow = []string{"PATH", "KEEP", jail.EnvName}
	ex, d := b.Clear(context.Background(), sandbox.CallSpec{Argv: []string{"env"}, Policy: p,
		Env: map[string]string{"PATH": "/usr/bin:/bin", "KEEP": "yes", "DROP": "no", jail.EnvName: "v1"}})
	if d != nil {
		t.Fatal(d)
	}
	r := collect(ex)
	got := strings.Fields(r.stdout)
	want := []string{"KEEP=yes", "PATH=/usr/bin:/bin"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("env %q, want %q", got, want)
	}
}

func TestBuildEnvProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		names := rapid.SliceOf(rapid.SampledFrom([]string{"A", "B", "C", "PATH", jail.EnvName})).Draw(t, "allow")
		env := rapid.MapOf(rapid.SampledFrom([]string{"A", "B", "C", "D", "PATH", jail.EnvName}), rapid.StringMatching(`[a-z=]{0,5}`)).Draw(t, "env")
		out := buildEnv(env, names)
		seen := map[string]bool{}
		for _, kv := range out {
			k, v, _ := strings.Cut(kv, "=")
			if !slices.Contains(names, k) || k == jail.EnvName || env[k] != v || seen[k] {
				t.Fatalf("entry %q passed (allow %v, env %v)", kv, names, env)
			}
			seen[k] = true
		}
		for _, n := range names {
			if _, ok := env[n]; ok && n != jail.EnvName && !seen[n] {
				t.Fatalf("allowed %q dropped", n)
			}
		}
		if !slices.IsSorted(out) {
			t.Fatalf("not sorted: %v", out)
		}
	})
}

func TestEnforcementString(t *testing.T) {
	for _, tc := range []struct {
		layers []sandbox.Layer
		want   string
	}{
		{nil, "sandbox: nothing applied"},
		{[]sandbox.Layer{{Name: "namespaces", Applied: true}, {Name: "landlock", Applied: true, Detail: "abi 6"}, {Name: "seccomp", Applied: true}},
			"sandbox: namespaces, landlock(abi 6), seccomp applied"},
		{[]sandbox.Layer{{Name: "landlock", Applied: true, Detail: "abi 6"}, {Name: "namespaces", Reason: "EPERM"}},
			"sandbox: landlock(abi 6) applied; DEGRADED, skipped: namespaces: EPERM"},
		{[]sandbox.Layer{{Name: "landlock", Reason: "ENOSYS"}},
			"sandbox: nothing applied; DEGRADED, skipped: landlock: ENOSYS"},
	} {
		var e sandbox.Enforcement
		for _, l := range tc.layers {
			e.Add(l)
		}
		if got := e.String(); got != tc.want {
			t.Errorf("got %q\nwant %q", got, tc.want)
		}
	}
}

// TestProtectedWithoutNamespaces: with no mount namespace to bind them
// read-only, protected paths are carved out of the Landlock rules, so a
// hook cannot be planted while ordinary work in the workspace goes on.
func TestProtectedWithoutNamespaces(t *testing.T) {
	abi := newTestBroker(t, Options{}).probed().landlockABI
	if abi == 0 {
		t.Fatal("this test needs Landlock")
	}
	script := `cd "$1"
echo evil > .git/hooks/pre-commit && echo HOOK-PLANTED
echo evil >> .git/config && echo CONFIG-CHANGED
mv .git .git-old && echo GIT-MOVED
echo obj > .git/objects/o && echo OBJECT-WRITTEN
echo new > src/new.go && echo SRC-WRITTEN
echo new > README && echo README-WRITTEN
true`
	for _, tc := range []struct {
		name        string
		probe       probeResult
		unprotected bool
		want        []string
		not         []string
	}{
		// The control: the same probe with no protected paths plants the hook.
		{"control_unprotected", probeResult{usernsErr: syscall.EPERM, landlockABI: abi}, true,
			[]string{"HOOK-PLANTED", "CONFIG-CHANGED", "GIT-MOVED"}, nil},
		{"landlock_only", probeResult{usernsErr: syscall.EPERM, landlockABI: abi}, false,
			[]string{"OBJECT-WRITTEN", "SRC-WRITTEN", "README-WRITTEN"}, []string{"HOOK-PLANTED", "CONFIG-CHANGED", "GIT-MOVED"}},
		{"full_jail", probeResult{landlockABI: abi}, false,
			[]string{"OBJECT-WRITTEN", "SRC-WRITTEN", "README-WRITTEN"}, []string{"HOOK-PLANTED", "CONFIG-CHANGED", "GIT-MOVED"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			for _, d := range []string{".git/hooks", ".git/objects", "src"} {
				os.MkdirAll(filepath.Join(ws, d), 0o755)
			}
			os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n"), 0o644)
			os.WriteFile(filepath.Join(ws, "README"), []byte("old\n"), 0o644)
			p := testPolicy(ws)
			p.Protected = DefaultProtected(ws)
			if tc.unprotected {
				p.Protected = nil
			}
			r := run(t, withProbe(t, Options{}, tc.probe), p, 10*time.Second, "sh", "-c", script, "sh", ws)
			for _, w := range tc.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("missing %s: stdout %q stderr %q\n%s", w, r.stdout, r.stderr, r.enf)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(r.stdout, n) {
					t.Errorf("ESCAPED %s: stdout %q\n%s", n, r.stdout, r.enf)
				}
			}
		})
	}
}

// TestWritesWithoutLandlock: with Landlock missing, the mount namespace
// alone confines writes to the writable roots. The control is the same
// write under a policy that makes the target writable.
func TestWritesWithoutLandlock(t *testing.T) {
	b := withProbe(t, Options{}, probeResult{landlockErr: syscall.ENOSYS})
	hidden, err := os.MkdirTemp("/var/tmp", "loom-nolandlock-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(hidden)
	for _, widen := range []bool{false, true} {
		ws := t.TempDir()
		p := testPolicy(ws)
		if widen {
			p.WritableRoots = append(p.WritableRoots, hidden)
		}
		target := filepath.Join(hidden, fmt.Sprint("w", widen))
		r := run(t, b, p, 10*time.Second, "sh", "-c", "echo in > "+ws+"/in; echo out > "+target)
		t.Logf("%s", r.enf)
		if r.enf.Applied(sandbox.LayerLandlock) || !r.enf.Applied(sandbox.LayerMounts) {
			t.Fatalf("report %s", r.enf)
		}
		if _, err := os.Stat(filepath.Join(ws, "in")); err != nil {
			t.Errorf("widen=%v: write inside the workspace failed: %s", widen, r.stderr)
		}
		_, err := os.Stat(target)
		if landed := err == nil; landed != widen {
			t.Errorf("widen=%v: write to %s landed=%v (stderr %q)\n%s", widen, target, landed, r.stderr, r.enf)
		}
	}
}

// TestProcSysReadOnly: a jailed uid 0 would pass the sysctl owner checks,
// so /proc/sys is bound read-only; Landlock is left out here so the mount
// is what refuses. The control writes the same (network-namespaced)
// sysctl in a bare user+network namespace, where it succeeds.
func TestProcSysReadOnly(t *testing.T) {
	probe := `echo 33 > /proc/sys/net/ipv4/ip_default_ttl && cat /proc/sys/net/ipv4/ip_default_ttl`
	b := withProbe(t, Options{}, probeResult{landlockErr: syscall.ENOSYS})
	r := run(t, b, testPolicy(t.TempDir()), 10*time.Second, "sh", "-c", probe)
	if strings.Contains(r.stdout, "33") || r.settled.ExitCode == 0 {
		t.Errorf("jailed sysctl write succeeded: %q %q\n%s", r.stdout, r.stderr, r.enf)
	}
	out, err := exec.Command("unshare", "-rn", "sh", "-c", probe).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "33") {
		t.Errorf("control: %v %q", err, out)
	}
}

// TestClearSlowConsumerLosesNothing: a consumer that starts draining
// after the command has exited (and after outputDrainGrace) still gets
// every byte, since the command waits on the bounded queue meanwhile.
func TestClearSlowConsumerLosesNothing(t *testing.T) {
	t.Parallel()
	const n = 1 << 20
	ex, d := newTestBroker(t, Options{}).Clear(context.Background(), sandbox.CallSpec{Argv: []string{"head", "-c", fmt.Sprint(n), "/dev/zero"},
		Policy: testPolicy(t.TempDir()), Env: map[string]string{"PATH": "/usr/bin:/bin"}})
	if d != nil {
		t.Fatal(d)
	}
	time.Sleep(outputDrainGrace + 500*time.Millisecond)
	total := 0
	for o := range ex.Output() {
		if len(o.Bytes) > outputChunkBytes {
			t.Fatalf("chunk of %d bytes", len(o.Bytes))
		}
		total += len(o.Bytes)
	}
	if s := ex.Wait(); total != n || s.ExitCode != 0 {
		t.Fatalf("got %d of %d bytes, settled %+v", total, n, s)
	}
}

// TestGitCommitInsideJail: the protected hooks and config stay read-only,
// yet git can still commit: objects, refs, the index and its lock live
// elsewhere in .git, which stays writable.
func TestGitCommitInsideJail(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git is needed for this test: %v", err)
	}
	ws := t.TempDir()
	if out, err := exec.Command(git, "-C", ws, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	p := testPolicy(ws)
	p.Protected = DefaultProtected(ws)
	p.EnvAllow = append(p.EnvAllow, "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL")
	ex, d := newTestBroker(t, Options{}).Clear(context.Background(), sandbox.CallSpec{
		Argv:   []string{"sh", "-c", "echo hi > f && git add f && git commit -qm jailed && git log --format=%s && echo evil > .git/hooks/pre-commit"},
		Dir:    ws,
		Policy: p,
		Env: map[string]string{"PATH": "/usr/bin:/bin", "HOME": ws, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b",
			"GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b"},
	})
	if d != nil {
		t.Fatal(d)
	}
	r := collect(ex)
	if !strings.Contains(r.stdout, "jailed") {
		t.Fatalf("commit failed: %q %q\n%s", r.stdout, r.stderr, r.enf)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git", "hooks", "pre-commit")); err == nil {
		t.Fatal("a hook was planted")
	}
}
