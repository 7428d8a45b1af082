// Package lsptest holds what tests of the language-server door share:
// the scripted fake server, built once per test binary, and the rule
// for when gopls is required.
package lsptest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/agentloom/loom/toolchain"
)

// RequireGoplsEnv, set to "1", makes RequireGopls fail rather than skip
// when gopls is missing. CI sets it after installing the pinned gopls,
// so the end-to-end tests always run there, while a machine without
// gopls (which Loom does not require) still passes and says what it left
// out.
const RequireGoplsEnv = "LOOM_REQUIRE_GOPLS"

// RequireGopls returns gopls's path where lsp.Detect looks for it (the
// default commands' PATH, $GOBIN, $GOPATH/bin); it skips tb when gopls is
// absent, or fails it when RequireGoplsEnv is "1".
func RequireGopls(tb testing.TB) string {
	tb.Helper()
	dirs := filepath.SplitList(toolchain.DefaultPath)
	if d := os.Getenv("GOBIN"); d != "" {
		dirs = append(dirs, d)
	}
	gopath := os.Getenv("GOPATH")
	if home, err := os.UserHomeDir(); gopath == "" && err == nil {
		gopath = filepath.Join(home, "go")
	}
	for _, g := range filepath.SplitList(gopath) {
		dirs = append(dirs, filepath.Join(g, "bin"))
	}
	for _, d := range dirs {
		if p := filepath.Join(d, "gopls"); filepath.IsAbs(p) {
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				return p
			}
		}
	}
	const why = "gopls is not on the commands' PATH, in $GOBIN or in $GOPATH/bin; install it (go install golang.org/x/tools/gopls@v0.23.0) to test the language-server door end to end"
	if os.Getenv(RequireGoplsEnv) == "1" {
		tb.Fatal(why)
	}
	tb.Skip(why)
	return ""
}

// Fake is the scripted language server (lsp/internal/fakeserver) for a
// whole test binary: built on the first Path under /var/tmp (a jail's
// /tmp is its own), removed by Remove. The zero value is ready to use.
type Fake struct {
	once      sync.Once
	dir, path string
	err       error
}

// Path returns the fake server's path, building it on first use; it
// fails tb when the build fails.
func (f *Fake) Path(tb testing.TB) string {
	tb.Helper()
	f.once.Do(func() {
		_, here, _, ok := runtime.Caller(0)
		if !ok {
			f.err = fmt.Errorf("cannot locate the module")
			return
		}
		if f.dir, f.err = os.MkdirTemp("/var/tmp", "loom-lsp-fake-"); f.err != nil {
			return
		}
		os.Chmod(f.dir, 0o755)
		f.path = filepath.Join(f.dir, "fakeserver")
		cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-buildvcs=false", "-o", f.path, "../../lsp/internal/fakeserver")
		cmd.Dir = filepath.Dir(here)
		if out, err := cmd.CombinedOutput(); err != nil {
			f.err = fmt.Errorf("building the fake language server: %v\n%s", err, out)
		}
	})
	if f.err != nil {
		tb.Fatal(f.err)
	}
	return f.path
}

// Remove deletes what Path built.
func (f *Fake) Remove() {
	if f.dir != "" {
		os.RemoveAll(f.dir)
	}
}
