package searchtest

import (
	"os"
	"os/exec"
	"testing"
)

// RequireRipgrepEnv, set to "1", makes RequireRipgrep fail rather than
// skip when ripgrep is missing. CI sets it after installing ripgrep, so
// the ripgrep engine is always tested there, while `go test ./...` on a
// machine without ripgrep (which Loom does not require) still passes and
// says what it left out.
const RequireRipgrepEnv = "LOOM_REQUIRE_RIPGREP"

// RequireRipgrep skips tb when rg is not on PATH, or fails it when
// RequireRipgrepEnv is "1".
func RequireRipgrep(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("rg"); err == nil {
		return
	}
	const why = "ripgrep (rg) is not on PATH; install it (apt-get install ripgrep) to test the ripgrep engine"
	if os.Getenv(RequireRipgrepEnv) == "1" {
		tb.Fatal(why)
	}
	tb.Skip(why)
}
