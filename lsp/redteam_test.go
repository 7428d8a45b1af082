package lsp

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/tool"
	"golang.org/x/sys/unix"
)

// A command fills the workspace with just under MaxScanEntries entries
// (owned files: each is lstat'ed); every write then walks them all,
// synchronously, with no regard for the write's deadline.
func TestRedScanIgnoresTheDeadline(t *testing.T) {
	s := newSession(t)
	p := s.plane(t, fakeConfig(t, "publish"))
	if got := s.write(t, p, within(t, settleWithin), "a.txt", "x\n"); got.Status != tool.DiagnosticsSettled {
		t.Fatalf("%+v", got)
	}
	for d := 0; d < 40; d++ {
		dir := filepath.Join(s.ws, fmt.Sprint("d", d))
		os.Mkdir(dir, 0o755)
		for i := 0; i < 1240; i++ {
			os.WriteFile(filepath.Join(dir, fmt.Sprint(i, ".txt")), nil, 0o644)
		}
	}
	for i := 0; i < 3; i++ {
		ctx := within(t, 200*time.Millisecond)
		began := time.Now()
		got := s.write(t, p, ctx, "a.txt", "y\n")
		t.Logf("write %d: %v took %v", i, got.Status, time.Since(began))
	}
}

// One directory past MaxScanEntries: WalkDir reads the whole directory
// (os.ReadDir, sorted) before the entry bound is looked at.
func TestRedScanReadsAWholeDirectoryFirst(t *testing.T) {
	ws := t.TempDir()
	dir := filepath.Join(ws, "many")
	os.Mkdir(dir, 0o755)
	for i := 0; i < 600_000; i++ {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%0200d", i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	var ms runtimeMem
	ms.start()
	began := time.Now()
	_, ok := scanWorkspace(ws, func(string) bool { return false })
	t.Logf("ok=%v took %v, peak heap growth %d MiB", ok, time.Since(began), ms.peak()>>20)
}

// A pull server that also publishes the version: the publication lands in
// the waiter's buffered channel, the pull settles, and the document keeps
// that waiter (and the publication) for the rest of the run; documents
// are never forgotten.
func TestRedRetainedPublications(t *testing.T) {
	s := newSession(t)
	p := s.plane(t, fakeConfig(t, "pull-retain"))
	var ms runtimeMem
	for i := 0; i < 2000; i++ {
		if i == 20 {
			ms.start()
		}
		got := s.write(t, p, within(t, settleWithin), fmt.Sprint("f", i, ".txt"), "x\n")
		if got.Status != tool.DiagnosticsSettled || got.Errors != 1 {
			t.Fatalf("%d: %+v", i, got)
		}
	}
	r := p.servers[0].run
	held := 0
	for _, d := range r.docs {
		if len(d.waiter.ch) > 0 {
			held++
		}
	}
	runtime.GC()
	t.Logf("docs %d, waiters holding a publication %d, heap growth %d MiB", len(r.docs), held, ms.peak()>>20)
}

// A command swaps a directory of the workspace with a FIFO while a scan
// runs: the scan opens the FIFO to list it and blocks in the host.
func TestRedScanBlocksOnASwappedFIFO(t *testing.T) {
	ws := t.TempDir()
	d, f := filepath.Join(ws, "d"), filepath.Join(ws, "f")
	os.Mkdir(d, 0o755)
	os.WriteFile(filepath.Join(d, "x.txt"), nil, 0o644)
	if err := unix.Mkfifo(f, 0o644); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, f, unix.RENAME_EXCHANGE)
		}
	}()
	for i := 0; i < 20000; i++ {
		done := make(chan struct{})
		go func() { scanWorkspace(ws, func(string) bool { return true }); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("scan %d blocked for 10 s (a FIFO opened as a directory)", i)
		}
	}
	t.Log("no scan blocked")
}

// A command swaps a directory of the workspace with a link while a scan
// runs: the scan lists what the link points at.
func TestRedScanFollowsASwappedLink(t *testing.T) {
	ws := t.TempDir()
	d, l := filepath.Join(ws, "d"), filepath.Join(ws, "l")
	os.Mkdir(d, 0o755)
	os.WriteFile(filepath.Join(d, "x.txt"), nil, 0o644)
	os.Symlink("/etc", l)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, l, unix.RENAME_EXCHANGE)
		}
	}()
	for i := 0; i < 20000; i++ {
		files, _ := scanWorkspace(ws, func(string) bool { return true })
		for p := range files {
			if filepath.Base(p) == "passwd" {
				t.Fatalf("scan %d recorded %s: the host listed /etc through a link", i, p)
			}
		}
	}
}

// A server that reads its input slowly, but never so slowly that one write
// passes WriteTimeout: a write due while the last is still pending stops
// the run as hung, rather than queueing a goroutine that holds the
// content, and Close does not wait on the pending writes.
func TestRedSlowReaderQueuesGoroutines(t *testing.T) {
	s := newSession(t)
	p := s.plane(t, fakeConfig(t, "trickle"))
	s.write(t, p, within(t, 2*time.Second), "a.txt", "x\n")
	before := runtime.NumGoroutine()
	content := strings.Repeat("y", 12_000) // 6 s at 2 KB/s: under WriteTimeout
	for i := 0; i < 15; i++ {
		got := s.write(t, p, within(t, 300*time.Millisecond), "a.txt", content)
		if i%10 == 0 {
			t.Logf("%d: %s %s", i, got.Status, got.Reason)
		}
	}
	// Each run holds at most one pending write; a stopped run's goroutines
	// end with its process.
	if after := runtime.NumGoroutine(); after > before+12 {
		t.Errorf("goroutines: %d before, %d after 15 writes: writes queue", before, after)
	}
	closed := make(chan struct{})
	go func() { p.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5*StopTimeout + 5*time.Second):
		t.Fatalf("Close did not return within %v: it waits on queued writes", 5*StopTimeout+5*time.Second)
	}
}
