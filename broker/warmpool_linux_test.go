//go:build linux

package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentloom/loom/sandbox"
)

func TestWarmHelpersOption(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		helpers int
		idle    time.Duration
		want    int
	}{
		{0, 0, defaultWarmHelpers},
		{1, 0, 1},
		{MaxWarmHelpers, 0, MaxWarmHelpers},
		{MaxWarmHelpers + 1, 0, MaxWarmHelpers},
		{-1, 0, 0},
		{3, -1, 0}, // prestarting off keeps no pool, whatever its size
		{0, time.Second, defaultWarmHelpers},
	} {
		b := New(Options{WarmHelpers: tc.helpers, WarmHelperIdle: tc.idle})
		if got := b.warmHelpers(); got != tc.want {
			t.Errorf("WarmHelpers %d, WarmHelperIdle %v: pool of %d, want %d", tc.helpers, tc.idle, got, tc.want)
		}
	}
}

// countSpawns makes b count the helpers it starts.
func countSpawns(b *Broker) (count func() int) {
	var mu sync.Mutex
	n := 0
	b.test.onSpawn = func(int, bool) {
		mu.Lock()
		n++
		mu.Unlock()
	}
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// sleepSpec is a long sleep under p, as step i of its own.
func sleepSpec(p sandbox.Policy, i int) sandbox.CallSpec {
	return sandbox.CallSpec{Argv: []string{"sleep", "60"}, Policy: p, Env: map[string]string{"PATH": "/usr/bin:/bin"},
		Key: sandbox.StepKey{OpID: "op", StepID: fmt.Sprint(i)}, Budget: sandbox.Budget{MaxOutstanding: 1}}
}

// After one command the pool fills to its size and no further: the
// command's own helper plus exactly that many were started.
func TestWarmPoolFillsToItsSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		helpers, want int
	}{{0, defaultWarmHelpers}, {2, 2}, {1, 1}} {
		t.Run(fmt.Sprint(tc.helpers), func(t *testing.T) {
			t.Parallel()
			b := newTestBroker(t, Options{WarmHelpers: tc.helpers})
			defer b.Close()
			spawns := countSpawns(b)
			run(t, b, testPolicy(t.TempDir()), 10*time.Second, "true")
			waitPool(t, b, tc.want)
			time.Sleep(50 * time.Millisecond) // a filler that overshot would start one now
			if pids, _, _ := poolState(b); len(pids) != tc.want || spawns() != 1+tc.want {
				t.Fatalf("pool %v after %d helper starts, want %d ready after %d", pids, spawns(), tc.want, 1+tc.want)
			}
		})
	}
}

// Commands cleared one right after another each run on a helper of the
// pool (the one that waited is the process that runs the command) while
// every layer is applied; the next ones start only as commands settle or
// have run a while.
func TestWarmPoolServesBackToBack(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, Options{})
	defer b.Close()
	// Unprimed: the pooled helpers must be the processes that run the
	// commands, and a priming a parallel test's command of another policy
	// taints is retired at handover instead (1 run in 40).
	b.test.noPrime = true
	p := testPolicy(t.TempDir())
	run(t, b, p, 10*time.Second, "true")
	pids := waitPool(t, b, defaultWarmHelpers)
	var running []*sandbox.Execution
	defer func() {
		for _, ex := range running {
			stopSleep(ex)
		}
	}()
	for i := range pids {
		ex, err := b.Clear(context.Background(), sleepSpec(p, i))
		if err != nil {
			t.Fatal(err)
		}
		running = append(running, ex)
		if !ex.Enforcement.Applied(sandbox.LayerLandlock) || !ex.Enforcement.Applied(sandbox.LayerSeccomp) ||
			!ex.Enforcement.Applied(sandbox.LayerPolicyRoot) || ex.Enforcement.Degraded {
			t.Fatalf("a pooled helper confined less: %s", ex.Enforcement)
		}
	}
	for _, pid := range pids {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !bytes.HasPrefix(cmdline, []byte("sleep\x00")) {
			t.Fatalf("pooled helper %d runs %q (%v), want sleep", pid, cmdline, err)
		}
	}
}

// The same, cleared at once: concurrent commands each find a helper.
func TestWarmPoolServesConcurrentClears(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, Options{})
	defer b.Close()
	// Unprimed: the pooled helpers must be the processes that run the
	// commands, and a priming a parallel test's command of another policy
	// taints is retired at handover instead (1 run in 40).
	b.test.noPrime = true
	p := testPolicy(t.TempDir())
	run(t, b, p, 10*time.Second, "true")
	pids := waitPool(t, b, defaultWarmHelpers)
	exs := make([]*sandbox.Execution, len(pids))
	errs := make([]error, len(pids))
	var wg sync.WaitGroup
	for i := range pids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			exs[i], errs[i] = b.Clear(context.Background(), sleepSpec(p, i))
		}()
	}
	wg.Wait()
	defer func() {
		for _, ex := range exs {
			if ex != nil {
				stopSleep(ex)
			}
		}
	}()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, pid := range pids {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !bytes.HasPrefix(cmdline, []byte("sleep\x00")) {
			t.Fatalf("pooled helper %d runs %q (%v), want sleep", pid, cmdline, err)
		}
	}
}

// Warm helpers count against MaxLiveCommands: the pool fills only the
// free slots but one, so the next command is admitted at once, every
// warm helper left alive; with it running, the pool takes no more.
func TestWarmPoolCountsAgainstHostBound(t *testing.T) {
	t.Parallel()
	const maxLive = 3
	b := newTestBroker(t, Options{MaxLiveCommands: maxLive, WarmHelpers: maxLive + 1})
	defer b.Close()
	p := testPolicy(t.TempDir())
	run(t, b, p, 10*time.Second, "true")
	before := waitPool(t, b, maxLive-1)
	p2 := p
	p2.Network = sandbox.NetworkFull // of another flavour: no warm helper fits it
	ex := startSleep(t, b, p2)
	defer stopSleep(ex)
	for _, pid := range before {
		if err := syscall.Kill(pid, 0); err != nil {
			t.Fatalf("warm helper %d was discarded for a command the spare slot admitted: %v", pid, err)
		}
	}
	time.Sleep(2 * prestartAfter) // the running command's prestart has come
	h := b.hostBounds()
	h.mu.Lock()
	live := h.live
	h.mu.Unlock()
	if pids, _, _ := poolState(b); live != maxLive || len(pids) != maxLive-1 {
		t.Fatalf("%d slots live with one command and %v warm, want %d", live, pids, maxLive)
	}
}

// A command of the other network flavour makes room in a full pool for
// one helper of its flavour, not for a whole pool of them.
func TestWarmPoolShiftsFlavourOneAtATime(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, Options{})
	defer b.Close()
	off := testPolicy(t.TempDir())
	full := off
	full.Network = sandbox.NetworkFull
	run(t, b, off, 10*time.Second, "true")
	waitPool(t, b, defaultWarmHelpers)
	run(t, b, full, 10*time.Second, "true")
	fullFlavour := flavour{namespaces: true}
	flavours := func() []flavour {
		b.pool.mu.Lock()
		defer b.pool.mu.Unlock()
		var fs []flavour
		for _, h := range b.pool.ready {
			fs = append(fs, h.flavour)
		}
		return fs
	}
	// The network-full command's prewarm comes once it settled, after
	// run returned: wait for a helper of its flavour, then for the
	// filler to stop.
	for deadline := time.Now().Add(20 * time.Second); !slices.Contains(flavours(), fullFlavour); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no helper of the network-full flavour appeared (pool %v)", flavours())
		}
	}
	waitPool(t, b, defaultWarmHelpers)
	fs := flavours()
	if n := len(slices.DeleteFunc(slices.Clone(fs), func(f flavour) bool { return f != fullFlavour })); n != 1 {
		t.Fatalf("pool flavours %v after one network-full command: %d of its flavour, want 1", fs, n)
	}
	// The next command of that flavour runs on it.
	ex := startSleep(t, b, full)
	defer stopSleep(ex)
	l, _ := ex.Enforcement.Layer(sandbox.LayerNamespaces)
	if l.Params != "user,mount,pid,ipc,uts" {
		t.Fatalf("network-full command's namespaces %q", l.Params)
	}
}

// Close discards every ready helper, and the pool stays empty.
func TestCloseDiscardsWarmPool(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, Options{})
	p := testPolicy(t.TempDir())
	run(t, b, p, 10*time.Second, "true")
	pids := waitPool(t, b, defaultWarmHelpers)
	b.Close()
	for _, pid := range pids {
		// Close returns once they have exited and were reaped.
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("Close returned while warm helper %d still existed (%v)", pid, err)
		}
	}
	run(t, b, p, 10*time.Second, "true")
	requireNoWarm(t, b, "a closed broker refilled its pool")
}

// Commands cleared back to back while the pool still holds a helper for
// the next start no helper meanwhile (refilling waits for a lull); the
// control, without the lull, refills as they settle.
func TestWarmPoolRefillsInALull(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		lull time.Duration
	}{{"lull", 5 * time.Second}, {"control", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newTestBroker(t, Options{})
			defer b.Close()
			b.pool.test.lull = tc.lull
			// Unprimed: a priming that a parallel test's command of another
			// policy taints is retired and replaced, a start this test does
			// not count on.
			b.test.noPrime = true
			p := testPolicy(t.TempDir())
			run(t, b, p, 10*time.Second, "true")
			waitPool(t, b, defaultWarmHelpers)
			spawns := countSpawns(b)
			for range defaultWarmHelpers - 1 {
				run(t, b, p, 10*time.Second, "true")
			}
			if tc.lull > 0 {
				if n := spawns(); n != 0 {
					t.Fatalf("%d helpers started while commands arrived back to back", n)
				}
				if pids, _, _ := poolState(b); len(pids) != 1 {
					t.Fatalf("pool %v, want the one helper no command took", pids)
				}
				return
			}
			waitPool(t, b, defaultWarmHelpers)
			if n := spawns(); n != defaultWarmHelpers-1 {
				t.Fatalf("%d helpers started to refill the pool, want %d", n, defaultWarmHelpers-1)
			}
		})
	}
}

// tryAcquireSpare admits a warm helper only while no request waits and
// a slot stays free after it.
func TestTryAcquireSpare(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		maxLive, live int
		waiting, want bool
	}{
		{3, 0, false, true},
		{3, 1, false, true},
		{3, 2, false, false}, // it would take the last slot
		{3, 3, false, false},
		{1, 0, false, false},
		{3, 0, true, false}, // a command waits
	} {
		h := newHostBound(tc.maxLive, 1<<30)
		h.live = tc.live
		if tc.waiting {
			h.queue = append(h.queue, &hostWaiter{ready: make(chan struct{})})
		}
		l := h.tryAcquireSpare()
		if (l != nil) != tc.want {
			t.Errorf("%+v: admitted %v", tc, l != nil)
		}
		if l != nil && h.live != tc.live+1 {
			t.Errorf("%+v: live %d after admission", tc, h.live)
		}
	}
}
