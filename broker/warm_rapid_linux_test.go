//go:build linux

package broker

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/agentloom/loom/sandbox"
)

// TestWarmSlotStateMachine drives one broker, its warm pool of a random
// size, through random sequences of commands of both network flavours,
// commands whose stdin is a file, warm helpers killed from outside, idle periods past the allowance and
// Close, against a model that says only what must hold: every command
// runs and reports the namespaces of its flavour, a closed broker
// prestarts nothing, and once the broker is closed every helper process
// it ever started is gone. The sequences are split between
// warmModelRuns parallel subtests, each checking its share on brokers of
// its own.
func TestWarmSlotStateMachine(t *testing.T) {
	helper := testHelper(t)
	// Restored once every subtest ran: nothing else in the package runs
	// beside this test (it is not parallel), so the lowered flag is read
	// by its subtests alone.
	t.Cleanup(fewerChecks(warmModelChecks / warmModelRuns))
	for i := range warmModelRuns {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			checkWarmSlots(t, helper)
		})
	}
}

// checkWarmSlots checks the warm-slot model's sequences (see
// TestWarmSlotStateMachine) on the host-built helper.
func checkWarmSlots(t *testing.T, helper string) {
	rapid.Check(t, func(rt *rapid.T) {
		const idle = 30 * time.Millisecond
		b := New(Options{HelperPath: helper, WarmHelperIdle: idle, WarmHelpers: rapid.IntRange(0, 3).Draw(rt, "pool")})
		if rapid.Bool().Draw(rt, "launched") {
			b.test.launchAboveRSS = -1
		}
		var mu sync.Mutex
		var spawned []int
		b.test.onSpawn = func(pid int, _ bool) {
			mu.Lock()
			spawned = append(spawned, pid)
			mu.Unlock()
		}
		ws := t.TempDir()
		closed := false
		n := 0
		// After Close, a command's own helper is the only one started.
		spawnedAtClose, clearsSinceClose := 0, 0
		clear := func(network sandbox.Network, stdin *os.File) {
			n++
			if closed {
				clearsSinceClose++
			}
			p := testPolicy(ws)
			p.Network = network
			want := fmt.Sprintf("run-%d", n)
			spec := sandbox.CallSpec{Argv: []string{"sh", "-c", "echo " + want}, Policy: p,
				Env: map[string]string{"PATH": "/usr/bin:/bin"}, Budget: sandbox.Budget{MaxOutstanding: 1}}
			if stdin != nil {
				spec.Stdin = stdin
			}
			ex, d := b.Clear(context.Background(), spec)
			if d != nil {
				rt.Fatalf("Clear: %v", d)
			}
			var out bytes.Buffer
			for o := range ex.Output() {
				out.Write(o.Bytes)
			}
			s := ex.Wait()
			l, _ := ex.Enforcement.Layer(sandbox.LayerNamespaces)
			if out.String() != want+"\n" || s.ExitCode != 0 || strings.Contains(l.Params, "net") != (network == sandbox.NetworkOff) {
				rt.Fatalf("network %v: out %q settled %+v namespaces %q", network, out.String(), s, l.Params)
			}
		}
		rt.Repeat(map[string]func(*rapid.T){
			"clear": func(rt *rapid.T) {
				clear(rapid.SampledFrom([]sandbox.Network{sandbox.NetworkOff, sandbox.NetworkFull}).Draw(rt, "network"), nil)
			},
			"clear with a file as stdin": func(rt *rapid.T) {
				f, err := os.Open(os.DevNull)
				if err != nil {
					rt.Fatal(err)
				}
				defer f.Close()
				clear(sandbox.NetworkOff, f)
			},
			"kill a warm helper": func(rt *rapid.T) {
				pids, _, _ := poolState(b)
				if len(pids) > 0 {
					syscall.Kill(pids[rapid.IntRange(0, len(pids)-1).Draw(rt, "victim")], syscall.SIGKILL)
				}
			},
			"idle past the allowance": func(rt *rapid.T) {
				time.Sleep(idle + 20*time.Millisecond)
			},
			"close": func(rt *rapid.T) {
				b.Close()
				if closed {
					return
				}
				closed = true
				// A prestart already under way finishes (and is discarded)
				// before the count starts.
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
					if _, filling, _ := poolState(b); !filling {
						break
					}
					if time.Now().After(deadline) {
						rt.Fatal("a prestart under way at Close never finished")
					}
				}
				mu.Lock()
				spawnedAtClose = len(spawned)
				mu.Unlock()
			},
			"": func(rt *rapid.T) {
				if !closed {
					return
				}
				time.Sleep(10 * time.Millisecond) // a prestart would have begun
				mu.Lock()
				extra := len(spawned) - spawnedAtClose - clearsSinceClose
				mu.Unlock()
				if extra != 0 {
					rt.Fatalf("a closed broker started %d helpers beyond its commands' own", extra)
				}
				// A closed broker ends up with nothing warm, and stays so.
				deadline := time.Now().Add(5 * time.Second)
				for {
					if pids, filling, _ := poolState(b); len(pids) == 0 && !filling {
						break
					}
					if time.Now().After(deadline) {
						rt.Fatal("a closed broker still holds or starts a warm helper")
					}
					time.Sleep(5 * time.Millisecond)
				}
			},
		})
		b.Close()
		// Every helper process this broker started is gone.
		mu.Lock()
		pids := append([]int(nil), spawned...)
		mu.Unlock()
		deadline := time.Now().Add(10 * time.Second)
		for _, pid := range pids {
			for syscall.Kill(pid, 0) != syscall.ESRCH {
				if time.Now().After(deadline) {
					rt.Fatalf("helper %d outlived its closed broker (of %v)", pid, pids)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	})
}

// warmModelChecks is how many sequences the warm-slot model runs unless
// -rapid.checks says otherwise (it then sets each subtest's): each
// starts dozens of real jails.
const warmModelChecks = 20

// warmModelRuns is how many parallel subtests share the warm-slot
// model's sequences; it divides warmModelChecks.
const warmModelRuns = 4

// fewerChecks lowers rapid's number of checks to n for one test, unless
// the command line set it, and returns what restores it.
func fewerChecks(n int) (restore func()) {
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "rapid.checks" })
	f := flag.Lookup("rapid.checks")
	if explicit || f == nil {
		return func() {}
	}
	old := f.Value.String()
	f.Value.Set(strconv.Itoa(n))
	return func() { f.Value.Set(old) }
}
