package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// swapLinks exchanges each workspace entry name with a link to its
// target, in a tight loop until stop is closed (the link waits under a
// hidden name, so a walk skips it whichever side it is on).
func swapLinks(ws string, links map[string]string, stop <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	for name, target := range links {
		os.Symlink(target, filepath.Join(ws, "."+name+"-alt"))
	}
	for {
		select {
		case <-stop:
			return
		default:
		}
		for name := range links {
			unix.Renameat2(unix.AT_FDCWD, filepath.Join(ws, name), unix.AT_FDCWD, filepath.Join(ws, "."+name+"-alt"), unix.RENAME_EXCHANGE)
		}
	}
}

// grepRaceIterations is how many grep calls the tool-level swap race
// makes.
const grepRaceIterations = 1000

func TestGrepGoEngineNeverFollowsASwappedLink(t *testing.T) {
	t.Parallel()
	c := grepCall(t, map[string]string{"f.txt": "harmless\n", "d/g.txt": "harmless\n"}, false)
	outside := filepath.Join(filepath.Dir(c.Workspace), "outside")
	for name, content := range map[string]string{"s.txt": "TOPSECRET\n", "dir/s.txt": "TOPSECRET\n"} {
		p := filepath.Join(outside, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go swapLinks(c.Workspace, map[string]string{"f.txt": filepath.Join(outside, "s.txt"), "d": filepath.Join(outside, "dir")}, stop, &wg)
	defer wg.Wait()
	defer close(stop)
	r, err := NewRegistry(GrepTool())
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for i := range grepRaceIterations {
		path := []string{".", "d", "d/g.txt", "f.txt"}[i%4]
		o := r.Dispatch(context.Background(), c, "grep", json.RawMessage(fmt.Sprintf(`{"pattern":"TOP[S]ECRET|harmless","path":%q}`, path)))
		if strings.Contains(o.Text, "TOPSECRET") {
			t.Fatalf("iteration %d (path %s): the secret leaked: %s", i, path, o.Text)
		}
		if !o.IsError {
			found += grepDetails(t, o).Matches
		}
	}
	if found == 0 {
		t.Fatal("no call found the harmless files: the race searched nothing")
	}
}

func TestGrepRefusesAFIFORootForEitherEngine(t *testing.T) {
	t.Parallel()
	for engine, c := range engineCalls(t, grepTree) {
		if err := unix.Mkfifo(filepath.Join(c.Workspace, "pipe"), 0o644); err != nil {
			t.Fatal(err)
		}
		o := runGrepArgs(t, c, map[string]any{"pattern": "x", "path": "pipe"})
		if !o.IsError || grepCode(o) != CodeSearchFailed || !strings.Contains(o.Text, "neither a directory nor a regular file") {
			t.Errorf("%s: grep path=pipe: IsError=%v code=%q text=%q", engine, o.IsError, grepCode(o), o.Text)
		}
	}
}
