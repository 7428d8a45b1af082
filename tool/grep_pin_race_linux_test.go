package tool

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/internal/jailtest"
	"github.com/agentloom/loom/internal/search"
	"github.com/agentloom/loom/internal/search/searchtest"
	"github.com/agentloom/loom/sandbox"
)

// grepPinRaceIterations is how many grep calls per root kind (directory,
// file) the ripgrep engine makes against the jailed root swapper.
const grepPinRaceIterations = 500

// linkSwapper is the hostile command: python3 in a jail, exchanging each
// pair of workspace entries named in $PAIRS ("a:b,c:d") atomically, in a
// loop paced at about a jail's start-up time (a swap every few hundred
// microseconds), so most resolutions see the real entry and many of
// ripgrep's opens see the link.
const linkSwapper = `
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
os.chdir(os.environ["WS"])
pairs = [p.encode().split(b":") for p in os.environ["PAIRS"].split(",")]
while True:
    for a, b in pairs:
        libc.renameat2(-100, a, -100, b, 2)
    time.sleep(0.0003)
`

// linkSwap is one pair linkSwapper exchanges: a workspace entry and a
// link to target made beside it.
type linkSwap struct{ entry, link, target string }

// jailText is a line of a system file that ripgrep's jail reads (in the
// directory of an installed program, a system root that jail keeps) and
// grep's roots exclude: what a swap race tries to make grep return.
type jailText struct{ dir, file, line string }

// findJailText returns a line that occurs once in a text file (a script)
// beside rg, or in /usr/bin or /bin.
func findJailText(t *testing.T) jailText {
	t.Helper()
	rg, err := exec.LookPath("rg")
	if err != nil {
		t.Fatal(err)
	}
	if rg, err = filepath.EvalSymlinks(rg); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Dir(rg), "/usr/bin", "/bin"} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue
			}
			p := filepath.Join(dir, e.Name())
			data, err := os.ReadFile(p)
			if err != nil || len(data) > 64<<10 || bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
				continue
			}
			for _, l := range strings.Split(string(data), "\n") {
				if len(l) >= 24 && len(l) <= 200 && !strings.ContainsAny(l, "\r\t") && strings.Count(string(data), l) == 1 {
					return jailText{dir: dir, file: p, line: l}
				}
			}
		}
	}
	t.Fatal("no text file beside rg, in /usr/bin or /bin to race for")
	return jailText{}
}

// pattern is a regular expression matching the line and "harmless".
func (j jailText) pattern() string { return "harmless|^" + regexp.QuoteMeta(j.line) + "$" }

// startSwapper makes each swap's link, runs linkSwapper on them jailed
// with the workspace writable, and returns a function that stops it and
// checks it raced to the end.
func startSwapper(t *testing.T, ws string, swaps []linkSwap) (stop func()) {
	t.Helper()
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skipf("no %s for the jailed swapper: %v", python, err)
	}
	var pairs []string
	for _, s := range swaps {
		if err := os.Symlink(s.target, filepath.Join(ws, s.link)); err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, s.entry+":"+s.link)
	}
	b := broker.New(broker.Options{HelperPath: jailtest.HostHelper(t)})
	ctx, cancel := context.WithCancel(context.Background())
	ex, d := b.Clear(ctx, sandbox.CallSpec{
		Argv: []string{python, "-c", linkSwapper},
		Env:  map[string]string{"WS": ws, "PAIRS": strings.Join(pairs, ",")},
		Policy: sandbox.Policy{
			SystemRoots:   sandbox.SystemReadableRoots(),
			WritableRoots: []string{ws},
			EnvAllow:      []string{"WS", "PAIRS"},
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

// TestGrepRipgrepNeverSearchesASwappedRoot runs the ripgrep engine on a
// directory root and a file root while a jailed command swaps each, in a
// loop, with a link to a system directory and file that ripgrep's jail
// reads and grep's roots exclude (findJailText): no result ever holds that
// file's line or a path outside the root, some searches find the
// workspace's files, and some directory searches are refused as
// path_changed by the check made in ripgrep's own jail after the
// harness's checks passed. Control
// (TestGrepUnpinnedRipgrepFollowsASwappedRoot): the same swap against the
// invocation that named the root as ripgrep's argument returns the line.
func TestGrepRipgrepNeverSearchesASwappedRoot(t *testing.T) {
	searchtest.RequireRipgrep(t)
	jt := findJailText(t)
	c := grepCall(t, map[string]string{"d/g.txt": "harmless\n", "f.txt": "harmless\n"}, true)
	defer c.Broker.(*broker.Broker).Close()
	stop := startSwapper(t, c.Workspace, []linkSwap{{"d", ".dlink", jt.dir}, {"f.txt", ".flink", jt.file}})
	type tally struct {
		found, refused int
		changed        int // path_changed from ripgrep's jail
		codes          map[string]int
	}
	kinds := map[string]*tally{"d": {codes: map[string]int{}}, "f.txt": {codes: map[string]int{}}}
	for i := range 2 * grepPinRaceIterations {
		path := []string{"d", "f.txt"}[i%2]
		o := runGrepArgs(t, c, map[string]any{"pattern": jt.pattern(), "path": path})
		if strings.Contains(o.Text, jt.line) {
			stop()
			t.Fatalf("iteration %d (path %s): %s leaked: %s", i, path, jt.file, o.Text)
		}
		k := kinds[path]
		if !o.IsError {
			d := grepDetails(t, o)
			if d.Engine != EngineRipgrep {
				stop()
				t.Fatalf("iteration %d: engine %q, want ripgrep", i, d.Engine)
			}
			if want := map[string]string{"d": "d/g.txt:1:harmless\n", "f.txt": "f.txt:1:harmless\n"}[path]; d.Files > 1 || (d.Files == 1 && !strings.HasPrefix(o.Text, want)) {
				stop()
				t.Fatalf("iteration %d (path %s): a result from outside the root: %s", i, path, o.Text)
			}
			k.found += d.Matches
			continue
		}
		k.refused++
		k.codes[string(grepCode(o))]++
		if d, ok := o.Details.(GrepDetails); ok && o.Code == CodePathChanged && d.Enforcement != nil {
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
	ex, err := c.Broker.Clear(context.Background(), sandbox.CallSpec{
		Argv: append([]string{rg}, search.RipgrepArgs(root, o)...), Dir: dir, Policy: p,
		Timeout: grepTimeout, MaxOutputBytes: maxRipgrepOutputBytes,
	})
	if err != nil {
		t.Fatalf("the unpinned ripgrep was refused: %v", err)
	}
	col := search.NewRipgrepCollector(o)
	for out := range ex.Output() {
		if out.Stream == sandbox.Stdout {
			col.Write(out.Bytes)
		}
	}
	ex.Wait()
	return col.Result()
}

// TestGrepUnpinnedRipgrepFollowsASwappedRoot is the control of
// TestGrepRipgrepNeverSearchesASwappedRoot: the same jailed swapper,
// against ripgrep handed the resolved roots as path arguments, makes it
// return the system file's line for the directory root and for the file
// root within grepPinRaceIterations runs each.
func TestGrepUnpinnedRipgrepFollowsASwappedRoot(t *testing.T) {
	searchtest.RequireRipgrep(t)
	jt := findJailText(t)
	c := grepCall(t, map[string]string{"d/g.txt": "harmless\n", "f.txt": "harmless\n"}, true)
	defer c.Broker.(*broker.Broker).Close()
	rg := ripgrepPath(c)
	ws := c.Workspace
	o := search.Options{Pattern: jt.pattern(), IgnoreRoot: ws, Protected: protectedForms(c.Base.Protected)}
	stop := startSwapper(t, ws, []linkSwap{{"d", ".dlink", jt.dir}, {"f.txt", ".flink", jt.file}})
	defer stop()
	for _, name := range []string{"d", "f.txt"} {
		root := filepath.Join(ws, name)
		runs, leaked := 0, false
		for ; runs < grepPinRaceIterations && !leaked; runs++ {
			for _, h := range unpinnedRipgrep(t, c, rg, root, o).Hits {
				leaked = leaked || h.Text == jt.line
			}
		}
		if !leaked {
			t.Errorf("root %s: %d unpinned runs against the swapper never returned %s: the control shows nothing", name, runs, jt.file)
		}
		t.Logf("root %s: %s came back after %d unpinned runs", name, jt.file, runs)
	}
}

// grepWalkRaceDirs is how many sibling directories the walk race puts
// beside the swapped ones, so ripgrep lists them well before it enters
// them.
const grepWalkRaceDirs = 100

// grepWalkRaceCalls is how many grep calls the walk race makes with
// the confirmation on, and as many runs with it off (the control).
const grepWalkRaceCalls = 100

// TestGrepRipgrepWalkNeverReturnsALineItCannotConfirm probes the walk
// below ripgrep's pinned root: ripgrep lists a directory, then opens its
// subdirectories and files by path, so a link a jailed command swaps in
// below the root between the two is followed, within what ripgrep's jail
// reads. While d/bin and d/etc are exchanged with links to a directory of
// scripts beside rg and to /etc, grep on d never returns the script's
// line: every line is confirmed by re-reading its file through the
// workspace without following links (search.Confirm), and the leaks are
// counted as left out. Control, interleaved with the calls: the same
// jailed ripgrep run without the confirmation (runRipgrep, as the tool
// runs it) returns the script's line, and never /etc/passwd's, since
// ripgrep's jail omits /etc (grepJailOmits).
func TestGrepRipgrepWalkNeverReturnsALineItCannotConfirm(t *testing.T) {
	searchtest.RequireRipgrep(t)
	jt := findJailText(t)
	passwd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	etcLine, _, _ := strings.Cut(string(passwd), "\n")
	if len(etcLine) < 8 {
		t.Fatalf("/etc/passwd's first line %q is too short to look for", etcLine)
	}
	files := map[string]string{"d/bin/g.txt": "harmless\n", "d/etc/g.txt": "harmless\n"}
	for i := range grepWalkRaceDirs {
		files[fmt.Sprintf("d/a%03d/x.txt", i)] = "harmless\n"
	}
	c := grepCall(t, files, true)
	defer c.Broker.(*broker.Broker).Close()
	rg := ripgrepPath(c)
	root := filepath.Join(c.Workspace, "d")
	pattern := jt.pattern() + "|^" + regexp.QuoteMeta(etcLine) + "$"
	o := search.Options{Pattern: pattern, IgnoreRoot: c.Workspace, Protected: protectedForms(c.Base.Protected)}
	p, d := ripgrepPolicy(c, rg, root, o)
	if d != nil {
		t.Fatalf("ripgrep cannot be jailed: %v", d)
	}
	stop := startSwapper(t, c.Workspace, []linkSwap{{"d/bin", "d/.binlink", jt.dir}, {"d/etc", "d/.etclink", "/etc"}})
	defer stop()
	leaked, unconfirmed, found := 0, 0, 0
	for i := range grepWalkRaceCalls {
		out := runGrepArgs(t, c, map[string]any{"pattern": pattern, "path": "d", "max_results": MaxGrepResults})
		if strings.Contains(out.Text, jt.line) || strings.Contains(out.Text, etcLine) {
			t.Fatalf("call %d: a line from outside the workspace came back: %s", i, out.Text)
		}
		if !out.IsError {
			gd := grepDetails(t, out)
			unconfirmed += gd.Unconfirmed
			found += gd.Matches
			if gd.Unconfirmed > 0 && !strings.Contains(out.Text, "were left out") {
				t.Fatalf("call %d: %d lines left out and the text does not say so: %s", i, gd.Unconfirmed, out.Text)
			}
		}
		r := runRipgrep(context.Background(), c, rg, root, p, o)
		for _, h := range r.res.Hits {
			if h.Text == etcLine {
				t.Fatalf("control run %d: /etc/passwd came back through d/etc, although ripgrep's jail omits /etc", i)
			}
			if h.Text == jt.line {
				leaked++
			}
		}
	}
	t.Logf("confirmed: %d matches found, %d lines left out over %d calls; unconfirmed control: %s came back %d times over %d runs",
		found, unconfirmed, grepWalkRaceCalls, jt.file, leaked, grepWalkRaceCalls)
	if found == 0 {
		t.Error("no call found the workspace's files: the race searched nothing")
	}
	if leaked == 0 {
		t.Errorf("%d unconfirmed runs never returned %s through d/bin: the swap did not work, and the test would prove nothing", grepWalkRaceCalls, jt.file)
	}
}
