package tool

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/internal/jailtest"
	"github.com/agentloom/loom/internal/search"
	"github.com/agentloom/loom/internal/search/searchtest"
)

// grepPinRaceIterations is how many grep calls per root kind (directory,
// file) the ripgrep engine makes against the jailed root swapper.
const grepPinRaceIterations = 500

// rootSwapper is the hostile command: python3 in a jail, exchanging the
// search roots d and f.txt with links to a system directory and a system
// file (.dlink, .flink) atomically, in a loop paced at about a jail's
// start-up time (a swap every few hundred microseconds), so most
// resolutions see a real root and many ripgrep starts see a link.
const rootSwapper = `
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
os.chdir(os.environ["WS"])
pairs = [(b"d", b".dlink"), (b"f.txt", b".flink")]
while True:
    for a, b in pairs:
        libc.renameat2(-100, a, -100, b, 2)
    time.sleep(0.0003)
`

// passwdMarker starts the line of /etc/passwd the swap races try to
// read: a system file every jail reads (a system root) and grep never may.
const passwdMarker = "root:"

// startRootSwapper runs rootSwapper jailed with the workspace writable and
// returns a function that stops it and checks it raced to the end.
func startRootSwapper(t *testing.T, ws string) (stop func()) {
	t.Helper()
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skipf("no %s for the jailed swapper: %v", python, err)
	}
	for name, target := range map[string]string{".dlink": "/etc", ".flink": "/etc/passwd"} {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	b := broker.New(broker.Options{HelperPath: jailtest.HostHelper(t)})
	ctx, cancel := context.WithCancel(context.Background())
	ex, d := b.Clear(ctx, broker.CallSpec{
		Argv: []string{python, "-c", rootSwapper},
		Env:  map[string]string{"WS": ws},
		Policy: broker.Policy{
			SystemRoots:   broker.SystemReadableRoots(),
			WritableRoots: []string{ws},
			EnvAllow:      []string{"WS"},
		},
	})
	if d != nil {
		cancel()
		b.Close()
		t.Fatalf("the jailed swapper was refused: %v", d)
	}
	go func() {
		for range ex.Output() {
		}
	}()
	return func() {
		ex.Cancel()
		s := ex.Wait()
		cancel()
		b.Close()
		if !s.Cancelled {
			t.Fatalf("the jailed swapper ended on its own (%+v): it did not race the whole test", s)
		}
	}
}

// passwdLine returns the line of /etc/passwd that starts with
// passwdMarker (no workspace file holds it), so its absence from a result
// means something.
func passwdLine(t *testing.T) string {
	t.Helper()
	f, err := os.Open("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for s := bufio.NewScanner(f); s.Scan(); {
		if strings.HasPrefix(s.Text(), passwdMarker) {
			return s.Text()
		}
	}
	t.Fatalf("/etc/passwd holds no line starting %q", passwdMarker)
	return ""
}

// TestGrepRipgrepNeverSearchesASwappedRoot runs the ripgrep engine on a
// directory root and a file root while a jailed command swaps each, in a
// tight loop, with a link into /etc (a system root its jail reads, which
// grep's roots exclude): no result ever holds /etc/passwd's content or a
// path outside the workspace, some searches find the workspace's files,
// and some are refused as path_changed by the check made in ripgrep's own
// jail after the harness resolved the root. Control
// (TestGrepUnpinnedRipgrepFollowsASwappedRoot): the same swap against the
// invocation that named the root as ripgrep's argument returns /etc's
// content.
func TestGrepRipgrepNeverSearchesASwappedRoot(t *testing.T) {
	searchtest.RequireRipgrep(t)
	secret := passwdLine(t)
	c := grepCall(t, map[string]string{"d/g.txt": "harmless\n", "f.txt": "harmless\n"}, true)
	defer c.Broker.Close()
	stop := startRootSwapper(t, c.Workspace)
	type tally struct {
		found, refused int
		changed        int // path_changed from ripgrep's jail
		codes          map[string]int
	}
	kinds := map[string]*tally{"d": {codes: map[string]int{}}, "f.txt": {codes: map[string]int{}}}
	for i := range 2 * grepPinRaceIterations {
		path := []string{"d", "f.txt"}[i%2]
		o := runGrepArgs(t, c, map[string]any{"pattern": "harmless|^" + passwdMarker, "path": path})
		if strings.Contains(o.Text, secret) {
			stop()
			t.Fatalf("iteration %d (path %s): /etc/passwd leaked: %s", i, path, o.Text)
		}
		k := kinds[path]
		if !o.IsError {
			d := grepDetails(t, o)
			if d.Engine != EngineRipgrep {
				stop()
				t.Fatalf("iteration %d: engine %q, want ripgrep", i, d.Engine)
			}
			if d.Files > 1 || (d.Files == 1 && !strings.HasPrefix(o.Text, filepath.Join(path, "g.txt")+":1:harmless") && !strings.HasPrefix(o.Text, path+":1:harmless")) {
				stop()
				t.Fatalf("iteration %d (path %s): a result from outside the root: %s", i, path, o.Text)
			}
			k.found += d.Matches
			continue
		}
		k.refused++
		k.codes[grepCode(o)]++
		if d, ok := o.Details.(GrepDetails); ok && d.Error == CodePathChanged && d.Enforcement != nil {
			// Refused by the check in ripgrep's jail, after the
			// harness's own checks had passed.
			k.changed++
		}
	}
	stop()
	for path, k := range kinds {
		t.Logf("path %s: %d matches found, %d calls refused (%v; %d path_changed in the jail) over %d calls", path, k.found, k.refused, k.codes, k.changed, grepPinRaceIterations)
		if k.found == 0 {
			t.Errorf("path %s: no call found the harmless file: the race searched nothing", path)
		}
		if k.refused == 0 {
			t.Errorf("path %s: no call was refused: the swapper did not contend, and the test would prove nothing", path)
		}
	}
	if kinds["d"].changed == 0 {
		t.Error("no directory search was refused as path_changed in ripgrep's jail: the check there was never exercised")
	}
}

// unpinnedRipgrep runs ripgrep as the engine did before it pinned its
// root: the resolved root handed to ripgrep as its path argument (and as
// the broker's working directory), under the same policy and collector.
func unpinnedRipgrep(t *testing.T, c *Call, rg, root string, o search.Options) search.Result {
	t.Helper()
	p, d := ripgrepPolicy(c, rg, root, o)
	if d != nil {
		t.Fatalf("ripgrep cannot be jailed: %v", d)
	}
	dir := root
	if fi, err := os.Lstat(root); err == nil && !fi.IsDir() {
		dir = filepath.Dir(root)
	}
	ex, d := c.Broker.Clear(context.Background(), broker.CallSpec{
		Argv: append([]string{rg}, search.RipgrepArgs(root, o)...), Dir: dir, Policy: p,
		Timeout: GrepTimeout, MaxOutputBytes: MaxRipgrepOutputBytes,
	})
	if d != nil {
		t.Fatalf("the unpinned ripgrep was refused: %v", d)
	}
	col := search.NewRipgrepCollector(o)
	for out := range ex.Output() {
		if out.Stream == broker.Stdout {
			col.Write(out.Bytes)
		}
	}
	ex.Wait()
	return col.Result()
}

// TestGrepUnpinnedRipgrepFollowsASwappedRoot is the control of
// TestGrepRipgrepNeverSearchesASwappedRoot: the same jailed swapper,
// against ripgrep handed the resolved roots as path arguments, makes it
// return /etc/passwd's content for the directory root and for the file
// root within grepPinRaceIterations runs each.
func TestGrepUnpinnedRipgrepFollowsASwappedRoot(t *testing.T) {
	searchtest.RequireRipgrep(t)
	secret := passwdLine(t)
	c := grepCall(t, map[string]string{"d/g.txt": "harmless\n", "f.txt": "harmless\n"}, true)
	defer c.Broker.Close()
	rg := ripgrepPath(c)
	ws := c.Workspace
	o := search.Options{Pattern: "^" + passwdMarker, IgnoreRoot: ws, Protected: protectedForms(c.Base.Protected)}
	stop := startRootSwapper(t, ws)
	defer stop()
	for _, name := range []string{"d", "f.txt"} {
		root := filepath.Join(ws, name)
		leaked := 0
		for i := 0; i < grepPinRaceIterations && leaked == 0; i++ {
			for _, h := range unpinnedRipgrep(t, c, rg, root, o).Hits {
				if h.Text == secret {
					leaked++
				}
			}
		}
		t.Logf("root %s: %d hits of /etc/passwd's line", name, leaked)
		if leaked == 0 {
			t.Errorf("root %s: %d unpinned runs against the swapper never returned /etc/passwd: the control shows nothing", name, grepPinRaceIterations)
		}
	}
}
