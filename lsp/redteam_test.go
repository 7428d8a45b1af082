package lsp

import (
	"context"
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

// A scan whose context ends stops within one batch of entries: a write's
// deadline bounds the scan on its path. (It read every entry of a
// workspace just under maxScanEntries, whatever the deadline.)
func TestRedScanIgnoresTheDeadline(t *testing.T) {
	ws := t.TempDir()
	for d := 0; d < 4; d++ {
		dir := filepath.Join(ws, fmt.Sprint("d", d))
		os.Mkdir(dir, 0o755)
		for i := 0; i < 1000; i++ {
			os.WriteFile(filepath.Join(dir, fmt.Sprint(i, ".txt")), nil, 0o644)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root, err := os.Open(ws)
	if err != nil {
		t.Fatal(err)
	}
	sc := &scan{ctx: ctx, files: map[string]stamp{}, want: func(string) bool { cancel(); return false }}
	if err := sc.dir(root, ws); err == nil {
		t.Errorf("a scan whose context ended succeeded")
	}
	if sc.entries > 2*scanBatch+4 {
		t.Errorf("a scan read %d entries after its context ended", sc.entries)
	}

	// On the write path, a scan cut short keeps the baseline: the next
	// diagnosis scans again.
	s := newSession(t)
	p := s.plane(t, fakeConfig(t, "publish"))
	if got := s.write(t, p, within(t, settleWithin), "a.txt", "x\n"); got.Status != tool.DiagnosticsSettled {
		t.Fatalf("%+v", got)
	}
	r := p.servers[0].run
	done, stop := context.WithCancel(context.Background())
	stop()
	if err := p.servers[0].sync(done, r, nil); err == nil || !r.scanOK {
		t.Errorf("a sync whose context ended: err %v, scanOK %v", err, r.scanOK)
	}
}

// One directory past maxScanEntries: the scan reads it in batches and
// stops at the bound, without holding the whole directory.
func TestRedScanReadsAWholeDirectoryFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("makes 100,000 files")
	}
	ws := t.TempDir()
	dir := filepath.Join(ws, "many")
	os.Mkdir(dir, 0o755)
	// Read whole, 100,000 names of 100 bytes cost the host over 20 MiB;
	// read in batches, a few hundred kilobytes.
	for i := 0; i < 100_000; i++ {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%0100d", i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	var ms runtimeMem
	ms.start()
	scanWorkspace(context.Background(), ws, func(string) bool { return false })
	if grew := ms.peak(); grew > 8<<20 {
		t.Errorf("the scan grew the heap by %d MiB: it read the whole directory first", grew>>20)
	}
}

// A pull server that also publishes the version: once a document
// settles, it holds no waiter (nor the publication in it), and a closed
// document is forgotten, so the run holds at most maxOpenDocuments
// documents however many files it was told of.
func TestRedRetainedPublications(t *testing.T) {
	s := newSession(t)
	p := s.plane(t, fakeConfig(t, "pull-retain"))
	n := maxOpenDocuments + 200
	for i := 0; i < n; i++ {
		got := s.write(t, p, within(t, settleWithin), fmt.Sprint("f", i, ".txt"), "x\n")
		if got.Status != tool.DiagnosticsSettled || got.Errors != 1 {
			t.Fatalf("%d: %+v", i, got)
		}
	}
	r := p.servers[0].run
	held := 0
	for _, d := range r.docs {
		if d.waiter != nil {
			held++
		}
	}
	r.mu.Lock()
	waits := len(r.waits)
	r.mu.Unlock()
	if held != 0 || waits != 0 || len(r.docs) > maxOpenDocuments+1 {
		t.Errorf("after %d files: %d documents, %d holding a waiter, %d waits registered", n, len(r.docs), held, waits)
	}
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
	stop, swapped := make(chan struct{}), make(chan struct{})
	defer func() { close(stop); <-swapped }() // no swap races the cleanup
	go func() {
		defer close(swapped)
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
		go func() { scanWorkspace(context.Background(), ws, func(string) bool { return true }); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("scan %d blocked for 10 s (a FIFO opened as a directory)", i)
		}
	}
	t.Log("no scan blocked")
}

// A command swaps a directory of the workspace with a link while a scan
// runs: the scan never lists what the link points at, neither the link
// itself nor a directory below it opened by a path through the link.
func TestRedScanFollowsASwappedLink(t *testing.T) {
	ws, out := t.TempDir(), t.TempDir()
	d, l := filepath.Join(ws, "d"), filepath.Join(ws, "l")
	os.MkdirAll(filepath.Join(d, "sub"), 0o755)
	os.WriteFile(filepath.Join(d, "x.txt"), nil, 0o644)
	os.WriteFile(filepath.Join(d, "sub", "y.txt"), nil, 0o644)
	os.MkdirAll(filepath.Join(out, "sub"), 0o755)
	os.WriteFile(filepath.Join(out, "sub", "passwd"), nil, 0o644)
	os.WriteFile(filepath.Join(out, "passwd"), nil, 0o644)
	os.Symlink(out, l)
	stop, swapped := make(chan struct{}), make(chan struct{})
	defer func() {
		// The swapper ends before the temporary directories are removed:
		// a swap racing their removal fails the cleanup.
		close(stop)
		<-swapped
	}()
	go func() {
		defer close(swapped)
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
		files, _ := scanWorkspace(context.Background(), ws, func(string) bool { return true })
		for p := range files {
			if filepath.Base(p) == "passwd" {
				t.Fatalf("scan %d recorded %s: the host listed a directory outside through a link", i, p)
			}
		}
	}
}

// A server that reads its input slowly, but never so slowly that one write
// passes writeTimeout: a write due while the last is still pending stops
// the run as hung, rather than queueing a goroutine that holds the
// content, and Close does not wait on the pending writes.
func TestRedSlowReaderQueuesGoroutines(t *testing.T) {
	s := newSession(t)
	p := s.plane(t, fakeConfig(t, "trickle"))
	s.write(t, p, within(t, 2*time.Second), "a.txt", "x\n")
	before := runtime.NumGoroutine()
	content := strings.Repeat("y", 12_000) // 6 s at 2 KB/s: under writeTimeout
	for i := 0; i < 15; i++ {
		got := s.write(t, p, within(t, 300*time.Millisecond), "a.txt", content)
		if i%10 == 0 {
			t.Logf("%d: %s %s", i, got.Status, got.Reason)
		}
	}
	// Each run holds at most one pending write; a stopped run's goroutines
	// end with its process, which a loaded machine may take a while to
	// reap: the count is read until it settles (queued writes never end
	// before Close, so they keep it high however long it is read).
	after := runtime.NumGoroutine()
	for deadline := time.Now().Add(30 * time.Second); after > before+12 && time.Now().Before(deadline); after = runtime.NumGoroutine() {
		time.Sleep(50 * time.Millisecond)
	}
	if after > before+12 {
		t.Errorf("goroutines: %d before, %d after 15 writes: writes queue", before, after)
	}
	// Queued, the writes held Close for about 53 s; the bound only tells
	// that from a slow machine.
	const closeBound = 30 * time.Second
	closed := make(chan struct{})
	go func() { p.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(closeBound):
		t.Fatalf("Close did not return within %v: it waits on queued writes", closeBound)
	}
}
