package broker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentloom/loom/broker/internal/jail"
	"github.com/agentloom/loom/sandbox"
)

// traceTrue clears `true` under p on b (which traces its phases) and
// returns the phase names in the order they were marked.
func traceTrue(t *testing.T, b *Broker, p sandbox.Policy) []string {
	t.Helper()
	ex, err := b.Clear(context.Background(), sandbox.CallSpec{Argv: []string{"true"}, Policy: p,
		Key: sandbox.StepKey{OpID: "op", StepID: t.Name()},
		Env: map[string]string{"PATH": "/usr/bin:/bin"}, Budget: sandbox.Budget{MaxOutstanding: 64}})
	if err != nil {
		t.Fatal(err)
	}
	for range ex.Output() {
	}
	if s := ex.Wait(); s.ExitCode != 0 {
		t.Fatalf("settled %+v", s)
	}
	marks := b.phasesOf(ex)
	slices.SortStableFunc(marks, func(x, y jail.PhaseMark) int { return int(x.NS - y.NS) })
	var names []string
	for _, m := range marks {
		names = append(names, m.Name)
	}
	return names
}

// TestSpawnEarlyOverlapsTheGuard: with no helper ready, the command's
// helper is started before the broker guards the workspace ("spawned"
// comes before "guarded"), and the command runs in it; the control, a
// broker with a helper ready, takes that helper and starts none.
func TestSpawnEarlyOverlapsTheGuard(t *testing.T) {
	ws := t.TempDir()
	p := testPolicy(ws)

	cold := newTestBroker(t, Options{WarmHelperIdle: -1})
	cold.test.tracePhases = true
	traceTrue(t, cold, p) // the layer probes
	names := traceTrue(t, cold, p)
	spawned, guarded := slices.Index(names, "spawned"), slices.Index(names, "guarded")
	if spawned < 0 || guarded < 0 || spawned > guarded {
		t.Fatalf("phases %v: want the helper spawned before the guard", names)
	}

	warm := newTestBroker(t, Options{})
	warm.test.tracePhases = true
	traceTrue(t, warm, p)
	waitPool(t, warm, defaultWarmHelpers)
	names = traceTrue(t, warm, p)
	if slices.Contains(names, "spawned") || !slices.Contains(names, "taken") {
		t.Fatalf("control: phases %v: a ready helper was not taken, or one was started", names)
	}
}

// TestSpawnEarlyDiscardedWhenTheGuardRefuses: a command the git guard
// refuses (its workspace was swapped for a link, so it is fenced) after
// its helper was started early leaves no helper behind: the one started
// for it was alive when started and is gone once Clear refused.
func TestSpawnEarlyDiscardedWhenTheGuardRefuses(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	elsewhere := filepath.Join(dir, "elsewhere")
	for _, d := range []string{filepath.Join(ws, ".git"), filepath.Join(elsewhere, ".git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := testPolicy(ws)
	b := newTestBroker(t, Options{WarmHelperIdle: -1})
	var mu sync.Mutex
	var pids []int
	b.test.onSpawn = func(pid int, _ bool) {
		alive := syscall.Kill(pid, 0) == nil
		mu.Lock()
		defer mu.Unlock()
		if alive {
			pids = append(pids, pid)
		}
	}
	if _, err := tryRun(b, t.Name(), p, 10*time.Second, "true"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(ws, ws+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, ws); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	before := len(pids)
	mu.Unlock()
	_, err := tryRun(b, t.Name(), p, 10*time.Second, "true")
	var d *sandbox.Denial
	if !errors.As(err, &d) || d.Code != sandbox.DenialWorkspaceFenced {
		t.Fatalf("the swapped workspace ran a command: %v", err)
	}
	mu.Lock()
	started := slices.Clone(pids[before:])
	mu.Unlock()
	if len(started) != 1 {
		t.Fatalf("%d live helpers started for the refused command, want 1 (started early)", len(started))
	}
	waitGone(t, started[0])
}
