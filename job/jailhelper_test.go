package job

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentloom/loom/internal/jailtest"
)

// jailHelper is the jail helper every test broker of this package runs:
// a host-built program (jailtest.HostHelper), built once per test binary
// and kept until TestMain removes it, instead of the race-instrumented
// test binary re-executed for every jail.
var jailHelper struct {
	once sync.Once
	dir  string
	path string
}

// JailHelperForTests returns the path of the package's host-built jail
// helper, for broker.Options.HelperPath, building it on first use. It
// fails tb when the helper cannot be built: a test broker never falls
// back to re-executing the test binary unnoticed.
func JailHelperForTests(tb testing.TB) string {
	tb.Helper()
	jailHelper.once.Do(func() {
		built := jailtest.HostHelper(tb) // lives in tb's temporary directory
		data, err := os.ReadFile(built)
		if err != nil {
			tb.Fatalf("reading the host helper: %v", err)
		}
		dir, err := os.MkdirTemp("", "loom-job-test-helper-")
		if err != nil {
			tb.Fatalf("a directory for the host helper: %v", err)
		}
		p := filepath.Join(dir, "host")
		if err := os.WriteFile(p, data, 0o755); err != nil {
			os.RemoveAll(dir)
			tb.Fatalf("copying the host helper: %v", err)
		}
		jailHelper.dir, jailHelper.path = dir, p
	})
	if jailHelper.path == "" {
		tb.Fatal("the host-built jail helper could not be built (see the first test that asked for it)")
	}
	return jailHelper.path
}

// RemoveJailHelperForTests removes the helper JailHelperForTests built,
// if any; TestMain calls it once every test ran.
func RemoveJailHelperForTests() {
	if jailHelper.dir != "" {
		os.RemoveAll(jailHelper.dir)
	}
}
