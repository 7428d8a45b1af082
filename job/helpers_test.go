package job_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// The test binary doubles as the jailed server and client of the loopback
// test, so the test needs no interpreter on the host.
const (
	roleEnv = "LOOM_JOB_TEST_ROLE"
	addrEnv = "LOOM_JOB_TEST_ADDR"
	// pong is what the test server answers.
	pong = "pong from the jail"
	// settleWait bounds how long a test waits for a job to reach the
	// state it expects before failing.
	settleWait = 20 * time.Second
)

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "serve":
		serve(os.Getenv(addrEnv))
		return
	case "fetch":
		fetch(os.Getenv(addrEnv))
		return
	}
	if raceEnabled {
		// The lifecycle model starts hundreds of jailed commands; under
		// the race detector it runs fewer sequences (an explicit
		// -rapid.checks still wins, being parsed after this).
		flag.Set("rapid.checks", fmt.Sprint(raceModelChecks))
	}
	code := m.Run()
	job.RemoveJailHelperForTests()
	os.Exit(code)
}

// raceModelChecks is how many rapid sequences the lifecycle model runs
// under the race detector (rapid's default, 100, otherwise).
const raceModelChecks = 12

// minRapidChecks is how many sequences every other property of this
// package runs at least: rapid's default, which TestMain's lower
// rapid.checks for the jailed lifecycle model must not thin out.
const minRapidChecks = 100

// rapidRounds is how many rapid.Check rounds make minRapidChecks
// sequences at the current rapid.checks.
func rapidRounds(t *testing.T) int {
	t.Helper()
	f := flag.Lookup("rapid.checks")
	if f == nil {
		t.Fatal("rapid registers no rapid.checks flag")
	}
	checks, ok := f.Value.(flag.Getter).Get().(int)
	if !ok || checks <= 0 {
		t.Fatalf("rapid.checks is %v", f.Value)
	}
	return (minRapidChecks + checks - 1) / checks
}

func serve(addr string) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		os.Exit(2)
	}
	fmt.Println("listening")
	http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, pong)
	}))
}

func fetch(addr string) {
	c := http.Client{Timeout: 5 * time.Second}
	r, err := c.Get("http://" + addr + "/")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fetch:", err)
		os.Exit(3)
	}
	defer r.Body.Close()
	io.Copy(os.Stdout, r.Body)
}

var mainOwner = job.Owner{Strand: "main", OpID: "op1", StepID: "step1"}

// failer is what a fixture needs of a test: *testing.T and *rapid.T both
// have it.
type failer interface {
	Helper()
	Fatalf(format string, args ...any)
}

type fixture struct {
	t      failer
	ws     string
	ledger *sandbox.Ledger
	plane  *job.Plane
}

func newFixture(t testing.TB, opts job.Options) *fixture {
	t.Helper()
	f := &fixture{t: t, ws: t.TempDir(), ledger: sandbox.NewLedger(nil)}
	b := broker.New(broker.Options{Ledger: f.ledger, HelperPath: job.JailHelperForTests(t)})
	t.Cleanup(func() { b.Close() }) // after the plane's Close, registered below
	f.plane = job.NewPlane(b, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), settleWait)
		defer cancel()
		if err := f.plane.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return f
}

// policy reads the system roots and the test binary's directory, writes
// the workspace.
func (f *fixture) policy(n sandbox.Network) sandbox.Policy {
	exe, _ := os.Executable()
	return sandbox.Policy{
		ReadableRoots: append(sandbox.SystemReadableRoots(), filepath.Dir(exe)),
		WritableRoots: []string{f.ws},
		Network:       n,
		EnvAllow:      []string{"PATH", "HOME", roleEnv, addrEnv},
	}
}

// sh is a job running a shell command with the network off.
func (f *fixture) sh(cmd string) job.Spec {
	return job.Spec{
		Command: cmd,
		Argv:    []string{"sh", "-c", cmd},
		Dir:     f.ws,
		Env:     map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": f.ws},
		Policy:  f.policy(sandbox.NetworkOff),
	}
}

// self is a job running this test binary in role with addr.
func (f *fixture) self(role, addr string, n sandbox.Network) job.Spec {
	exe, _ := os.Executable()
	return job.Spec{
		Command: role + " " + addr,
		Argv:    []string{exe},
		Dir:     f.ws,
		Env:     map[string]string{"PATH": "/usr/bin:/bin", roleEnv: role, addrEnv: addr},
		Policy:  f.policy(n),
	}
}

func (f *fixture) start(o job.Owner, spec job.Spec) job.ID {
	f.t.Helper()
	s, err := f.plane.Start(context.Background(), o, spec)
	if err != nil {
		f.t.Fatalf("Start(%q): %v", spec.Command, err)
	}
	return s.ID
}

// drain polls id from cur until it ends, returning everything read; it
// fails the test on any dropped byte.
type drained struct {
	stdout, stderr string
	final          job.Polled
	polls          int
}

func (f *fixture) drain(o job.Owner, id job.ID, cur job.Cursors) drained {
	f.t.Helper()
	var d drained
	var out, errs strings.Builder
	deadline := time.Now().Add(settleWait)
	for {
		p, err := f.plane.Poll(context.Background(), o, id, cur, 200*time.Millisecond)
		if err != nil {
			f.t.Fatalf("Poll(%s): %v", id, err)
		}
		d.polls++
		if p.Stdout.Dropped != 0 || p.Stderr.Dropped != 0 {
			f.t.Fatalf("poll %d of %s dropped %d/%d bytes", d.polls, id, p.Stdout.Dropped, p.Stderr.Dropped)
		}
		out.WriteString(p.Stdout.Text)
		errs.WriteString(p.Stderr.Text)
		cur = p.Next
		if !p.State.Pending() {
			d.stdout, d.stderr, d.final = out.String(), errs.String(), p
			return d
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("job %s still %s after %s; stdout so far %q", id, p.State, settleWait, out.String())
		}
	}
}

// waitFor polls id until its stdout holds want.
func (f *fixture) waitFor(o job.Owner, id job.ID, want string) job.Polled {
	f.t.Helper()
	var seen strings.Builder
	cur := job.Cursors{}
	deadline := time.Now().Add(settleWait)
	for {
		p, err := f.plane.Poll(context.Background(), o, id, cur, 200*time.Millisecond)
		if err != nil {
			f.t.Fatalf("Poll(%s): %v", id, err)
		}
		seen.WriteString(p.Stdout.Text)
		cur = p.Next
		if strings.Contains(seen.String(), want) {
			return p
		}
		if !p.State.Pending() || time.Now().After(deadline) {
			f.t.Fatalf("job %s is %s and never wrote %q; stdout %q stderr %q", id, p.State, want, seen.String(), p.Stderr.Text)
		}
	}
}

// freeAddr returns a loopback address nothing listens on now.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// codeOf returns the stable code of a job error.
func codeOf(err error) string {
	if c := tool.CodeOf(err); c != "" {
		return string(c)
	}
	return fmt.Sprintf("<%T>", err)
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// waitEnd polls id (ignoring dropped bytes) until it ends and returns the
// last answer.
func (f *fixture) waitEnd(id job.ID) job.Polled {
	f.t.Helper()
	deadline := time.Now().Add(settleWait)
	for {
		p, err := f.plane.Poll(context.Background(), mainOwner, id, job.Cursors{}, 200*time.Millisecond)
		if err != nil {
			f.t.Fatalf("Poll(%s): %v", id, err)
		}
		if !p.State.Pending() {
			return p
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("job %s still %s after %s", id, p.State, settleWait)
		}
	}
}

// recv takes the next notice, failing the test after settleWait.
func recv(t testing.TB, ch <-chan job.Notice) job.Notice {
	t.Helper()
	select {
	case n := <-ch:
		return n
	case <-time.After(settleWait):
		t.Fatalf("no notice within %s", settleWait)
		return job.Notice{}
	}
}
