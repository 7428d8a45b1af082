package loom_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/codemode"
	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

// maxSurfaceBytes bounds what every family's tools together cost the
// model: the sum of len(Description)+len(Schema) over every tool of
// every family (code_mode, which has a budget of its own, is not among
// them).
const maxSurfaceBytes = 12 << 10

// referenceTools registers every family over the reference seams, where
// the descriptions are at their longest: bash offers jobs and names the
// job tools, the waits state their maxima.
func referenceTools(t *testing.T) *tool.Registry {
	t.Helper()
	plane := job.NewPlane(nil, job.Options{})
	t.Cleanup(func() { plane.Close(context.Background()) })
	agency := agent.NewAgency(agent.RunnerFunc(func(context.Context, agent.Turn) (string, error) { return "", nil }),
		agent.Options{MaxWait: 10 * time.Minute})
	t.Cleanup(func() { agency.Close() })
	tools := append(tool.FileTools(), tool.GrepTool(), job.BashTool(plane))
	tools = append(tools, job.Tools(plane)...)
	tools = append(tools, agent.Tools(agency)...)
	tools = append(tools, history.SearchTool(nil, nil), history.RememberTool(nil, nil))
	r, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// defaultPlaneTools is the registry plane.New assembles with a zero
// Config but the workspace: what a host that takes the defaults offers,
// fs_read's namespaces (job://, cap://, note://) included.
func defaultPlaneTools(t *testing.T) *tool.Registry { return planeTools(t, nil) }

// agentPlaneTools is the default plane with a Runner: every agent tool,
// and fs_read's note:// namespace.
func agentPlaneTools(t *testing.T) *tool.Registry {
	return planeTools(t, agent.RunnerFunc(func(context.Context, agent.Turn) (string, error) { return "", nil }))
}

func planeTools(t *testing.T, runner agent.Runner) *tool.Registry {
	t.Helper()
	root, err := os.MkdirTemp("/var/tmp", "loom-surface-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	ws := filepath.Join(root, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := plane.New(plane.Config{Workspace: ws, BlobDir: filepath.Join(root, "blobs"),
		HistoryPath: filepath.Join(root, "history.sqlite"), Scratch: filepath.Join(root, "scratch"), Runner: runner})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p.Registry
}

// TestToolSurfaceFitsItsBudget: the model-facing surface of every family
// together stays within maxSurfaceBytes, with no seam and over the
// reference seams; past it, the test names what each tool costs so the
// next cut can be chosen.
func TestToolSurfaceFitsItsBudget(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    func(*testing.T) *tool.Registry
		min  int // tools at least, so a family left out is noticed
	}{
		{"no seams", everyTool, 18},
		{"reference seams", referenceTools, 18},
		// No Runner: of the agent tools only todo.
		{"the default plane", defaultPlaneTools, 13},
		{"the default plane with a Runner", agentPlaneTools, 19},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r(t)
			total := 0
			var b strings.Builder
			for _, name := range r.Names() {
				if name == codemode.ToolName {
					continue // its own budget, held by package codemode's TestSurfaceBudget
				}
				tl, _ := r.Lookup(name)
				d, s := len(tl.Description), len(tl.Schema)
				total += d + s
				fmt.Fprintf(&b, "%-18s %5d = description %5d + schema %5d\n", name, d+s, d, s)
			}
			if len(r.Names()) < tc.min {
				t.Fatalf("only %d tools measured: %v", len(r.Names()), r.Names())
			}
			if total > maxSurfaceBytes {
				t.Errorf("the tools cost %d bytes of description and schema, past the budget of %d:\n%s", total, maxSurfaceBytes, b.String())
			}
			t.Logf("surface %d of %d bytes:\n%s", total, maxSurfaceBytes, b.String())
		})
	}
}
