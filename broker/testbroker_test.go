package broker

import (
	"testing"

	"github.com/agentloom/loom/internal/jailtest"
)

// testHelperState is the host-built jail helper every test broker of
// this package runs, built once per test binary and removed by TestMain
// (testHelperCleanup). The one jailtest's HelperEnv names is used as it
// is (the unprivileged re-run is handed one).
var testHelperState jailtest.Shared

// testHelper returns the path of the package's host-built jail helper.
func testHelper(tb testing.TB) string { return testHelperState.Path(tb) }

func testHelperCleanup() { testHelperState.Remove() }

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
