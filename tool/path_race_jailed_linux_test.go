package tool

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/internal/jailtest"
	"github.com/agentloom/loom/sandbox"
)

// jailedRaceIterations is how many rounds of file-tool calls run against
// the jailed swapper.
const jailedRaceIterations = 1500

// jailedSwapper is the hostile command itself: python3 in the jail,
// exchanging d with dlink (-> outside), f.txt with a FIFO and p with plink
// (-> .git/hooks) atomically in a tight loop, as raceSwapper does from a
// goroutine.
const jailedSwapper = `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
os.chdir(os.environ["WS"])
pairs = [(b"d", b"dlink"), (b"f.txt", b"fifo"), (b"p", b"plink")]
while True:
    for a, b in pairs:
        libc.renameat2(-100, a, -100, b, 2)
`

// TestFileToolsRaceAJailedCommand runs the file tools while a real jailed
// command swaps links and FIFOs into their paths (the goroutine version
// is TestFileToolsRaceAHostileWorkspace): nothing outside the workspace
// or under .git/hooks changes, nothing outside is read, no call blocks.
// Control: the swapper demonstrably contended (some calls were refused).
func TestFileToolsRaceAJailedCommand(t *testing.T) {
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skipf("no %s for the jailed swapper: %v", python, err)
	}
	r, c := fileRegistry(t)
	ws := c.Workspace
	outside := filepath.Join(filepath.Dir(ws), "outside")
	hooks := ws + "/.git/hooks"
	raceLayout(t, ws, outside)
	before, hooksBefore := snapshot(t, outside), snapshot(t, hooks)

	b := broker.New(broker.Options{HelperPath: jailtest.HostHelper(t)})
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ex, d := b.Clear(ctx, sandbox.CallSpec{
		Argv: []string{python, "-c", jailedSwapper},
		Env:  map[string]string{"WS": ws},
		Policy: sandbox.Policy{
			SystemRoots:   sandbox.SystemReadableRoots(),
			WritableRoots: []string{ws},
			Protected:     c.Base.Protected,
			EnvAllow:      []string{"WS"},
		},
	})
	if d != nil {
		t.Fatalf("the jailed swapper was refused: %v", d)
	}
	go func() {
		for range ex.Output() {
		}
	}()

	refused, leaked := 0, 0
	for i := 0; i < jailedRaceIterations; i++ {
		for _, w := range []struct{ path, body string }{{"d/x.txt", "x"}, {"d/new/y.txt", "y"}, {"p/pre-commit", "#!/bin/sh\necho pwned\n"}} {
			if out := call(t, r, c, "fs_write", map[string]any{"path": w.path, "content": w.body}); out.IsError {
				refused++
			}
		}
		for _, p := range []string{"d/secret.txt", "f.txt"} {
			out := call(t, r, c, "fs_read", map[string]any{"path": p})
			if strings.Contains(out.Text, "|secret") {
				leaked++
			}
			if out.IsError {
				refused++
			}
		}
	}
	ex.Cancel()
	s := ex.Wait()
	if !s.Cancelled {
		t.Fatalf("the jailed swapper ended on its own (%+v): it did not race the whole test", s)
	}
	if diff := diffSnapshots(before, snapshot(t, outside)); diff != "" {
		t.Errorf("the tools touched the outside directory:\n%s", diff)
	}
	if diff := diffSnapshots(hooksBefore, snapshot(t, hooks)); diff != "" {
		t.Errorf("the tools wrote under the protected .git/hooks:\n%s", diff)
	}
	if leaked > 0 {
		t.Errorf("%d reads returned content from outside the workspace", leaked)
	}
	if refused == 0 {
		t.Fatal("no call was refused: the jailed swapper did not contend, and the test would prove nothing")
	}
	t.Logf("%d calls refused over %d rounds against the jailed swapper", refused, jailedRaceIterations)
}
