package codemode

import (
	"context"
	"slices"
	"testing"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/tool"
)

// TestGivenSeamsAreOffered: a seam the host gives is offered as a
// default one is, less the packages no registered tool authorizes, and
// CombinedSeam needs an Agency. The control is the same seam over a
// registry that holds the tools: then nothing is left out.
func TestGivenSeamsAreOffered(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	agency := agent.NewAgency(agent.RunnerFunc(func(context.Context, agent.Turn) (string, error) { return "done", nil }), agent.Options{})
	t.Cleanup(func() { agency.Close() })
	if _, err := New(Options{Registry: s.reg, Broker: s.eng.opts.Broker, Seams: []Seam{CombinedSeam()}}); err == nil {
		t.Error("New served the combined seam without an Agency")
	}

	filesOnly, err := tool.NewRegistry(append([]tool.Tool{tool.ReadTool(), tool.WriteTool(nil)}, agent.Tools(agency)...)...)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := New(Options{Registry: filesOnly, Broker: s.eng.opts.Broker, Agency: agency, Seams: []Seam{CombinedSeam()}})
	if err != nil {
		t.Fatal(err)
	}
	got := eng.Seams()[0]
	if got.Name != CombinedSeamName || !slices.Contains(got.Packages, "cap/fs") || !slices.Contains(got.Packages, "cap/strand") {
		t.Fatalf("the combined seam offers %v", got)
	}
	if slices.Contains(got.Packages, "cap/proc") || slices.Contains(got.Packages, "cap/job") {
		t.Errorf("with no bash and no job tools the combined seam still offers %v", got.Packages)
	}

	all, err := tool.NewRegistry(append(s.reg.Registered(), agent.Tools(agency)...)...)
	if err != nil {
		t.Fatal(err)
	}
	eng, err = New(Options{Registry: all, Broker: s.eng.opts.Broker, Agency: agency, Seams: []Seam{CombinedSeam()}})
	if err != nil {
		t.Fatal(err)
	}
	if got := eng.Seams()[0].Packages; !slices.Contains(got, "cap/proc") || !slices.Contains(got, "cap/job") {
		t.Errorf("with bash and the job tools the combined seam offers %v", got)
	}
}
