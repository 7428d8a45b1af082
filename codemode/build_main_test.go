package codemode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/internal/jailtest"
)

// holdLockEnv, when set in a re-run of the test binary, names a cache
// directory whose cross-process lock the process takes, announces on
// stdout and holds until its stdin ends (TestCacheLockAcrossProcesses).
const holdLockEnv = "LOOM_CODEMODE_HOLD_LOCK"

func TestMain(m *testing.M) {
	if dir := os.Getenv(holdLockEnv); dir != "" {
		os.Exit(holdLock(dir))
	}
	sockets := openSockets()
	code := m.Run()
	for _, f := range testCleanups {
		f()
	}
	if sharedBrk != nil {
		sharedBrk.Close()
	}
	if code == 0 {
		for _, l := range leftovers(sockets) {
			fmt.Fprintln(os.Stderr, "teardown:", l)
			code = 1
		}
	}
	jailHelper.Remove()
	if sharedDir != "" {
		os.RemoveAll(sharedDir)
	}
	if goCacheDir != "" {
		os.RemoveAll(goCacheDir)
	}
	os.Exit(code)
}

// testCleanups run after every test, before the jail helper is removed.
var testCleanups []func()

// holdLock takes dir's cache lock, says "locked" and waits for stdin to
// end.
func holdLock(dir string) int {
	c, err := openCache(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	release, err := c.lock(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("locked")
	buf := make([]byte, 1)
	for {
		if _, err := os.Stdin.Read(buf); err != nil {
			break
		}
	}
	release()
	return 0
}

// jailHelper is the host-built jail helper this package's test brokers
// run, built once per test binary and removed by TestMain.
var jailHelper jailtest.Shared

// testBroker returns a broker running the package's host-built helper,
// closed when tb ends.
func testBroker(tb testing.TB) *broker.Broker {
	b := broker.New(broker.Options{HelperPath: jailHelper.Path(tb)})
	tb.Cleanup(func() { b.Close() })
	return b
}

// testStd is the small standard-library allowlist the tests build
// against (a cold archive build of it costs seconds, not the full
// allowlist's tens).
var testStd = []string{"errors", "fmt", "strings"}

// fakePrelude is the tests' stand-in for the embedded prelude.
func fakePrelude() string { return filepath.Join("testdata", "fakeprelude") }

var (
	goCacheOnce sync.Once
	goCacheDir  string // the GOCACHE every test cache directory links to
	goCacheErr  error
)

// linkGoCache makes dir's private GOCACHE (dir/gocache, before any
// builder opens dir) a link to the one GOCACHE of the test binary, so a
// standard package is compiled once per test binary, not once per test
// cache directory. The archive entries and kept binaries stay dir's own:
// a cache directory so linked holds no archive entry until a builder
// over it builds one.
func linkGoCache(dir string) error {
	goCacheOnce.Do(func() {
		goCacheDir, goCacheErr = os.MkdirTemp("", "loom-codemode-gocache-")
	})
	if goCacheErr != nil {
		return goCacheErr
	}
	return os.Symlink(goCacheDir, filepath.Join(dir, cacheGoCache))
}

var (
	sharedOnce    sync.Once
	sharedDir     string // the cache directory every shared builder uses
	sharedBrk     *broker.Broker
	sharedBuilder *builder
	sharedErr     error
)

// shared returns the package's one warmed builder over a cache
// directory every test may add kept binaries to (archives are built
// once per test binary). It warms after the end-to-end archives (see
// e2eShared), whose standard packages it then finds compiled in the
// shared GOCACHE.
func shared(tb testing.TB) *builder {
	tb.Helper()
	sharedOnce.Do(func() {
		if sharedErr = e2eSetUp(tb); sharedErr != nil {
			return
		}
		sharedDir, sharedErr = os.MkdirTemp("", "loom-codemode-cache-")
		if sharedErr != nil {
			return
		}
		if sharedErr = linkGoCache(sharedDir); sharedErr != nil {
			return
		}
		sharedBrk = broker.New(broker.Options{HelperPath: jailHelper.Path(tb)})
		sharedBuilder, sharedErr = newBuilder(BuilderOptions{
			CacheDir: sharedDir, brk: sharedBrk,
			testPrelude: os.DirFS(fakePrelude()), StdPackages: testStd,
		})
		if sharedErr == nil {
			sharedErr = sharedBuilder.Warm(context.Background())
		}
	})
	if sharedErr != nil {
		tb.Fatalf("the shared builder: %v", sharedErr)
	}
	return sharedBuilder
}

// sibling returns a new builder over the shared cache directory with o's
// other options (its archives are the shared ones when StdPackages and
// the prelude match).
func sibling(tb testing.TB, o BuilderOptions) *builder {
	tb.Helper()
	shared(tb)
	o.CacheDir, o.brk = sharedDir, sharedBrk
	if o.testPrelude == nil {
		o.testPrelude = os.DirFS(fakePrelude())
	}
	if o.StdPackages == nil {
		o.StdPackages = testStd
	}
	b, err := newBuilder(o)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
