//go:build linux

package broker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentloom/loom/sandbox"
)

// poolState is what b's warm pool holds now: the pids of its ready
// helpers (the helper's own, not its launcher's), oldest first, whether
// its filler runs, and why its last start failed.
func poolState(b *Broker) (pids []int, filling bool, err error) {
	b.pool.mu.Lock()
	defer b.pool.mu.Unlock()
	for _, h := range b.pool.ready {
		pid := h.proc.pid
		if h.proc.launched {
			pid = h.proc.jailPid
		}
		pids = append(pids, pid)
	}
	return pids, b.pool.filling, b.pool.err
}

// waitWarm waits until b holds a warm helper and returns the pid of its
// oldest, the one the next command of its flavour is handed.
func waitWarm(t testing.TB, b *Broker) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if pids, _, _ := poolState(b); len(pids) > 0 {
			return pids[0]
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, filling, err := poolState(b)
	t.Fatalf("no warm helper appeared within 10s (filling %v, last error %v)", filling, err)
	return 0
}

// waitPool waits until b's filler has stopped with n helpers ready and
// returns their pids, oldest first.
func waitPool(t testing.TB, b *Broker, n int) []int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if pids, filling, _ := poolState(b); len(pids) == n && !filling {
			return pids
		}
		time.Sleep(5 * time.Millisecond)
	}
	pids, filling, err := poolState(b)
	t.Fatalf("the pool holds %v (filling %v, last error %v), want %d ready", pids, filling, err, n)
	return nil
}

// waitGone waits until pid no longer exists (it was killed and reaped).
func waitGone(t testing.TB, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("process %d still exists", pid)
}

// requireNoWarm fails t with why if, shortly after its last command
// settled, b holds or is starting a warm helper.
func requireNoWarm(t *testing.T, b *Broker, why string) {
	t.Helper()
	time.Sleep(50 * time.Millisecond)
	if pids, filling, _ := poolState(b); len(pids) > 0 || filling {
		t.Fatal(why)
	}
}

// startSleep clears a long sleep under p; stopSleep ends it.
func startSleep(t *testing.T, b *Broker, p sandbox.Policy) *sandbox.Execution {
	t.Helper()
	ex, d := b.Clear(context.Background(), sandbox.CallSpec{Argv: []string{"sleep", "60"}, Policy: p,
		Env: map[string]string{"PATH": "/usr/bin:/bin"}, Budget: sandbox.Budget{MaxOutstanding: 1}})
	if d != nil {
		t.Fatal(d)
	}
	return ex
}

func stopSleep(ex *sandbox.Execution) {
	ex.Cancel()
	for range ex.Output() {
	}
	ex.Wait()
}

func TestWarmHelperRunsTheNextCommand(t *testing.T) {
	b := newTestBroker(t, Options{})
	b.test.launchAboveRSS = -1 // as a large host starts it
	defer b.Close()
	p := testPolicy(t.TempDir())
	run(t, b, p, 10*time.Second, "true")
	pid := waitWarm(t, b)
	ex := startSleep(t, b, p)
	defer stopSleep(ex)
	// The helper that waited (started by its launcher) is the process
	// that now runs the command.
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.HasPrefix(cmdline, []byte("sleep\x00")) {
		t.Fatalf("warm helper %d runs %q (%v), want sleep", pid, cmdline, err)
	}
	if !ex.Enforcement.Applied(sandbox.LayerLandlock) || !ex.Enforcement.Applied(sandbox.LayerSeccomp) || ex.Enforcement.Degraded {
		t.Fatalf("a warm helper confined less: %s", ex.Enforcement)
	}
}

// Control for the test above: with prestarting off, no helper waits.
func TestColdStartKeepsNoHelper(t *testing.T) {
	b := newTestBroker(t, Options{WarmHelperIdle: -1})
	r := run(t, b, testPolicy(t.TempDir()), 10*time.Second, "sh", "-c", "echo cold")
	if r.stdout != "cold\n" {
		t.Fatalf("stdout %q", r.stdout)
	}
	requireNoWarm(t, b, "a helper was prestarted with WarmHelperIdle < 0")
}

func TestWarmHelperRetiredWhenIdle(t *testing.T) {
	const pool = 2
	b := newTestBroker(t, Options{WarmHelperIdle: 100 * time.Millisecond, WarmHelpers: pool})
	spawned := make(chan int, 8)
	b.test.onSpawn = func(pid int, _ bool) { spawned <- pid }
	run(t, b, testPolicy(t.TempDir()), 10*time.Second, "true")
	<-spawned // the command's own helper
	// The next are the prestarted ones; they may come and go before run
	// returns (a slow machine, a race build), so follow their pids.
	for i := 0; i < pool; i++ {
		select {
		case pid := <-spawned:
			waitGone(t, pid)
		case <-time.After(10 * time.Second):
			_, _, err := poolState(b)
			t.Fatalf("%d of %d helpers were prestarted (last error %v)", i, pool, err)
		}
	}
	if pids, _, _ := poolState(b); len(pids) > 0 {
		t.Fatalf("retired helpers %v are still in the pool", pids)
	}
	// Retired helpers are not replaced: an idle session holds nothing.
	select {
	case pid := <-spawned:
		t.Fatalf("helper %d was started after the pool retired idle", pid)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestCloseDiscardsWarmHelper(t *testing.T) {
	b := newTestBroker(t, Options{})
	p := testPolicy(t.TempDir())
	run(t, b, p, 10*time.Second, "true")
	pid := waitWarm(t, b)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	// Still usable, and nothing is prestarted any more.
	if r := run(t, b, p, 10*time.Second, "sh", "-c", "echo after"); r.stdout != "after\n" {
		t.Fatalf("after Close: %q %+v", r.stdout, r.settled)
	}
	requireNoWarm(t, b, "a closed broker prestarted a helper")
}

func TestWarmHelperKilledFromOutside(t *testing.T) {
	b := newTestBroker(t, Options{})
	defer b.Close()
	p := testPolicy(t.TempDir())
	run(t, b, p, 10*time.Second, "true")
	pid := waitWarm(t, b)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r := run(t, b, p, 10*time.Second, "sh", "-c", "echo fresh")
	if r.stdout != "fresh\n" || r.settled.ExitCode != 0 {
		t.Fatalf("after the warm helper died: %q %+v", r.stdout, r.settled)
	}
}

// A warm helper is started for one flavour of namespaces; a command that
// needs another gets a helper of its own, and its report says which.
func TestWarmHelperFlavours(t *testing.T) {
	b := newTestBroker(t, Options{})
	defer b.Close()
	off := testPolicy(t.TempDir())
	full := off
	full.Network = sandbox.NetworkFull
	for _, p := range []sandbox.Policy{off, full, full, off} {
		r := run(t, b, p, 10*time.Second, "sh", "-c", "echo ok")
		l, _ := r.enf.Layer(sandbox.LayerNamespaces)
		hasNet := strings.Contains(l.Params, "net")
		if r.stdout != "ok\n" || hasNet != (p.Network == sandbox.NetworkOff) {
			t.Fatalf("network %v: stdout %q namespaces %q", p.Network, r.stdout, l.Params)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestClearStdin(t *testing.T) {
	for _, idle := range []time.Duration{0, -1} {
		b := newTestBroker(t, Options{WarmHelperIdle: idle})
		if idle == 0 {
			b.test.launchAboveRSS = -1 // warm helpers through a launcher; cold ones direct
		}
		p := testPolicy(t.TempDir())
		for i := 0; i < 2; i++ { // the second runs on a warm helper when idle >= 0
			ex, d := b.Clear(context.Background(), sandbox.CallSpec{Argv: []string{"sh", "-c", "cat; readlink /proc/self/fd/0 >&2"},
				Stdin: strings.NewReader("fed\n"), Policy: p, Env: map[string]string{"PATH": "/usr/bin:/bin"}, Budget: sandbox.Budget{MaxOutstanding: 1}})
			if d != nil {
				t.Fatal(d)
			}
			var out bytes.Buffer
			for o := range ex.Output() {
				if o.Stream == sandbox.Stdout {
					out.Write(o.Bytes)
				}
			}
			ex.Wait()
			if out.String() != "fed\n" {
				t.Fatalf("idle %v run %d: stdin gave %q", idle, i, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		// A file is the command's fd 0 itself: the caller's copy may close
		// at once while its writer goes on feeding the command.
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		ex, d := b.Clear(context.Background(), sandbox.CallSpec{Argv: []string{"cat"}, Stdin: pr, Policy: p,
			Env: map[string]string{"PATH": "/usr/bin:/bin"}, Budget: sandbox.Budget{MaxOutstanding: 1}})
		pr.Close()
		if d != nil {
			t.Fatal(d)
		}
		pw.Write([]byte("streamed\n"))
		pw.Close()
		var out bytes.Buffer
		for o := range ex.Output() {
			out.Write(o.Bytes)
		}
		if ex.Wait(); out.String() != "streamed\n" {
			t.Fatalf("idle %v: file stdin gave %q", idle, out.String())
		}
		// Without Stdin the command reads /dev/null.
		r := run(t, b, p, 10*time.Second, "sh", "-c", "readlink /proc/self/fd/0; cat")
		if r.stdout != "/dev/null\n" {
			t.Fatalf("idle %v: nil Stdin gave %q", idle, r.stdout)
		}
		b.Close()
	}
}

func TestWarmHelpersUnderConcurrentClears(t *testing.T) {
	t.Parallel()
	for _, launched := range []bool{false, true} {
		t.Run(fmt.Sprint("launched=", launched), func(t *testing.T) { concurrentClears(t, launched) })
	}
}

func concurrentClears(t *testing.T, launched bool) {
	b := newTestBroker(t, Options{})
	if launched {
		b.test.launchAboveRSS = -1
	}
	defer b.Close()
	p := testPolicy(t.TempDir())
	var wg sync.WaitGroup
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 4; i++ {
				want := fmt.Sprintf("g%d-%d", g, i)
				r, d := tryRun(b, t.Name(), p, 10*time.Second, "sh", "-c", "echo "+want)
				if d != nil {
					t.Errorf("Clear: %v", d) // t.Fatal must not be called off the test goroutine
					return
				}
				if r.stdout != want+"\n" {
					t.Errorf("got %q want %q", r.stdout, want)
				}
			}
		}()
	}
	wg.Wait()
}

func TestHostIsLarge(t *testing.T) {
	if residentBytes() <= 0 {
		t.Fatal("resident size unknown")
	}
	for _, tc := range []struct {
		limit int64
		want  bool
	}{{-1, true}, {1, true}, {1 << 62, false}} {
		b := newTestBroker(t, Options{})
		b.test.launchAboveRSS = tc.limit
		if got := b.hostIsLarge(); got != tc.want {
			t.Errorf("limit %d: hostIsLarge %v, want %v", tc.limit, got, tc.want)
		}
	}
}

// A warm helper started under another identity (a host that changed its
// uid since) never runs a command: it is discarded and the command gets a
// helper of its own.
func TestWarmHelperOfAnotherIdentityIsDiscarded(t *testing.T) {
	b := newTestBroker(t, Options{})
	defer b.Close()
	p := testPolicy(t.TempDir())
	run(t, b, p, 10*time.Second, "true")
	pids := waitPool(t, b, defaultWarmHelpers)
	b.pool.mu.Lock()
	for _, h := range b.pool.ready {
		h.who.euid++ // as if the host's identity changed after the start
	}
	b.pool.mu.Unlock()
	ex := startSleep(t, b, p)
	defer stopSleep(ex)
	// Had one of them run the command, it would be sleeping now.
	for _, pid := range pids {
		waitGone(t, pid)
	}
}
