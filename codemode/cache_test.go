package codemode

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeKept writes a kept binary of size bytes under key, last used age
// ago, and returns its path.
func fakeKept(t *testing.T, c *cache, key string, size int, age time.Duration) string {
	t.Helper()
	dir := c.path(cacheBinaries, key)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, binaryName)
	if err := os.WriteFile(p, make([]byte, size), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, editsName), []byte("[]"), 0o600); err != nil {
		t.Fatal(err)
	}
	when := time.Now().Add(-age)
	if err := os.Chtimes(p, when, when); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEvictLeastRecentlyUsedFirst(t *testing.T) {
	t.Parallel()
	c, err := openCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const size = 1000
	oldest := fakeKept(t, c, "a-oldest", size, 4*time.Hour)
	older := fakeKept(t, c, "b-older", size, 3*time.Hour)
	keep := fakeKept(t, c, "c-keep", size, 5*time.Hour) // oldest of all, but the one just built
	recent := fakeKept(t, c, "d-recent", size, time.Hour)
	fresh := fakeKept(t, c, "e-fresh", size, 0) // inside evictionGrace
	// Five entries of size+2 bytes; a bound of three entries removes two.
	removed := c.evict(3*(size+2), "c-keep", time.Now())
	if got, want := strings.Join(removed, ","), "a-oldest,b-older"; got != want {
		t.Fatalf("evicted %s, want %s", got, want)
	}
	for p, want := range map[string]bool{oldest: false, older: false, keep: true, recent: true, fresh: true} {
		_, err := os.Stat(p)
		if (err == nil) != want {
			t.Errorf("%s present=%v, want %v", p, err == nil, want)
		}
	}
	// Under the bound nothing goes.
	if removed := c.evict(1<<30, "", time.Now()); len(removed) != 0 {
		t.Fatalf("evicted %v under the bound", removed)
	}
	// The grace holds while the kept binaries stay within
	// maxCacheOvershoot times the bound...
	if removed := c.evict((size+2)*3/maxCacheOvershoot, "c-keep", time.Now()); strings.Join(removed, ",") != "d-recent" {
		t.Fatalf("evicted %v, want only d-recent", removed)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Fatalf("a binary inside the grace was evicted within the overshoot: %v", err)
	}
	// ...and yields past it; keep holds whatever the bound.
	if removed := c.evict(1, "c-keep", time.Now()); strings.Join(removed, ",") != "e-fresh" {
		t.Fatalf("evicted %v past the overshoot, want e-fresh", removed)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("the binary just built was evicted: %v", err)
	}
}

func TestEvictSkipsWhileAnotherHoldsTheLock(t *testing.T) {
	t.Parallel()
	c, err := openCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := fakeKept(t, c, "old", 100, time.Hour)
	release, ok := c.tryLockEvict()
	if !ok {
		t.Fatal("the eviction lock is not free")
	}
	if removed := c.evict(1, "", time.Now()); len(removed) != 0 {
		t.Fatalf("evicted %v while the lock was held", removed)
	}
	release()
	if removed := c.evict(1, "", time.Now()); len(removed) != 1 {
		t.Fatalf("evicted %v once the lock was free", removed)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s survived", p)
	}
}

// TestSweepRemovesOnlyStaleScratch: opening a cache removes build roots
// whose creator is gone (its lock released) and directories without a
// lock file, never one a live builder holds.
func TestSweepRemovesOnlyStaleScratch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, err := openCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	live, err := c.newScratch("build")
	if err != nil {
		t.Fatal(err)
	}
	defer live.remove()
	dead, err := c.newScratch("build")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dead.dir, "main.go"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	dead.lock.Close() // its process died: the lock is released, nothing removed
	orphan := c.path(cacheScratch, "build-orphan")
	if err := os.Mkdir(orphan, 0o700); err != nil {
		t.Fatal(err)
	}
	// A child another test forks meanwhile holds a copy of the lock's
	// descriptor until it execs, and with it the lock: open the cache
	// again until the dead root is swept (or give up, and fail below).
	for range 500 {
		if _, err := openCache(dir); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(dead.dir); errors.Is(err, os.ErrNotExist) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for p, want := range map[string]bool{
		live.dir: true, live.dir + scratchLockExt: true,
		dead.dir: false, dead.dir + scratchLockExt: false,
		orphan: false,
	} {
		_, err := os.Lstat(p)
		if (err == nil) != want {
			t.Errorf("%s present=%v, want %v", p, err == nil, want)
		}
	}
}

// TestCacheLockAcrossProcesses: while another process holds a cache
// directory's lock, this one cannot take it, and a warm-up that needs it
// waits; once released, both go ahead.
func TestCacheLockAcrossProcesses(t *testing.T) {
	t.Parallel()
	b := sibling(t, BuilderOptions{StdPackages: append([]string{"unicode"}, testStd...)})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdLockEnv+"="+sharedDir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("the holder said %q (%v)", line, err)
	}

	c := b.cache
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if release, err := c.lock(ctx); err == nil {
		release()
		t.Fatal("took the lock another process holds")
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("lock: %v", err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	if err := b.Warm(ctx2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a warm-up needing the held lock returned %v", err)
	}
	if _, ok := loadArchives(c.path(cacheArchives, b.archiveKey), b.archiveKey); ok {
		t.Fatal("archives were published while another process held the lock")
	}

	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the holder: %v", err)
	}
	if err := b.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	release, err := c.lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	release()
}

// TestWarmBuildsOnceForTwoBuilders: two builders (one process) warming
// the same archives concurrently build them once.
func TestWarmBuildsOnceForTwoBuilders(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var built, ready int
	progress := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.Contains(s, "building archives"):
			built++
		case strings.Contains(s, "archives ready"):
			ready++
		}
	}
	std := append([]string{"unicode/utf8"}, testStd...)
	a := sibling(t, BuilderOptions{StdPackages: std, Progress: progress})
	b := sibling(t, BuilderOptions{StdPackages: std, Progress: progress})
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i, w := range []*builder{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = w.Warm(context.Background())
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if built != 1 || ready != 2 {
		t.Fatalf("%d archive builds and %d ready reports, want 1 and 2", built, ready)
	}
	if err := a.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	if built != 1 {
		t.Fatalf("a second Warm built again")
	}
}
