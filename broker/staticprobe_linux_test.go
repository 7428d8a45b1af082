//go:build linux

package broker

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/sandbox"
)

// staticProbe builds testdata/staticprobe, a static Go program
// (CGO_ENABLED=0), into dir and returns its path.
func staticProbe(tb testing.TB, dir string) string {
	tb.Helper()
	out := filepath.Join(dir, "staticprobe")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-trimpath", "-buildvcs=false", "-o", out, "./testdata/staticprobe")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if msg, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building the static probe: %v\n%s", err, msg)
	}
	return out
}

// clearCollect clears spec (pooled in a step of the test's name, with a
// timeout of 20 s unless spec has one) and collects everything, or
// returns the refusal.
func clearCollect(tb testing.TB, b *Broker, spec sandbox.CallSpec) (result, error) {
	tb.Helper()
	spec.Key = sandbox.StepKey{OpID: "op", StepID: tb.Name()}
	if spec.Budget.MaxOutstanding == 0 {
		spec.Budget.MaxOutstanding = 64
	}
	if spec.Timeout == 0 {
		spec.Timeout = 20 * time.Second
	}
	ex, err := b.Clear(context.Background(), spec)
	if err != nil {
		return result{}, err
	}
	return collect(ex), nil
}

// emptyRootSpec is an empty-root run of program with argv.
func emptyRootSpec(program string, proc bool, argv ...string) sandbox.CallSpec {
	return sandbox.CallSpec{
		Argv:      append([]string{sandbox.EmptyRootProgram}, argv...),
		Policy:    sandbox.Policy{Network: sandbox.NetworkOff},
		EmptyRoot: &sandbox.EmptyRoot{Program: program, Proc: proc},
	}
}

// probeLines maps each line of the escape probe's output to the first
// word's verdict: "write" -> "ok" or the failure line.
func probeLines(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		what, rest, _ := strings.Cut(line, " ")
		m[what] = rest
	}
	return m
}
