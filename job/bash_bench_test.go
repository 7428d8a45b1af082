//go:build linux

package job_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// benchRest is how long, untimed, a bash benchmark waits before each
// call: a model's turn between two calls, long enough for the broker to
// refill its warm pool after the last command.
const benchRest = 150 * time.Millisecond

// BenchmarkBashAuto runs the bash tool's `true` on one workspace, the
// host's broker shared by the call and its job plane, interleaved with:
//
//   - auto: bash's default mode, the command run as a job of the plane
//     and watched to its end;
//   - foreground: mode foreground, the command cleared by the call;
//   - bwrap: `bash -c true` under bubblewrap with the broker benchmarks'
//     flags (read-only host, the workspace read-write and its .git
//     read-only, its own /dev, pid and network namespaces, /proc).
//
// It reports medians (<variant>-ms) and ratios to bubblewrap, and
// auto's to foreground's (auto/foreground). It is skipped, saying why,
// where bwrap is absent or cannot create its namespaces.
func BenchmarkBashAuto(b *testing.B) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skipf("bwrap is not installed: %v", err)
	}
	shell, err := exec.LookPath("bash")
	if err != nil {
		b.Skipf("no bash: %v", err)
	}
	ws := b.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755); err != nil {
		b.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n"), 0o644)
	bwrapArgs := []string{"--new-session", "--die-with-parent", "--ro-bind", "/", "/", "--bind", ws, ws,
		"--ro-bind", ws + "/.git", ws + "/.git", "--dev", "/dev", "--unshare-pid", "--proc", "/proc",
		"--unshare-net", "--", shell, "-c", "true"}
	if out, err := exec.Command(bwrap, bwrapArgs...).CombinedOutput(); err != nil {
		b.Skipf("bwrap cannot create its namespaces here: %v: %s", err, out)
	}

	br := broker.New(broker.Options{HelperPath: job.JailHelperForTests(b)})
	defer br.Close()
	plane := job.NewPlane(br, job.Options{})
	defer plane.Close(context.Background())
	c := &tool.Call{
		Workspace: ws, Strand: "main", OpID: "op", StepID: "step",
		Base: sandbox.Policy{
			SystemRoots:   sandbox.SystemReadableRoots(),
			WritableRoots: []string{ws},
			Protected:     broker.DefaultProtected(ws),
			Network:       sandbox.NetworkOff,
			EnvAllow:      []string{"PATH", "HOME"},
		},
		Env:    map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": ws},
		Broker: br,
	}
	r, err := tool.NewRegistry(job.BashTool(plane))
	if err != nil {
		b.Fatal(err)
	}
	bash := func(mode string) func() {
		raw, _ := json.Marshal(map[string]any{"command": "true", "mode": mode})
		return func() {
			if o := r.Dispatch(context.Background(), c, "bash", raw); o.IsError {
				b.Fatalf("bash %s: %s", mode, o.Text)
			}
		}
	}
	variants := []struct {
		name string
		run  func()
	}{
		{"auto", bash(job.BashAuto)},
		{"foreground", bash(job.BashForeground)},
		{"bwrap", func() {
			if err := exec.Command(bwrap, bwrapArgs...).Run(); err != nil {
				b.Fatal(err)
			}
		}},
	}
	for _, v := range variants[:2] { // the layer probe and the first fill, untimed
		v.run()
	}
	samples := make([][]time.Duration, len(variants))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range variants {
			v := (i + k) % len(variants)
			b.StopTimer()
			time.Sleep(benchRest)
			b.StartTimer()
			start := time.Now()
			variants[v].run()
			samples[v] = append(samples[v], time.Since(start))
		}
	}
	b.StopTimer()
	med := make([]float64, len(variants))
	for v := range variants {
		s := slices.Clone(samples[v])
		slices.Sort(s)
		med[v] = float64(s[len(s)/2]) / float64(time.Millisecond)
		b.ReportMetric(med[v], variants[v].name+"-ms")
	}
	b.ReportMetric(med[0]/med[2], "auto/bwrap")
	b.ReportMetric(med[1]/med[2], "foreground/bwrap")
	b.ReportMetric(med[0]/med[1], "auto/foreground")
}
