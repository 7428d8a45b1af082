//go:build linux

package tool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentloom/loom/sandbox"
)

// raceIterations is how many rounds of every file-tool operation the
// race test runs against the swapper.
const raceIterations = 3000

// raceSwapper is what a hostile command in the workspace does while the
// harness works: in a tight loop it
//   - exchanges the directory d with the link dlink (-> outside),
//   - exchanges the regular file f.txt with a FIFO,
//   - makes n a link to outside and removes it again (alternating), so a
//     path through n that the resolver saw missing meets a link when its
//     directories are created,
//   - exchanges the plain directory p with a link onto the protected
//     .git/hooks.
//
// It stops when stop is closed and reports how many swaps it made.
func raceSwapper(t *testing.T, ws, outside string, stop <-chan struct{}) (wait func() int64) {
	t.Helper()
	raceLayout(t, ws, outside)
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			unix.Renameat2(unix.AT_FDCWD, ws+"/d", unix.AT_FDCWD, ws+"/dlink", unix.RENAME_EXCHANGE)
			unix.Renameat2(unix.AT_FDCWD, ws+"/f.txt", unix.AT_FDCWD, ws+"/fifo", unix.RENAME_EXCHANGE)
			unix.Renameat2(unix.AT_FDCWD, ws+"/p", unix.AT_FDCWD, ws+"/plink", unix.RENAME_EXCHANGE)
			// Alternate, so the link is there about half the time.
			if swaps.Add(1)%2 == 0 {
				os.Symlink(outside, ws+"/n")
			} else {
				os.RemoveAll(ws + "/n") // the link, or a directory a call made
			}
		}
	}()
	return func() int64 { wg.Wait(); return swaps.Load() }
}

// raceLayout lays out what raceSwapper (or a jailed swapper) exchanges:
// the directories d and p, the links dlink (-> outside) and plink (->
// .git/hooks), the regular file f.txt and the FIFO fifo.
func raceLayout(t *testing.T, ws, outside string) {
	t.Helper()
	for _, d := range []string{ws + "/d", ws + "/p"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []struct{ path, body string }{
		{ws + "/d/secret.txt", "inside\n"},
		{ws + "/d/e.txt", "edit me\n"},
		{ws + "/f.txt", "regular\n"},
	} {
		if err := os.WriteFile(f.path, []byte(f.body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, ws+"/dlink"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ws+"/.git/hooks", ws+"/plink"); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(ws+"/fifo", 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshot lists everything under dir with its size and modification
// time, without following links.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFileToolsRaceAHostileWorkspace runs thousands of fs_write, fs_read
// and fs_edit calls (and bash's scratch creation and working_directory's
// check) while a concurrent swapper replaces directories with links out
// of the workspace and onto protected entries, files with FIFOs, and
// missing parents with links. Nothing outside the workspace may be
// created, read or touched, nothing written under the protected
// .git/hooks, no call may block,
// and the answers must be honest: the file the writes target ends up
// holding exactly what the last write that reported success wrote.
func TestFileToolsRaceAHostileWorkspace(t *testing.T) {
	r, c := fileRegistry(t)
	c.Shell = &Shell{}
	ws := c.Workspace
	outside := filepath.Join(filepath.Dir(ws), "outside")
	hooks := ws + "/.git/hooks"
	before, hooksBefore := snapshot(t, outside), snapshot(t, hooks)

	stop := make(chan struct{})
	wait := raceSwapper(t, ws, outside, stop)
	done := make(chan struct{})
	var lastWrite string
	var stats struct{ wrote, writeFailed, read, readFailed, edited, leaked, dirs int }
	go func() {
		defer close(done)
		for i := 0; i < raceIterations; i++ {
			body := fmt.Sprintf("write %d\n", i)
			if out := call(t, r, c, "fs_write", map[string]any{"path": "d/x.txt", "content": body}); out.IsError {
				stats.writeFailed++
			} else {
				stats.wrote++
				lastWrite = body
			}
			call(t, r, c, "fs_write", map[string]any{"path": fmt.Sprintf("n/sub%d/file.txt", i%7), "content": "x"})
			call(t, r, c, "fs_write", map[string]any{"path": "p/pre-commit", "content": "#!/bin/sh\necho pwned\n"})
			for _, p := range []string{"d/secret.txt", "f.txt", "p/pre-commit"} {
				out := call(t, r, c, "fs_read", map[string]any{"path": p})
				// Outside, secret.txt holds "secret"; inside, "inside".
				if strings.Contains(out.Text, "|secret") {
					stats.leaked++
				}
				if out.IsError {
					stats.readFailed++
				} else {
					stats.read++
				}
			}
			if rd := call(t, r, c, "fs_read", map[string]any{"path": "d/e.txt"}); !rd.IsError {
				if d, ok := rd.Details.(ReadDetails); ok {
					out := call(t, r, c, "fs_edit", map[string]any{"path": "d/e.txt", "digest": d.Digest, "hunks": []map[string]any{{"op": "append", "lines": []string{"more"}}}})
					if !out.IsError {
						stats.edited++
					}
				}
			}
			if out := call(t, r, c, "working_directory", map[string]any{"path": ws + "/d"}); !out.IsError {
				stats.dirs++
				if !sandbox.Covers(ws, c.Shell.Dir()) {
					t.Errorf("working_directory selected %s, outside the workspace", c.Shell.Dir())
				}
			}
			c.TempDir = ws + "/n/scratch"
			if dir, err := c.ResolveWrite(c.TempDir); err == nil {
				mkdirAll(dir)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		// Something blocked (a FIFO opened without O_NONBLOCK, say):
		// feed every FIFO so the stuck open returns and the test ends.
		for _, p := range []string{ws + "/fifo", ws + "/f.txt"} {
			if f, err := os.OpenFile(p, os.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		}
		t.Fatal("a file tool call blocked")
	}
	close(stop)
	swaps := wait()
	t.Logf("%d swaps; writes %d ok / %d refused; reads %d ok / %d refused; %d edits; %d directory changes",
		swaps, stats.wrote, stats.writeFailed, stats.read, stats.readFailed, stats.edited, stats.dirs)

	if diff := diffSnapshots(before, snapshot(t, outside)); diff != "" {
		t.Errorf("the workspace's tools touched the outside directory:\n%s", diff)
	}
	if diff := diffSnapshots(hooksBefore, snapshot(t, hooks)); diff != "" {
		t.Errorf("the tools wrote under the protected .git/hooks:\n%s", diff)
	}
	if stats.leaked > 0 {
		t.Errorf("%d reads returned content from outside the workspace or under a protected entry", stats.leaked)
	}
	if stats.wrote == 0 || stats.read == 0 || stats.writeFailed == 0 || stats.readFailed == 0 {
		t.Fatalf("the race left no call succeeding, or none refused (%+v): the swapper did not contend and the test would prove nothing", stats)
	}
	// d is the real directory or has been exchanged into dlink's name.
	var got []byte
	for _, name := range []string{"d", "dlink"} {
		if fi, err := os.Lstat(filepath.Join(ws, name)); err == nil && fi.IsDir() {
			got, _ = os.ReadFile(filepath.Join(ws, name, "x.txt"))
		}
	}
	if string(got) != lastWrite {
		t.Errorf("d/x.txt holds %q, but the last write reported as done wrote %q: an answer was not honest", got, lastWrite)
	}
}

func diffSnapshots(before, after map[string]string) string {
	var b strings.Builder
	for p, v := range after {
		if w, ok := before[p]; !ok {
			fmt.Fprintf(&b, "created %s (%s)\n", p, v)
		} else if w != v {
			fmt.Fprintf(&b, "changed %s: %s -> %s\n", p, w, v)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			fmt.Fprintf(&b, "removed %s\n", p)
		}
	}
	return b.String()
}

// TestMkdirAllByPathRaceControl is the control for the race test: what
// fs_write did before (resolve, then os.MkdirAll on the resolved path)
// creates a directory outside the workspace when the swap lands between
// the two, as it does here on purpose, while writeWhole given the same
// resolved path and the same swap creates nothing. The same old approach
// is then run against the racing swapper, and how soon it escaped is
// logged (on a loaded machine the goroutines may not interleave finely
// enough to hit the window, so that part is not asserted).
func TestMkdirAllByPathRaceControl(t *testing.T) {
	c, outside := testWorkspace(t)
	ws := c.Workspace
	resolved, err := c.ResolveWrite("n/made/file.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, ws+"/n"); err != nil { // the swap lands
		t.Fatal(err)
	}
	if res, err := writeWhole(resolved, []byte("x"), true); !errors.Is(err, errPathChanged) || len(res.Dirs) != 0 {
		t.Fatalf("writeWhole after the swap: %+v, %v", res, err)
	}
	if _, err := os.Stat(outside + "/made"); err == nil {
		t.Fatal("writeWhole created a directory outside the workspace")
	}
	os.MkdirAll(filepath.Dir(resolved), 0o755)
	if _, err := os.Stat(outside + "/made"); err != nil {
		t.Fatalf("control: os.MkdirAll on the resolved path after the swap did not create outside/made: %v", err)
	}
	os.Remove(ws + "/n")

	stop := make(chan struct{})
	wait := raceSwapper(t, ws, outside, stop)
	escaped, i := false, 0
	for ; i < 20*raceIterations && !escaped; i++ {
		if p, err := c.ResolveWrite(fmt.Sprintf("n/racing%d/file.txt", i)); err == nil {
			os.MkdirAll(filepath.Dir(p), 0o755)
		}
		_, err := os.Stat(filepath.Join(outside, fmt.Sprintf("racing%d", i)))
		escaped = err == nil
	}
	close(stop)
	wait()
	if escaped {
		t.Logf("against the racing swapper, resolve-then-os.MkdirAll created a directory outside the workspace after %d calls", i)
	} else {
		t.Logf("against the racing swapper, resolve-then-os.MkdirAll did not hit the window in %d calls (machine too loaded to interleave)", i)
	}
}

// TestReadFIFODoesNotBlock: a command can leave a FIFO in the workspace;
// fs_read and fs_edit of it must refuse it, not block the harness forever
// waiting for a writer.
func TestReadFIFODoesNotBlock(t *testing.T) {
	r, c := fileRegistry(t)
	if err := unix.Mkfifo(filepath.Join(c.Workspace, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args map[string]any
	}{
		{"fs_read", map[string]any{"path": "fifo"}},
		{"fs_edit", map[string]any{"path": "fifo", "digest": "0000000000000000-0", "hunks": []map[string]any{{"op": "append", "lines": []string{"x"}}}}},
		{"fs_write", map[string]any{"path": "fifo", "content": "x"}},
	} {
		done := make(chan Outcome, 1)
		go func() { done <- call(t, r, c, tc.name, tc.args) }()
		select {
		case out := <-done:
			if code(out) != "not_a_regular_file" {
				t.Errorf("%s of a FIFO: %+v", tc.name, out)
			}
		case <-time.After(10 * time.Second):
			// Unblock the stuck open so the test binary can exit.
			if f, err := os.OpenFile(filepath.Join(c.Workspace, "fifo"), os.O_WRONLY, 0); err == nil {
				f.Close()
			}
			t.Fatalf("%s of a FIFO blocked", tc.name)
		}
	}
}

// TestSwappedInLinkIsRefusedAsChanged: a link that appears where the
// resolver saw a directory is met as a link and refused with
// path_changed, for reads and for writes, and nothing is followed.
func TestSwappedInLinkIsRefusedAsChanged(t *testing.T) {
	c, outside := testWorkspace(t)
	ws := c.Workspace
	os.MkdirAll(ws+"/d", 0o755)
	os.WriteFile(ws+"/d/secret.txt", []byte("inside\n"), 0o644)
	resolvedRead, err := c.ResolveRead("d/secret.txt")
	if err != nil {
		t.Fatal(err)
	}
	resolvedWrite, err := c.ResolveWrite("d/new/x.txt")
	if err != nil {
		t.Fatal(err)
	}
	// The swap lands between resolution and the open.
	os.Rename(ws+"/d", ws+"/d.real")
	if err := os.Symlink(outside, ws+"/d"); err != nil {
		t.Fatal(err)
	}
	if _, err := readRegular(resolvedRead); !errorsIsChanged(err) {
		t.Errorf("read through a swapped-in link: %v, want errPathChanged", err)
	}
	res, err := writeWhole(resolvedWrite, []byte("x"), true)
	if !errorsIsChanged(err) || len(res.Dirs) != 0 || res.Written {
		t.Errorf("write through a swapped-in link: %+v %v, want errPathChanged and nothing made", res, err)
	}
	if _, err := os.Stat(outside + "/new"); err == nil {
		t.Error("a directory was created through the link")
	}
	if _, err := mkdirAll(resolvedWrite); !errorsIsChanged(err) {
		t.Errorf("mkdirAll through a swapped-in link: %v", err)
	}
	if err := isDir(filepath.Dir(resolvedRead)); !errorsIsChanged(err) {
		t.Errorf("isDir of a swapped-in link: %v", err)
	}
}

func errorsIsChanged(err error) bool { return errors.Is(err, errPathChanged) }
