package job

import (
	"testing"

	"github.com/agentloom/loom/internal/jailtest"
)

// jailHelper is the jail helper every test broker of this package runs,
// built once per test binary.
var jailHelper jailtest.Shared

// JailHelperForTests returns the path of the package's host-built jail
// helper, for broker.Options.HelperPath (see jailtest.Shared.Path).
func JailHelperForTests(tb testing.TB) string { return jailHelper.Path(tb) }

// RemoveJailHelperForTests removes the helper JailHelperForTests built;
// TestMain calls it once every test ran.
func RemoveJailHelperForTests() { jailHelper.Remove() }
