package codemode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/agentloom/loom/tool"
)

// minGoMinor is the oldest Go release (1.minGoMinor) a toolchain may be.
const minGoMinor = 26

// toolchainProbeTimeout bounds each `go env` findToolchain runs.
const toolchainProbeTimeout = 10 * time.Second

// installHint is what a ToolchainError's message tells the host to do.
var installHint = fmt.Sprintf("install Go 1.%d or newer (https://go.dev/dl/) and put its bin directory on PATH, or set BuilderOptions.Toolchain", minGoMinor)

// Toolchain is a Go installation: its GOROOT (absolute, clean) and its
// version string as the toolchain reports it (e.g. "go1.26.8").
type Toolchain struct {
	GOROOT, Version string
}

// BuilderError is a build-side failure that is not the program's fault;
// Code says which.
type BuilderError struct {
	// Code is CodeToolchainUnavailable, CodeBuildUnavailable or
	// tool.CodeCancelled (the build's context ended).
	Code tool.Code
	// Reason says what failed, and for a toolchain what to install.
	Reason string
	// Err is the cause, if any.
	Err error
}

// Error renders the reason and the cause.
func (e *BuilderError) Error() string {
	s := "codemode: " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *BuilderError) Unwrap() error { return e.Err }

// ErrorCode returns e.Code as a string, so tool.CodeOf reads it (see
// tool.CodedError).
func (e *BuilderError) ErrorCode() string { return string(e.Code) }

func toolchainErr(reason string, err error) error {
	return &BuilderError{Code: CodeToolchainUnavailable, Reason: reason + "; " + installHint, Err: err}
}

// findToolchain returns the toolchain at goroot, or, when goroot is "",
// the one `go env GOROOT` names for the go command found on PATH. Every
// go command it runs gets an environment built from nothing but PATH,
// GOENV=off and GOTOOLCHAIN=local, in "/". The version is read from
// GOROOT/VERSION, else from `go env GOVERSION`. A toolchain that is
// missing, older than Go 1.minGoMinor, or lacks its go, compile or link
// binary for this GOOS/GOARCH is an error with code
// CodeToolchainUnavailable naming what to install.
func findToolchain(ctx context.Context, goroot string) (Toolchain, error) {
	if goroot == "" {
		gobin, err := exec.LookPath("go")
		if err != nil {
			return Toolchain{}, toolchainErr("no go command on PATH", err)
		}
		out, err := goEnv(ctx, gobin, "GOROOT")
		if err != nil {
			return Toolchain{}, toolchainErr("`go env GOROOT` failed", err)
		}
		goroot = out
	}
	if !filepath.IsAbs(goroot) {
		return Toolchain{}, toolchainErr(fmt.Sprintf("GOROOT %q is not absolute", goroot), nil)
	}
	goroot = filepath.Clean(goroot)
	tc := Toolchain{GOROOT: goroot}
	for _, p := range []string{tc.goBinary(), tc.compileBinary(), tc.linkBinary()} {
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			return Toolchain{}, toolchainErr(fmt.Sprintf("the toolchain at %s has no executable %s", goroot, p), err)
		}
	}
	if v, err := os.ReadFile(filepath.Join(goroot, "VERSION")); err == nil {
		tc.Version, _, _ = strings.Cut(string(v), "\n")
		tc.Version = strings.TrimSpace(tc.Version)
	}
	if tc.Version == "" {
		v, err := goEnv(ctx, tc.goBinary(), "GOVERSION")
		if err != nil {
			return Toolchain{}, toolchainErr("`go env GOVERSION` failed", err)
		}
		tc.Version = v
	}
	minor, ok := goMinor(tc.Version)
	if !ok {
		return Toolchain{}, toolchainErr(fmt.Sprintf("cannot read the version %q of the toolchain at %s", tc.Version, goroot), nil)
	}
	if minor < minGoMinor {
		return Toolchain{}, toolchainErr(fmt.Sprintf("the toolchain at %s is %s, older than go1.%d", goroot, tc.Version, minGoMinor), nil)
	}
	return tc, nil
}

// goEnv runs `gobin env name` hermetically and returns its trimmed
// output.
func goEnv(ctx context.Context, gobin, name string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, toolchainProbeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, gobin, "env", name)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GOENV=off", "GOTOOLCHAIN=local"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	v := strings.TrimSpace(string(out))
	if v == "" {
		return "", errors.New("empty output")
	}
	return v, nil
}

// goMinor reads the minor release from a Go version string: "go1.26.8",
// "go1.26rc1", "go1.27" and "devel go1.27-abcdef ..." all work; the
// major must be 1.
func goMinor(v string) (int, bool) {
	i := strings.Index(v, "go1.")
	if i < 0 {
		return 0, false
	}
	rest := v[i+len("go1."):]
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	n, err := strconv.Atoi(rest[:j])
	return n, err == nil
}

// toolDir is GOROOT/pkg/tool/<GOOS>_<GOARCH> for the running host.
func (tc Toolchain) toolDir() string {
	return filepath.Join(tc.GOROOT, "pkg", "tool", runtime.GOOS+"_"+runtime.GOARCH)
}

func (tc Toolchain) goBinary() string      { return filepath.Join(tc.GOROOT, "bin", "go") }
func (tc Toolchain) compileBinary() string { return filepath.Join(tc.toolDir(), "compile") }
func (tc Toolchain) linkBinary() string    { return filepath.Join(tc.toolDir(), "link") }
