//go:build linux

package broker

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/broker/internal/jail"
	"github.com/agentloom/loom/sandbox"
)

// primedRun clears argv under p with env on b (which traces phases) and
// returns its stdout and stderr, how it settled, and whether a primed
// helper served it.
func primedRun(t *testing.T, b *Broker, p sandbox.Policy, env map[string]string, argv ...string) (string, sandbox.Settled, *sandbox.Execution, bool) {
	t.Helper()
	e := map[string]string{"PATH": "/usr/bin:/bin"}
	for k, v := range env {
		e[k] = v
	}
	ex, err := b.Clear(context.Background(), sandbox.CallSpec{Argv: argv, Policy: p, Env: e,
		Budget: sandbox.Budget{MaxOutstanding: 1}, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("Clear(%q): %v", argv, err)
	}
	var out strings.Builder
	for o := range ex.Output() {
		out.Write(o.Bytes)
	}
	s := ex.Wait()
	primed := slices.ContainsFunc(b.phasesOf(ex), func(m jail.PhaseMark) bool { return m.Name == jail.PrimedCommandMark })
	return out.String(), s, ex, primed
}

// primedBroker returns a tracing broker whose pool is full of helpers
// primed for p (with env), after one command under p; tune, when set,
// adjusts the broker first (the controls). Its jails mask only the host
// sockets under the test's temporary directories: one another process
// binds between priming and a command rightly keeps a primed helper
// from serving it, which would make these tests depend on a quiet host.
func primedBroker(t *testing.T, p sandbox.Policy, env map[string]string, tune func(*Broker)) *Broker {
	t.Helper()
	b := newTestBroker(t, Options{})
	b.test.tracePhases = true
	b.test.socketsUnder = filepath.Dir(t.TempDir())
	if tune != nil {
		tune(b)
	}
	primedRun(t, b, p, env, "true")
	waitPool(t, b, defaultWarmHelpers)
	b.pool.mu.Lock()
	n := 0
	for _, h := range b.pool.ready {
		if h.prime != nil {
			n++
		}
	}
	b.pool.mu.Unlock()
	if n == 0 {
		t.Fatal("no helper of the pool was primed")
	}
	return b
}

// gitWorkspace makes a workspace holding .git/config and no hooks.
func gitWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".git/config"), []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

// TestPrimedHelperServesTheSamePolicy: a command with the policy the
// pool was primed for is served by a primed helper, reports the same
// layers applied as one confined afresh, and is confined as well: its
// protected file and everything outside its writable root stay
// read-only.
func TestPrimedHelperServesTheSamePolicy(t *testing.T) {
	ws := gitWorkspace(t)
	p := testPolicy(ws)
	p.Protected = DefaultProtected(ws)
	probe := "echo x >> .git/config && echo wrote-config; echo x > /etc/loom-primed && echo wrote-etc; echo ok > f && cat f"
	b := primedBroker(t, p, nil, nil)
	out, s, ex, primed := primedRun(t, b, p, nil, "sh", "-c", probe)
	if !primed {
		t.Fatal("the command was not served by a primed helper")
	}
	if strings.Contains(out, "wrote") || !strings.Contains(out, "ok") {
		t.Fatalf("a primed helper's command: %q (%+v)", out, s)
	}
	fresh := newTestBroker(t, Options{WarmHelperIdle: -1})
	_, _, exFresh, _ := primedRun(t, fresh, p, nil, "true")
	for _, l := range exFresh.Enforcement.Layers {
		if l.Applied != ex.Enforcement.Applied(l.Name) {
			t.Errorf("layer %s: applied %v afresh, %v primed", l.Name, l.Applied, ex.Enforcement.Applied(l.Name))
		}
	}
	if ex.Enforcement.Degraded {
		t.Fatalf("primed: %s", ex.Enforcement)
	}
}

// TestPrimedHelperMissesNoGitControlFileCreatedLater: a protected path
// (.git/hooks) missing when the pool was primed and made by the host
// before the next command is read-only for that command. The control
// hands the primed helper its command without re-validation and shows
// the command could then write a hook.
func TestPrimedHelperMissesNoGitControlFileCreatedLater(t *testing.T) {
	probe := "echo evil > .git/hooks/pre-commit && echo wrote"
	for _, control := range []bool{false, true} {
		ws := gitWorkspace(t)
		p := testPolicy(ws)
		p.Protected = DefaultProtected(ws)
		b := primedBroker(t, p, nil, func(b *Broker) { b.test.primeCheckOff = control })
		if err := os.Mkdir(filepath.Join(ws, ".git/hooks"), 0o755); err != nil {
			t.Fatal(err)
		}
		out, _, _, primed := primedRun(t, b, p, nil, "sh", "-c", probe)
		if control {
			if !primed || !strings.Contains(out, "wrote") {
				t.Fatalf("control: primed %v, %q: the test cannot tell", primed, out)
			}
			continue
		}
		if primed || strings.Contains(out, "wrote") {
			t.Fatalf("a hooks directory made after priming: primed %v, %q", primed, out)
		}
	}
}

// TestPrimedHelperMasksASecretCreatedLater: a home secret made after the
// pool was primed (under a readable root, so no git watch sees it) is
// masked for the next command; the control shows a primed helper handed
// its command without re-validation would show it.
func TestPrimedHelperMasksASecretCreatedLater(t *testing.T) {
	for _, control := range []bool{false, true} {
		home := t.TempDir()
		ws := gitWorkspace(t)
		p := testPolicy(ws)
		p.ReadableRoots = append(p.ReadableRoots, home)
		env := map[string]string{"HOME": home}
		b := primedBroker(t, p, env, func(b *Broker) { b.test.primeCheckOff = control })
		if err := os.Mkdir(filepath.Join(home, ".ssh"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, ".ssh/id_rsa"), []byte("SECRET\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		out, _, _, primed := primedRun(t, b, p, env, "sh", "-c", "cat \"$HOME/.ssh/id_rsa\"")
		if control {
			if !primed || !strings.Contains(out, "SECRET") {
				t.Fatalf("control: primed %v, %q: the test cannot tell", primed, out)
			}
			continue
		}
		if primed || strings.Contains(out, "SECRET") {
			t.Fatalf("a secret made after priming: primed %v, %q", primed, out)
		}
	}
}

// TestPrimedHelperMasksASocketBoundLater: a host socket bound after the
// pool was primed is masked for the next command; the control shows that
// without the broker's re-validation the primed helper is handed the
// command and refuses it (it checks the sockets too).
func TestPrimedHelperMasksASocketBoundLater(t *testing.T) {
	for _, control := range []bool{false, true} {
		dir := t.TempDir()
		ws := gitWorkspace(t)
		p := testPolicy(ws)
		p.ReadableRoots = append(p.ReadableRoots, dir)
		b := primedBroker(t, p, nil, func(b *Broker) { b.test.primeCheckOff = control })
		sock := filepath.Join(dir, "s")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		argv := []string{"sh", "-c", "test -S " + sock + " && echo socket"}
		if control {
			// The broker does not check; the helper still refuses a
			// command whose sockets it did not mask.
			_, err := b.Clear(context.Background(), sandbox.CallSpec{Argv: argv, Policy: p, Env: map[string]string{"PATH": "/usr/bin:/bin"},
				Budget: sandbox.Budget{MaxOutstanding: 1}, Timeout: 20 * time.Second})
			if err == nil || !strings.Contains(err.Error(), "primed with") {
				t.Fatalf("control: %v: the test cannot tell", err)
			}
			continue
		}
		out, _, _, primed := primedRun(t, b, p, nil, argv...)
		if primed || strings.Contains(out, "socket") {
			t.Fatalf("a socket bound after priming: primed %v, %q", primed, out)
		}
	}
}

// TestPrimedHelperRetiredWhenTheRootIsSwapped: a workspace replaced at
// its path after priming is the new one for the next command; the
// control shows a primed helper handed its command without re-validation
// would show the old one.
func TestPrimedHelperRetiredWhenTheRootIsSwapped(t *testing.T) {
	for _, control := range []bool{false, true} {
		ws := filepath.Join(t.TempDir(), "ws")
		if err := os.Mkdir(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(ws, "marker"), []byte("old\n"), 0o644)
		p := testPolicy(ws)
		b := primedBroker(t, p, nil, func(b *Broker) { b.test.primeCheckOff = control })
		if err := os.Rename(ws, ws+".old"); err != nil {
			t.Fatal(err)
		}
		os.Mkdir(ws, 0o755)
		os.WriteFile(filepath.Join(ws, "marker"), []byte("new\n"), 0o644)
		out, _, _, primed := primedRun(t, b, p, nil, "cat", "marker")
		if control {
			if !primed || out != "old\n" {
				t.Fatalf("control: primed %v, %q: the test cannot tell", primed, out)
			}
			continue
		}
		if primed || out != "new\n" {
			t.Fatalf("a root swapped after priming: primed %v, %q", primed, out)
		}
	}
}

// TestPrimedHelperTaintedByAnotherPolicy: a command with another policy,
// run after priming by any broker of the process, can detach a primed helper's mask and put the
// masked file back as the same inode (a hard link), which no identity
// check sees; so no helper primed before it serves a command. The
// control hands primed helpers their command regardless and shows the
// secret.
func TestPrimedHelperTaintedByAnotherPolicy(t *testing.T) {
	for _, control := range []bool{false, true} {
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, ".netrc"), []byte("SECRET\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		ws := gitWorkspace(t)
		p := testPolicy(ws)
		p.ReadableRoots = append(p.ReadableRoots, home)
		env := map[string]string{"HOME": home}
		// The control turns off the mount check too, which also sees the
		// mask detached.
		b := primedBroker(t, p, env, func(b *Broker) { b.test.primeTaintOff, b.test.primeMountsOff = control, control })
		// Another broker of the process (its pool is not b's).
		other, ob := testPolicy(home), newTestBroker(t, Options{WarmHelperIdle: -1})
		ob.test.tracePhases = true
		if out, s, _, _ := primedRun(t, ob, other, nil, "sh", "-c", "ln .netrc x && rm .netrc && ln x .netrc && rm x"); s.ExitCode != 0 {
			t.Fatalf("the other policy's command: %q %+v", out, s)
		}
		out, _, _, primed := primedRun(t, b, p, env, "sh", "-c", "cat \"$HOME/.netrc\"")
		if control {
			if !primed || !strings.Contains(out, "SECRET") {
				t.Fatalf("control: primed %v, %q: the test cannot tell", primed, out)
			}
			continue
		}
		if primed || strings.Contains(out, "SECRET") {
			t.Fatalf("after another policy's command: primed %v, %q", primed, out)
		}
	}
}

// TestPrimedHelperNotReusedForAnotherPolicy: a command whose policy is
// not the primed one gets a helper confined for its own (nothing of the
// primed policy's writable root is reachable), and the primed helpers
// are not handed it.
func TestPrimedHelperNotReusedForAnotherPolicy(t *testing.T) {
	ws1, ws2 := gitWorkspace(t), gitWorkspace(t)
	p1, p2 := testPolicy(ws1), testPolicy(ws2)
	b := primedBroker(t, p1, nil, nil)
	out, s, _, primed := primedRun(t, b, p2, nil, "sh", "-c", "cat "+ws1+"/.git/config; echo x > "+ws1+"/f && echo wrote; echo ok > f && cat f")
	if primed || strings.Contains(out, "[core]") || strings.Contains(out, "wrote") || !strings.Contains(out, "ok") {
		t.Fatalf("another policy on a primed pool: primed %v, %q %+v", primed, out, s)
	}
}

// TestPrimedHelperTakesTheExtraFile: a primed helper receives the
// command's ExtraFile at ExtraFileFD.
func TestPrimedHelperTakesTheExtraFile(t *testing.T) {
	ws := gitWorkspace(t)
	p := testPolicy(ws)
	b := primedBroker(t, p, nil, nil)
	ours, theirs := socketPair(t)
	ex, err := b.Clear(context.Background(), sandbox.CallSpec{Argv: []string{"sh", "-c", "echo hello >&5"}, Policy: p,
		Env: map[string]string{"PATH": "/usr/bin:/bin"}, ExtraFile: theirs, Budget: sandbox.Budget{MaxOutstanding: 1}, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	theirs.Close()
	for range ex.Output() {
	}
	if s := ex.Wait(); s.ExitCode != 0 {
		t.Fatalf("%+v", s)
	}
	if !slices.ContainsFunc(b.phasesOf(ex), func(m jail.PhaseMark) bool { return m.Name == jail.PrimedCommandMark }) {
		t.Fatal("not served by a primed helper")
	}
	buf := make([]byte, 16)
	ours.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _ := ours.Read(buf)
	if string(buf[:n]) != "hello\n" {
		t.Fatalf("read %q from the extra file", buf[:n])
	}
}

// TestPrimedHelperTakesTheStdinFile: a primed helper receives the
// command's stdin file (a job's pipe) as its fd 0, and the caller's copy
// may close at once.
func TestPrimedHelperTakesTheStdinFile(t *testing.T) {
	ws := gitWorkspace(t)
	p := testPolicy(ws)
	b := primedBroker(t, p, nil, nil)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ex, err := b.Clear(context.Background(), sandbox.CallSpec{Argv: []string{"sh", "-c", "cat; ls /proc/self/fd >&2"}, Policy: p, Stdin: pr,
		Env: map[string]string{"PATH": "/usr/bin:/bin"}, Budget: sandbox.Budget{MaxOutstanding: 1}, Timeout: 20 * time.Second})
	pr.Close()
	if err != nil {
		t.Fatal(err)
	}
	pw.Write([]byte("streamed\n"))
	pw.Close()
	var out, errs strings.Builder
	for o := range ex.Output() {
		if o.Stream == sandbox.Stdout {
			out.Write(o.Bytes)
		} else {
			errs.Write(o.Bytes)
		}
	}
	if s := ex.Wait(); s.ExitCode != 0 {
		t.Fatalf("%+v %s", s, errs.String())
	}
	if !slices.ContainsFunc(b.phasesOf(ex), func(m jail.PhaseMark) bool { return m.Name == jail.PrimedCommandMark }) {
		t.Fatal("not served by a primed helper")
	}
	if out.String() != "streamed\n" {
		t.Fatalf("stdin gave %q", out.String())
	}
	// ls's own directory fd aside, the command holds its three streams.
	if fds := strings.Fields(errs.String()); len(fds) > 4 || !slices.Equal(fds[:3], []string{"0", "1", "2"}) {
		t.Fatalf("the command holds descriptors %q", fds)
	}
}

// TestPrimedPoolServesRecentPolicies: commands of two policies on one
// workspace, one after another, are each served by a helper primed for
// their own policy, and each is confined by it.
func TestPrimedPoolServesRecentPolicies(t *testing.T) {
	ws := gitWorkspace(t)
	p1 := testPolicy(ws)
	p1.Protected = DefaultProtected(ws)
	p2 := p1
	extra := t.TempDir()
	if err := os.WriteFile(filepath.Join(extra, "granted"), []byte("GRANTED\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p2.ReadableRoots = append(slices.Clone(p2.ReadableRoots), extra)
	b := primedBroker(t, p1, nil, nil)
	primedRun(t, b, p2, nil, "true")
	served := map[int]int{}
	for i := range 6 {
		waitPool(t, b, defaultWarmHelpers)
		p := []sandbox.Policy{p1, p2}[i%2]
		out, s, _, primed := primedRun(t, b, p, nil, "sh", "-c", "cat "+extra+"/granted; echo x > "+ws+"/.git/config && echo wrote")
		if strings.Contains(out, "wrote") {
			t.Fatalf("policy %d wrote its protected path: %q %+v", i%2+1, out, s)
		}
		if got := strings.Contains(out, "GRANTED"); got != (i%2 == 1) {
			t.Fatalf("policy %d read the extra root: %v, %q", i%2+1, got, out)
		}
		if primed {
			served[i%2]++
		}
	}
	if served[0] == 0 || served[1] == 0 {
		t.Fatalf("primed helpers served %v of each policy's 3 commands", served)
	}
}
