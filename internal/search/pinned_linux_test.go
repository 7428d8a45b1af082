package search

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// These tests try to turn the Go engine, which runs in the host, into a
// way around the jail: a FIFO where a .gitignore should be, a .gitignore
// linked to the host's stdin, a file or directory swapped for a link to
// a secret while searches run, and enough blocking opens to exhaust the
// host's threads. Each has a control: the same probe against naiveWalk,
// a search that opens by path as the engine once did, succeeds.

// hangBound is how long a control waits to see a naive open stay
// blocked on a FIFO. A FIFO with no writer never opens, so any bound
// shows it; this one only keeps the test short.
const hangBound = 200 * time.Millisecond

// callBound bounds one pinned-engine search in these tests: far more
// than a search of a few files takes, so only a hang reaches it.
const callBound = 10 * time.Second

// naiveWalk is the control: the walk a search does when it opens by
// path, following links and blocking, reading every .gitignore and every
// file its directory lists as regular. It returns the bytes read.
func naiveWalk(root string) ([]byte, error) {
	var out bytes.Buffer
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if data, err := os.ReadFile(filepath.Join(p, ".gitignore")); err == nil {
				out.Write(data)
			}
			return nil
		}
		if d.Type().IsRegular() {
			if data, err := os.ReadFile(p); err == nil {
				out.Write(data)
			}
		}
		return nil
	})
	return out.Bytes(), err
}

func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
}

// releaseFIFO opens p for writing and closes it, so a reader blocked
// opening it gets end of file. With no reader waiting it does nothing.
func releaseFIFO(t *testing.T, p string) {
	t.Helper()
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENXIO) {
		return
	}
	if err != nil {
		t.Fatalf("releasing %s: %v", p, err)
	}
	unix.Close(fd)
}

// boundedGo runs one search and fails the test if it errs or does not
// return within callBound (a blocked open ignores its context, so the
// bound is kept here).
func boundedGo(t *testing.T, root string, o Options) Result {
	t.Helper()
	type ret struct {
		r   Result
		err error
	}
	ch := make(chan ret, 1)
	go func() {
		r, err := Go(context.Background(), root, o)
		ch <- ret{r, err}
	}()
	select {
	case got := <-ch:
		if got.err != nil {
			t.Fatalf("Go(%s): %v", root, got.err)
		}
		return got.r
	case <-time.After(callBound):
		t.Fatalf("Go(%s) hung for %s", root, callBound)
		return Result{}
	}
}

func TestGoEngineDoesNotBlockOnFIFOs(t *testing.T) {
	t.Parallel()
	top := fixture(t, map[string]string{"ws/f.txt": "needle\n", "ws/sub/g.txt": "needle\n"})
	ws := filepath.Join(top, "ws")
	for _, p := range []string{".gitignore", "ws/.gitignore", "ws/sub/.gitignore", "ws/fifo.txt"} {
		mkfifo(t, filepath.Join(top, p))
	}
	for _, tt := range []struct {
		root, ignoreRoot string
	}{{ws, ""}, {filepath.Join(ws, "sub"), top}} {
		r := boundedGo(t, tt.root, Options{Pattern: "needle", IgnoreRoot: tt.ignoreRoot})
		if r.Files == 0 {
			t.Fatalf("root %s: found nothing", tt.root)
		}
	}
	if _, err := Go(context.Background(), filepath.Join(ws, "fifo.txt"), Options{Pattern: "x"}); !errors.Is(err, fs.ErrInvalid) {
		t.Fatalf("a FIFO as the root: %v, want an error wrapping fs.ErrInvalid", err)
	}

	// Control: the naive walk blocks on the FIFO .gitignore.
	done := make(chan struct{})
	go func() {
		defer close(done)
		naiveWalk(ws)
	}()
	select {
	case <-done:
		t.Fatal("control: the naive walk did not block on a FIFO .gitignore")
	case <-time.After(hangBound):
	}
	// Release every FIFO it may reach until it finishes.
	for {
		for _, p := range []string{"ws/.gitignore", "ws/sub/.gitignore"} {
			releaseFIFO(t, filepath.Join(top, p))
		}
		select {
		case <-done:
			return
		case <-time.After(time.Millisecond):
		}
	}
}

// swapStdin makes fd 0 of this process a pipe holding data (its write
// end closed) until the test ends, and returns a function that reads
// what is left in it.
func swapStdin(t *testing.T, data string) func() string {
	t.Helper()
	saved, err := unix.Dup(0)
	if err != nil {
		t.Fatal(err)
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Write(p[1], []byte(data)); err != nil {
		t.Fatal(err)
	}
	unix.Close(p[1])
	if err := unix.Dup2(p[0], 0); err != nil {
		t.Fatal(err)
	}
	unix.Close(p[0])
	t.Cleanup(func() {
		unix.Dup2(saved, 0)
		unix.Close(saved)
	})
	return func() string {
		unix.SetNonblock(0, true)
		defer unix.SetNonblock(0, false)
		buf := make([]byte, 256)
		n, _ := unix.Read(0, buf)
		return string(buf[:max(n, 0)])
	}
}

func TestGoEngineIgnoresALinkedGitignore(t *testing.T) {
	t.Parallel()
	top := fixture(t, map[string]string{"ws/f.txt": "needle\n", "outside/ign": "*.txt\n", "ws/.gitignore": "->../outside/ign"})
	if r := boundedGo(t, filepath.Join(top, "ws"), Options{Pattern: "needle"}); r.Files != 1 {
		t.Fatalf("found %d files, want f.txt (the linked .gitignore would hide it)", r.Files)
	}
	// Control: the naive walk reads the file outside through the link.
	if got, _ := naiveWalk(filepath.Join(top, "ws")); !strings.Contains(string(got), "*.txt") {
		t.Fatalf("control: the naive walk read %q, not the linked file", got)
	}
}

// Not parallel: it swaps this process's stdin.
func TestGoEngineDoesNotReadHostStdinThroughALink(t *testing.T) {
	const stdin = "*.txt\n"
	ws := fixture(t, map[string]string{"f.txt": "needle\n", ".gitignore": "->/proc/self/fd/0"})

	left := swapStdin(t, stdin)
	r := boundedGo(t, ws, Options{Pattern: "needle"})
	if r.Files != 1 {
		t.Fatalf("found %d files, want f.txt (a .gitignore read from stdin would hide it)", r.Files)
	}
	if got := left(); got != stdin {
		t.Fatalf("stdin holds %q after the search, want %q untouched", got, stdin)
	}

	// Control: the naive walk reads the host's stdin as the .gitignore.
	swapStdin(t, stdin)
	got, _ := naiveWalk(ws)
	if !strings.Contains(string(got), stdin) {
		t.Fatalf("control: the naive walk read %q, not the host's stdin", got)
	}
}

// swapRaceIterations is how many searches each swap race runs.
const swapRaceIterations = 3000

// secretTree is a workspace whose f.txt and d/ are swapped, in a tight
// loop until stop is closed, with links to a secret file and a secret
// directory outside it. It returns the workspace.
func secretTree(t *testing.T, stop <-chan struct{}, wg *sync.WaitGroup) string {
	t.Helper()
	top := fixture(t, map[string]string{
		"ws/f.txt":          "harmless\n",
		"ws/d/g.txt":        "harmless\n",
		"outside/s.txt":     "TOPSECRET\n",
		"outside/dir/s.txt": "TOPSECRET\n",
	})
	ws := filepath.Join(top, "ws")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(top, "outside/s.txt"), filepath.Join(ws, ".f-alt")))
	must(os.Symlink(filepath.Join(top, "outside/dir"), filepath.Join(ws, ".d-alt")))
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, pair := range [][2]string{{"f.txt", ".f-alt"}, {"d", ".d-alt"}} {
				unix.Renameat2(unix.AT_FDCWD, filepath.Join(ws, pair[0]), unix.AT_FDCWD, filepath.Join(ws, pair[1]), unix.RENAME_EXCHANGE)
			}
		}
	}()
	return ws
}

func TestGoEngineNeverFollowsASwappedLink(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	ws := secretTree(t, stop, &wg)
	defer wg.Wait()
	defer close(stop)
	o := Options{Pattern: "TOPSECRET|harmless"}
	harmless := 0
	for i := range swapRaceIterations {
		root := ws
		if i%2 == 1 {
			root = filepath.Join(ws, "d") // a root component swapped for a link
		}
		ctx, cancel := context.WithTimeout(context.Background(), callBound)
		r, err := Go(ctx, root, o)
		cancel()
		if err != nil {
			if root == ws {
				t.Fatalf("search of the workspace failed: %v", err)
			}
			continue // d was a link when opened: refused, as it must be
		}
		for _, h := range r.Hits {
			if strings.Contains(h.Text, "TOPSECRET") {
				t.Fatalf("iteration %d: the secret leaked through %s", i, h.Path)
			}
			harmless++
		}
	}
	if harmless == 0 {
		t.Fatal("no search found the harmless files: the race test searched nothing")
	}

	// Control: the naive walk leaks the secret under the same race.
	for i := range swapRaceIterations {
		got, _ := naiveWalk(ws)
		if bytes.Contains(got, []byte("TOPSECRET")) {
			t.Logf("control leaked after %d walks", i+1)
			return
		}
	}
	t.Fatalf("control: the naive walk never leaked the secret in %d walks", swapRaceIterations)
}

// threadCalls is how many searches the thread test runs, and
// threadConcurrency how many at once; maxExtraThreads bounds the OS
// threads they may add to the process (a blocked open pins one each).
const (
	threadCalls       = 10_000
	threadConcurrency = 64
	maxExtraThreads   = 48
)

// osThreads returns this process's thread count from /proc/self/status.
func osThreads(t *testing.T) int {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}

// Not parallel: it counts this process's threads.
func TestGoEngineThreadsStayBoundedOverFIFOs(t *testing.T) {
	top := fixture(t, map[string]string{"ws/f.txt": "needle\n", "ws/a/g.txt": "needle\n", "ws/a/b/h.txt": "needle\n"})
	ws := filepath.Join(top, "ws")
	for _, p := range []string{".gitignore", "ws/.gitignore", "ws/a/.gitignore", "ws/a/b/.gitignore", "ws/x.txt", "ws/a/y.txt"} {
		mkfifo(t, filepath.Join(top, p))
	}
	base := osThreads(t)
	var peak atomic.Int64
	var calls atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for range threadConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for calls.Add(1) <= threadCalls {
				ctx, cancel := context.WithTimeout(context.Background(), callBound)
				r, err := Go(ctx, filepath.Join(ws, "a"), Options{Pattern: "needle", IgnoreRoot: top})
				cancel()
				if err != nil || r.Files != 2 {
					failed.Store(fmt.Sprintf("files %d, err %v", r.Files, err))
					return
				}
			}
		}()
	}
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for calls.Load() < threadCalls {
			n := int64(osThreads(t))
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Wait()
	<-sampled
	if f := failed.Load(); f != nil {
		t.Fatalf("a search failed: %s", f)
	}
	t.Logf("%d searches, %d at once: %d OS threads before, at most %d during", threadCalls, threadConcurrency, base, peak.Load())
	if extra := int(peak.Load()) - base; extra > maxExtraThreads {
		t.Fatalf("%d searches added %d OS threads (base %d, peak %d), more than %d", threadCalls, extra, base, peak.Load(), maxExtraThreads)
	}

	// Control: blocking opens of a FIFO pin a thread each.
	fifo := filepath.Join(top, "ws/.gitignore")
	const blocked = 2 * maxExtraThreads
	var opened sync.WaitGroup
	for range blocked {
		opened.Add(1)
		go func() {
			defer opened.Done()
			os.ReadFile(fifo)
		}()
	}
	grew := false
	for range 1000 {
		// Most of them, at least: idle threads counted in base may
		// have exited since. Either way far past maxExtraThreads.
		if osThreads(t)-base >= 3*blocked/4 {
			grew = true
			break
		}
		time.Sleep(time.Millisecond)
	}
	done := make(chan struct{})
	go func() { opened.Wait(); close(done) }()
	for released := false; !released; {
		releaseFIFO(t, fifo)
		select {
		case <-done:
			released = true
		case <-time.After(time.Millisecond):
		}
	}
	if !grew {
		t.Fatalf("control: %d blocked opens did not add %d threads (now %d over base)", blocked, 3*blocked/4, osThreads(t)-base)
	}
}
