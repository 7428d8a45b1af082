package broker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentloom/loom/sandbox"
	"golang.org/x/sys/unix"
)

// liveCounter counts the helper processes a broker started that have
// not exited yet (a launcher exits once it named its helper), through pidfds opened when each is
// spawned, and remembers the most it ever saw at once.
type liveCounter struct {
	mu   sync.Mutex
	fds  []int
	peak int
	// want and reached: reached is closed once peak is at least want.
	want    int
	reached chan struct{}
}

// watch makes c count b's helpers.
func (c *liveCounter) watch(b *Broker) {
	b.test.onSpawn = func(pid int, _ bool) {
		fd, err := unix.PidfdOpen(pid, 0) // our unreaped child: the pid is still its
		c.mu.Lock()
		defer c.mu.Unlock()
		if err == nil {
			c.fds = append(c.fds, fd)
		}
		live := 0
		for _, f := range c.fds {
			if !pidfdExited(f) {
				live++
			}
		}
		c.peak = max(c.peak, live)
		c.notifyLocked()
	}
}

// atLeast returns a channel closed once c has seen n helpers alive at
// once.
func (c *liveCounter) atLeast(n int) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.want, c.reached = n, make(chan struct{})
	c.notifyLocked()
	return c.reached
}

func (c *liveCounter) notifyLocked() {
	if c.reached != nil && c.peak >= c.want {
		close(c.reached)
		c.reached = nil
	}
}

func (c *liveCounter) max() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peak
}

func (c *liveCounter) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.fds {
		unix.Close(f)
	}
	c.fds = nil
}

// holdLimit bounds how long concurrentHolds' commands hold their slots
// waiting for the count they were asked to reach: past it they are let
// go and the caller's assertion on the peak decides. It measures
// nothing: helpers start in milliseconds.
const holdLimit = 90 * time.Second

// concurrentHolds clears n commands at once on b, each of which holds
// its slot (opening a FIFO, which blocks until a writer has it open)
// until c has counted hold helpers alive at once, or holdLimit passed,
// and then prints its name; it returns every refusal or wrong result.
// Holding replaces a fixed sleep: on a loaded host a command's sleep
// could end before the next helper had started, so no count was ever
// reached.
func concurrentHolds(b *Broker, n int, c *liveCounter, hold int) (errs []string) {
	dir, err := os.MkdirTemp("", "loom-hold-")
	if err != nil {
		return []string{err.Error()}
	}
	defer os.RemoveAll(dir)
	fifo := filepath.Join(dir, "release")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		return []string{err.Error()}
	}
	reached := c.atLeast(hold)
	released := make(chan *os.File, 1)
	go func() {
		select {
		case <-reached:
		case <-time.After(holdLimit):
		}
		// Read-write never blocks, and holds a writer open for every
		// command's open, now and later, until concurrentHolds returns.
		f, _ := os.OpenFile(fifo, os.O_RDWR, 0)
		released <- f
	}()
	defer func() {
		if f := <-released; f != nil {
			f.Close()
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	p := testPolicy("/tmp")
	p.WritableRoots = nil
	p.ReadableRoots = append(p.ReadableRoots, dir)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := fmt.Sprintf("c%d", i)
			r, d := tryRun(b, want, p, 2*holdLimit, "sh", "-c", ": <"+fifo+"; echo "+want)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case d != nil:
				errs = append(errs, d.Error())
			case r.stdout != want+"\n":
				errs = append(errs, fmt.Sprintf("%s: stdout %q settled %+v", want, r.stdout, r.settled))
			}
		}()
	}
	wg.Wait()
	return errs
}

// TestHostBoundConcurrentClears: 40 concurrent commands on a broker
// bounded to 4 all run, and never more than 4 helper processes (warm
// ones included) are alive at once. The control, bounded to 64, shows
// the counter sees more than 4 when nothing holds them back.
func TestHostBoundConcurrentClears(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		maxLive  int
		idle     time.Duration
		launched bool
		bounded  bool
	}{
		{"warm", 4, 0, false, true},
		{"cold-launched", 4, -1, true, true},
		{"control", 64, -1, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each counts its own broker's helpers
			b := newTestBroker(t, Options{MaxLiveCommands: tc.maxLive, WarmHelperIdle: tc.idle})
			if tc.launched {
				b.test.launchAboveRSS = -1
			}
			b.Available() // probe first: probes are not commands
			var c liveCounter
			c.watch(b)
			defer c.close()
			// The commands hold their slots until the count a passing
			// run shows is reached: the bound, or past 4 for the control.
			errs := concurrentHolds(b, 40, &c, min(tc.maxLive, 5))
			b.Close()
			for _, e := range errs {
				t.Error(e)
			}
			peak := c.max()
			t.Logf("bound %d: at most %d helpers alive at once", tc.maxLive, peak)
			if tc.bounded && peak > tc.maxLive {
				t.Fatalf("%d helpers alive at once, over the bound of %d", peak, tc.maxLive)
			}
			if tc.bounded && peak < tc.maxLive {
				t.Fatalf("only %d helpers alive at once under a bound of %d: the bound was never reached, so the test shows nothing", peak, tc.maxLive)
			}
			if !tc.bounded && peak <= 4 {
				t.Fatalf("control: only %d helpers alive at once with room for 64; the counter cannot show a bound of 4", peak)
			}
		})
	}
}

// startSleepFor starts a long sleep that holds a slot until cancelled.
func startSleepFor(t *testing.T, b *Broker) *sandbox.Execution {
	t.Helper()
	ex, d := b.Clear(context.Background(), sandbox.CallSpec{
		Key: sandbox.StepKey{OpID: "op", StepID: t.Name() + "/holder"}, Argv: []string{"sleep", "300"},
		Env: map[string]string{"PATH": "/usr/bin:/bin"}, Policy: testPolicy(t.TempDir()), Budget: sandbox.Budget{MaxOutstanding: 1},
	})
	if d != nil {
		t.Fatal(d)
	}
	return ex
}

// queuedSignal makes b's admission tell the returned channel each time a
// command starts waiting (after making room, as it always does).
func queuedSignal(b *Broker) <-chan struct{} {
	h := b.hostBounds()
	ch := make(chan struct{}, 64)
	room := h.onWait
	h.onWait = func() {
		room()
		ch <- struct{}{}
	}
	return ch
}

// TestHostBoundWaiterAdmittedWhenSlotFrees: with the only slot held, a
// command waits inside Clear, and runs once the holder settles.
func TestHostBoundWaiterAdmittedWhenSlotFrees(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, Options{MaxLiveCommands: 1, WarmHelperIdle: -1})
	defer b.Close()
	queued := queuedSignal(b)
	holder := startSleepFor(t, b)
	ws := t.TempDir()
	got := make(chan result, 1)
	go func() {
		// A root of its own: a guard on all of /tmp would neutralise
		// the repositories parallel tests make there.
		r, d := tryRun(b, "waiter", testPolicy(ws), time.Minute, "echo", "admitted")
		if d != nil {
			r.stderr = d.Error()
		}
		got <- r
	}()
	<-queued
	select {
	case r := <-got:
		t.Fatalf("ran while the only slot was held: %+v", r)
	default:
	}
	holder.Cancel()
	for range holder.Output() {
	}
	holder.Wait()
	if r := <-got; r.stdout != "admitted\n" {
		t.Fatalf("waiter after the slot freed: stdout %q stderr %q settled %+v", r.stdout, r.stderr, r.settled)
	}
}

// TestHostBoundDeadlineRefuses: a command that waits past its deadline
// (its Timeout, its policy's WallMs, its context's deadline) is refused
// host_busy; one whose context is cancelled or whose step is aborted
// while it waits is refused step_aborted. The holder keeps the only slot
// throughout.
func TestHostBoundDeadlineRefuses(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, Options{MaxLiveCommands: 1, WarmHelperIdle: -1})
	defer b.Close()
	queued := queuedSignal(b)
	holder := startSleepFor(t, b)
	defer func() {
		holder.Cancel()
		for range holder.Output() {
		}
	}()
	const wait = 50 * time.Millisecond
	for _, tc := range []struct {
		name string
		// spec is handed the subtest: what it changes is undone when
		// that case ends, not when the whole test does.
		spec func(*testing.T, *sandbox.CallSpec) (ctx context.Context, during func())
		want sandbox.DenialCode
	}{
		{"timeout", func(t *testing.T, s *sandbox.CallSpec) (context.Context, func()) {
			s.Timeout = wait
			return context.Background(), nil
		}, sandbox.DenialHostBusy},
		{"policy wall", func(t *testing.T, s *sandbox.CallSpec) (context.Context, func()) {
			s.Policy.WallMs = int(wait / time.Millisecond)
			return context.Background(), nil
		}, sandbox.DenialHostBusy},
		{"context deadline", func(t *testing.T, s *sandbox.CallSpec) (context.Context, func()) {
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			t.Cleanup(cancel)
			return ctx, nil
		}, sandbox.DenialHostBusy},
		{"no deadline: maxHostBusyWait", func(t *testing.T, s *sandbox.CallSpec) (context.Context, func()) {
			b.test.hostBusyWait = wait
			t.Cleanup(func() { b.test.hostBusyWait = 0 })
			return context.Background(), nil
		}, sandbox.DenialHostBusy},
		{"context cancelled", func(t *testing.T, s *sandbox.CallSpec) (context.Context, func()) {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			return ctx, cancel
		}, sandbox.DenialStepAborted},
		{"step aborted", func(t *testing.T, s *sandbox.CallSpec) (context.Context, func()) {
			return context.Background(), func() { b.Ledger().AbortStep(s.Key) }
		}, sandbox.DenialStepAborted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := sandbox.CallSpec{
				Key: sandbox.StepKey{OpID: "op", StepID: t.Name()}, Argv: []string{"true"},
				Policy: testPolicy(t.TempDir()), Budget: sandbox.Budget{MaxOutstanding: 1},
			}
			// Before the context: its deadline counts from when it is made.
			start := time.Now()
			ctx, during := tc.spec(t, &spec)
			if during != nil {
				go func() {
					<-queued
					during()
				}()
			}
			ex, d := b.Clear(ctx, spec)
			if ex != nil || denialCode(d) != tc.want {
				t.Fatalf("Clear over the bound: %v, %v; want %s", ex, d, tc.want)
			}
			if during == nil {
				<-queued
				if took := time.Since(start); took < wait {
					t.Fatalf("refused after %v, before its deadline of %v", took, wait)
				}
			}
			t.Logf("%s", denialIn(d).Reason)
		})
	}
}

// TestWarmHelperMakesRoom: a warm helper holding the last free slot is
// discarded when a command needs it; the command runs at once. (A pool
// leaves a slot free for the next command, so the slot a warm helper
// holds is needed only once other commands took the spare one.)
func TestWarmHelperMakesRoom(t *testing.T) {
	t.Parallel()
	const maxLive = 3
	b := newTestBroker(t, Options{MaxLiveCommands: maxLive})
	defer b.Close()
	// Unprimed: the test counts the pool's helpers, and a priming a
	// parallel test's command of another policy taints is retired and
	// replaced.
	b.test.noPrime = true
	p := testPolicy(t.TempDir())
	run(t, b, p, 10*time.Second, "true")
	waitPool(t, b, maxLive-1)
	// One holder takes the spare slot and a warm helper (whose slot it
	// returns), another of the other flavour the slot that returned.
	p2 := p
	p2.Network = sandbox.NetworkFull
	a, err := b.Clear(context.Background(), sleepSpec(p, 1))
	if err != nil {
		t.Fatal(err)
	}
	defer stopSleep(a)
	c, err := b.Clear(context.Background(), sleepSpec(p2, 2))
	if err != nil {
		t.Fatal(err)
	}
	defer stopSleep(c)
	pids, _, _ := poolState(b)
	if len(pids) != 1 {
		t.Fatalf("pool %v with two holders, want the one helper left", pids)
	}
	// A command of another flavour cannot use the warm helper: it must
	// be discarded to free the slot.
	r := run(t, b, p2, 10*time.Second, "echo", "ran")
	if r.stdout != "ran\n" {
		t.Fatalf("with a warm helper holding the last slot: stdout %q settled %+v", r.stdout, r.settled)
	}
	waitGone(t, pids[0])
}

// With one live command allowed, no helper is prestarted: it would hold
// the slot the next command needs.
func TestWarmPoolLeavesASlotFree(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, Options{MaxLiveCommands: 1})
	defer b.Close()
	p := testPolicy(t.TempDir())
	for range 2 {
		if r := run(t, b, p, 10*time.Second, "echo", "ran"); r.stdout != "ran\n" {
			t.Fatalf("stdout %q settled %+v", r.stdout, r.settled)
		}
	}
	requireNoWarm(t, b, "a broker bounded to one live command prestarted a helper")
}

// TestScratchBudget: with a budget of one jail's scratch, a second
// namespaced command waits for the first, and is refused host_busy at its
// deadline, saying so.
func TestScratchBudget(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, Options{MaxLiveCommands: 8, ScratchBudgetBytes: 1, WarmHelperIdle: -1})
	defer b.Close()
	if !b.Available().Applied(sandbox.LayerNamespaces) {
		t.Fatal("this test needs the namespaces layer (every jail then mounts scratch)")
	}
	if got := b.hostBounds().budget; got != jailScratchBytes {
		t.Fatalf("budget %d, want it raised to one jail's scratch %d", got, jailScratchBytes)
	}
	holder := startSleepFor(t, b)
	defer func() {
		holder.Cancel()
		for range holder.Output() {
		}
	}()
	_, d := b.Clear(context.Background(), sandbox.CallSpec{
		Key: sandbox.StepKey{OpID: "op", StepID: t.Name()}, Argv: []string{"true"},
		Policy: testPolicy(t.TempDir()), Budget: sandbox.Budget{MaxOutstanding: 1}, Timeout: 50 * time.Millisecond,
	})
	if denialCode(d) != sandbox.DenialHostBusy {
		t.Fatalf("second jail over the scratch budget: %v, want host_busy", d)
	}
	t.Logf("%s", denialIn(d).Reason)
}

// TestDefaultHostBounds: the zero Options give defaultMaxLiveCommands and
// half the host's memory as the scratch budget.
func TestDefaultHostBounds(t *testing.T) {
	t.Parallel()
	h := newTestBroker(t, Options{}).hostBounds()
	mem := physicalMemoryBytes()
	if mem <= 0 {
		t.Fatal("physical memory unknown")
	}
	if h.maxLive != defaultMaxLiveCommands || h.budget != max(mem/defaultScratchBudgetDivisor, jailScratchBytes) {
		t.Fatalf("defaults: %d live, %d scratch; want %d, %d", h.maxLive, h.budget, defaultMaxLiveCommands, mem/defaultScratchBudgetDivisor)
	}
}
