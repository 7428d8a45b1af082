package broker

import (
	"os"
	"sync"
	"testing"

	"github.com/agentloom/loom/internal/jailtest"
)

// testHelperState is the host-built jail helper every test broker of
// this package runs (see testHelper).
var testHelperState struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// testHelper returns the path of the package's host-built jail helper
// (jailtest.Build), built on first use and removed by TestMain once
// every test ran: brokers under test start it instead of re-executing
// the race-instrumented test binary for every jail. The one jailtest's
// HelperEnv names is used as it is (the unprivileged re-run is handed
// one). It fails tb when the helper cannot be built: a test broker never
// falls back to re-executing the test binary unnoticed.
func testHelper(tb testing.TB) string {
	tb.Helper()
	s := &testHelperState
	s.once.Do(func() {
		if p := os.Getenv(jailtest.HelperEnv); p != "" {
			s.path = p
			return
		}
		s.dir, s.err = os.MkdirTemp("", "loom-broker-test-helper-")
		if s.err == nil {
			s.err = os.Chmod(s.dir, 0o755)
		}
		if s.err == nil {
			s.path, s.err = jailtest.Build(s.dir)
		}
	})
	if s.err != nil {
		tb.Fatalf("the host-built jail helper: %v", s.err)
	}
	return s.path
}

func testHelperCleanup() {
	if testHelperState.dir != "" {
		os.RemoveAll(testHelperState.dir)
	}
}

// newTestBroker is New(opts) with the package's host-built helper
// (unless opts names one), closed when tb ends.
func newTestBroker(tb testing.TB, opts Options) *Broker {
	tb.Helper()
	if opts.HelperPath == "" {
		opts.HelperPath = testHelper(tb)
	}
	b := New(opts)
	tb.Cleanup(func() { b.Close() })
	return b
}
