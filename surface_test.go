package loom_test

import (
	"context"
	"fmt"
	"github.com/agentloom/loom/codemode"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/job"
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

// TestToolSurfaceFitsItsBudget: the model-facing surface of every family
// together stays within maxSurfaceBytes, with no seam and over the
// reference seams; past it, the test names what each tool costs so the
// next cut can be chosen.
func TestToolSurfaceFitsItsBudget(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    func(*testing.T) *tool.Registry
	}{
		{"no seams", everyTool},
		{"reference seams", referenceTools},
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
			if len(r.Names()) < 18 {
				t.Fatalf("only %d tools measured: %v", len(r.Names()), r.Names())
			}
			if total > maxSurfaceBytes {
				t.Errorf("the tools cost %d bytes of description and schema, past the budget of %d:\n%s", total, maxSurfaceBytes, b.String())
			}
			t.Logf("surface %d of %d bytes:\n%s", total, maxSurfaceBytes, b.String())
		})
	}
}
