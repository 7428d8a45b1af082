// Package jailtest builds the jail helper a benchmark should measure.
//
// A test binary makes a slow jail helper: everything it links (testing,
// rapid, go-cmp) initialises before the broker's init recognises the
// helper sentinel. A host's own binary is what production re-executes, so
// benchmarks that report a jail's cost use HostHelper.
package jailtest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// HelperEnv, when set, names an already built host helper that
// HostHelper returns instead of building one: a test that re-runs itself
// as another user (who may have no Go build cache) builds the helper
// first and passes it on.
const HelperEnv = "LOOM_TEST_HOST_HELPER"

// HostHelper builds a minimal program that imports the broker (and so
// serves as its jail helper) and returns its path, for
// broker.Options.HelperPath. The program is built through a go build
// overlay, so nothing is written into the module.
func HostHelper(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv(HelperEnv); p != "" {
		return p
	}
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("jailtest: cannot locate the module")
	}
	pkgDir := filepath.Dir(here)
	dir := tb.TempDir()
	src := filepath.Join(dir, "main.go")
	prog := "package main\n\nimport _ \"github.com/agentloom/loom/broker\"\n\nfunc main() {}\n"
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		tb.Fatal(err)
	}
	virtual := filepath.Join(pkgDir, "zz_host", "main.go")
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{virtual: src}})
	ovl := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ovl, overlay, 0o644); err != nil {
		tb.Fatal(err)
	}
	out := filepath.Join(dir, "host")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-buildvcs=false", "-overlay", ovl, "-o", out, "./zz_host")
	cmd.Dir = pkgDir
	if msg, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("jailtest: building the host helper: %v\n%s", err, msg)
	}
	return out
}
