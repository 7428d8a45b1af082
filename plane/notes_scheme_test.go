package plane

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/tool"
)

// TestFsReadServesNotes: with the agent tools, fs_read serves note://
// over the plane's Agency (and says so in its description), fs_write
// refuses a note:// path; without a Runner or Agency (the todo tool
// alone) there is no note:// namespace.
func TestFsReadServesNotes(t *testing.T) {
	t.Parallel()
	runner := agent.RunnerFunc(func(context.Context, agent.Turn) (string, error) { return "", nil })
	for _, tc := range []struct {
		name   string
		runner agent.Runner
		read   tool.Code
	}{{"with agents", runner, ""}, {"todo alone", nil, tool.CodeUnknownScheme}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, cfg := testDirs(t)
			cfg.Families, cfg.Runner = FamilyFiles|FamilyAgents, tc.runner
			p := newTestPlane(t, cfg)
			c := p.CallFor(DefaultStrand, "op-1")
			dispatch := func(name, args string) tool.Outcome {
				return p.Registry.Dispatch(context.Background(), c, name, json.RawMessage(args))
			}
			if tc.runner != nil {
				if o := dispatch(agent.NoteToolName, `{"key":"plan","value":{"step":1}}`); o.IsError {
					t.Fatal(o.Text)
				}
			}
			o := dispatch("fs_read", `{"path":"note://agent/`+DefaultStrand+`/plan"}`)
			if o.Code != tc.read || (tc.read == "" && !strings.Contains(o.Text, `"step": 1`)) {
				t.Fatalf("fs_read note://: %+v", o)
			}
			rd, _ := p.Registry.Lookup("fs_read")
			if strings.Contains(rd.Description, "note://") != (tc.runner != nil) {
				t.Errorf("fs_read's description and the namespace disagree: %s", rd.Description)
			}
			if o := dispatch("fs_write", `{"path":"note://agent/`+DefaultStrand+`/plan","content":"x"}`); o.Code != tool.CodeReadOnlyNamespace {
				t.Fatalf("fs_write note://: %+v", o)
			}
		})
	}
}
