//go:build linux

package tool

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestResolvedPathSymlinkRace: a command running in the workspace can swap
// a directory the resolver just walked for a symlink out of it before the
// harness opens the resolved path. Opening must not follow a symlink the
// resolver did not see, so the swap costs the call, never the boundary.
func TestResolvedPathSymlinkRace(t *testing.T) {
	c, outside := testWorkspace(t)
	ws := c.Workspace
	if err := os.MkdirAll(ws+"/d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ws+"/d/secret.txt", []byte("inside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, ws+"/d2"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // swap d (a directory) and d2 (a link out) as fast as possible
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			unix.Renameat2(unix.AT_FDCWD, ws+"/d", unix.AT_FDCWD, ws+"/d2", unix.RENAME_EXCHANGE)
		}
	}()
	leaked, wrote := 0, 0
	for i := 0; i < 2000 && (leaked == 0 || wrote == 0); i++ {
		if p, err := c.ResolveRead("d/secret.txt"); err == nil {
			if data, err := readRegular(p); err == nil && string(data) == "secret\n" {
				leaked++
			}
		}
		if p, err := c.ResolveWrite("d/new.txt"); err == nil {
			writeWhole(p, []byte("x"))
			if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
				wrote++
			}
		}
	}
	close(stop)
	wg.Wait()
	if leaked > 0 {
		t.Error("a read followed a symlink swapped in after resolution and read outside the workspace")
	}
	if wrote > 0 {
		t.Error("a write followed a symlink swapped in after resolution and wrote outside the workspace")
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
	} {
		done := make(chan Outcome, 1)
		go func() { done <- call(t, r, c, tc.name, tc.args) }()
		select {
		case out := <-done:
			if !out.IsError || !strings.Contains(out.Text, "not a regular file") {
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
