package plane

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/codemode"
	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/tool"
)

// hostDoor is a Door that delivers everything.
type hostDoor struct{}

func (hostDoor) Interrupt(context.Context, string, string) (agent.Ack, error) {
	return agent.Ack{Kind: agent.AckDelivered, How: "interrupt"}, nil
}
func (hostDoor) Enqueue(context.Context, string, string) (agent.Ack, error) {
	return agent.Ack{Kind: agent.AckQueued}, nil
}

// hostGauge reports every strand in its first window.
type hostGauge struct{}

func (hostGauge) Report(context.Context, string) (agent.ContextReport, error) {
	return agent.ContextReport{Window: 1, Size: 1000, Used: 250}, nil
}

// TestHostFamilyIsOptIn: FamilyHost registers each of advise,
// context_remaining and propose whose seam the Config brings, after the
// agent tools and before code_mode; the zero Families leaves them out
// whatever seams are set; and each answers over its seam with the
// calling strand.
func TestHostFamilyIsOptIn(t *testing.T) {
	t.Parallel()
	runner := agent.RunnerFunc(func(context.Context, agent.Turn) (string, error) { return "", nil })
	guard := agent.NewGuard(hostDoor{}, func(a string) (string, bool) { return DefaultStrand, a == "advisor" }, 0)
	all := slices.Concat(namesOf(tool.FileTools()), []string{tool.GrepTool().Name, job.BashTool(nil).Name}, namesOf(job.Tools(nil)),
		[]string{history.SearchToolName, history.RememberToolName}, namesOf(agent.Tools(nil)))
	host := []string{agent.AdviseToolName, agent.ContextToolName, agent.ProposeToolName}
	tests := []struct {
		name      string
		fam       Family
		gaugeOnly bool
		want      []string
	}{
		{"default leaves it out", 0, false, slices.Concat(all, []string{codemode.ToolName})},
		{"host alone", FamilyHost, false, host},
		{"a seam missing", FamilyHost, true, []string{agent.ContextToolName}},
		{"everything", AllFamilies | FamilyHost, false, slices.Concat(all, host, []string{codemode.ToolName})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws, cfg := testDirs(t)
			cfg.Families, cfg.Runner, cfg.Gauge = tt.fam, runner, hostGauge{}
			if !tt.gaugeOnly {
				cfg.Advice = guard
				cfg.Proposals = agent.NewProposalQueue(filepath.Join(filepath.Dir(ws), "RULES.md"), "", nil)
			}
			p := newTestPlane(t, cfg)
			if diff := cmp.Diff(tt.want, namesOf(p.Registry.Registered())); diff != "" {
				t.Fatalf("registered tools (-want +got):\n%s", diff)
			}
			if tt.fam != FamilyHost || tt.gaugeOnly {
				return
			}
			bytes := 0
			for _, n := range host {
				tl, _ := p.Registry.Lookup(n)
				bytes += len(tl.Description) + len(tl.Schema)
			}
			t.Logf("FamilyHost costs %d bytes of description and schema", bytes)
			for _, c := range []struct {
				strand, name, args string
				code               tool.Code
			}{
				{"advisor", agent.AdviseToolName, `{"verdict":"block","text":"stop"}`, ""},
				{"advisor", agent.AdviseToolName, `{"verdict":"block","text":"stop"}`, ""}, // dropped: a success saying so
				{DefaultStrand, agent.AdviseToolName, `{"verdict":"nudge","text":"x"}`, agent.CodeAdviceUnavailable},
				{DefaultStrand, agent.ContextToolName, `{}`, ""},
				{DefaultStrand, agent.ProposeToolName, `{"content":"be brief","reason":"asked"}`, ""},
				{DefaultStrand, agent.ProposeToolName, `{"target":"configuration","content":"x","reason":"y"}`, tool.CodeInvalidArguments},
			} {
				o := p.Registry.Dispatch(context.Background(), p.CallFor(c.strand, "op-1"), c.name, json.RawMessage(c.args))
				if o.Code != c.code {
					t.Errorf("%s %s %s: %+v, want code %q", c.strand, c.name, c.args, o, c.code)
				}
			}
		})
	}
}
