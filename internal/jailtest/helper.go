// Package jailtest builds the jail helper tests and benchmarks run.
//
// A test binary makes a slow jail helper: everything it links (testing,
// rapid, go-cmp) initialises before the broker's init recognises the
// helper sentinel, and under -race every start pays for the race
// runtime too. A host's own binary is what production re-executes, so
// test brokers and the benchmarks that report a jail's cost use a
// host-built helper: HostHelper, or Build from a TestMain that builds one
// per test binary.
package jailtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// HelperEnv, when set, names an already built host helper that
// HostHelper returns instead of building one: a test that re-runs itself
// as another user (who may have no Go build cache) builds the helper
// first and passes it on, and a TestMain that built one with Build sets
// it so every HostHelper call of its package reuses that build.
const HelperEnv = "LOOM_TEST_HOST_HELPER"

// HelperName is the file name Build gives the helper inside its
// directory.
const HelperName = "host"

// HostHelper returns the path of a minimal program that imports the
// broker (and so serves as its jail helper), for
// broker.Options.HelperPath: the one HelperEnv names, or else one built
// into tb's temporary directory (see Build). It fails tb when the
// helper cannot be built.
func HostHelper(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv(HelperEnv); p != "" {
		return p
	}
	p, err := Build(tb.TempDir())
	if err != nil {
		tb.Fatalf("jailtest: %v", err)
	}
	return p
}

// Build builds the host helper into dir (as dir/HelperName, executable
// by everyone) and returns its path. The program is built through a go
// build overlay, so nothing is written into the module. Build needs no
// testing.TB, so a TestMain can build one helper for a whole test
// binary before any test runs.
func Build(dir string) (string, error) {
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate the module")
	}
	pkgDir := filepath.Dir(here)
	src := filepath.Join(dir, "main.go")
	prog := "package main\n\nimport _ \"github.com/agentloom/loom/broker\"\n\nfunc main() {}\n"
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		return "", err
	}
	virtual := filepath.Join(pkgDir, "zz_host", "main.go")
	overlay, err := json.Marshal(map[string]any{"Replace": map[string]string{virtual: src}})
	if err != nil {
		return "", err
	}
	ovl := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ovl, overlay, 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(dir, HelperName)
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-buildvcs=false", "-overlay", ovl, "-o", out, "./zz_host")
	cmd.Dir = pkgDir
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the host helper: %v\n%s", err, msg)
	}
	if err := os.Chmod(out, 0o755); err != nil {
		return "", err
	}
	return out, nil
}
