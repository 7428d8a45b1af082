package plane

import (
	"context"
	"strings"
	"testing"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/lsp"
)

// TestCodeModeServesTheOrchestrationSeamWithAgents: the plane hands its
// Agency to code mode, so with FamilyAgents and a Runner code_mode serves
// the workspace and the orchestration seams (cap/notes on both) and lists
// cap/strand under cap://; without FamilyAgents, or without a Runner
// (todo alone), it serves the workspace seam with neither; cap/lsp only
// with a language server.
func TestCodeModeServesTheOrchestrationSeamWithAgents(t *testing.T) {
	t.Parallel()
	runner := agent.RunnerFunc(func(context.Context, agent.Turn) (string, error) { return "", nil })
	tests := []struct {
		name   string
		fam    Family
		runner agent.Runner
		want   string
		lsp    bool // a language server configured (else none, gopls or not)
	}{
		{"agents", FamilyFiles | FamilyAgents | FamilyCodeMode, runner, "workspace=cap/fs,cap/search,cap/kv,cap/report,cap/notes,cap/execution orchestration=cap/strand,cap/notes,cap/report,cap/execution", false},
		{"no agents", FamilyFiles | FamilyCodeMode, runner, "workspace=cap/fs,cap/search,cap/kv,cap/report,cap/execution", false},
		{"agents without a runner", FamilyFiles | FamilyAgents | FamilyCodeMode, nil, "workspace=cap/fs,cap/search,cap/kv,cap/report,cap/execution", false},
		{"a language server", FamilyFiles | FamilyCodeMode, nil, "workspace=cap/fs,cap/search,cap/kv,cap/report,cap/lsp,cap/execution", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, cfg := testDirs(t)
			cfg.Families, cfg.Runner = tt.fam, tt.runner
			cfg.LanguageServers = func([]lsp.Server) []lsp.Server {
				if !tt.lsp {
					return nil
				}
				return []lsp.Server{{Name: "fake", Command: []string{fakeServer.Path(t), "-mode", "lang"},
					Files: []lsp.FilePattern{{Pattern: "*.txt", LanguageID: "plaintext"}}}}
			}
			p := newTestPlane(t, cfg)
			var got []string
			for _, s := range p.CodeMode.Seams() {
				got = append(got, s.Name+"="+strings.Join(s.Packages, ","))
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("seams %s, want %s", strings.Join(got, " "), tt.want)
			}
			index := p.Registry.Dispatch(context.Background(), p.Call.At("op", "s", 0), "fs_read", []byte(`{"path":"cap://"}`))
			if strings.Contains(index.Text, "cap/strand") != strings.Contains(tt.want, "cap/strand") {
				t.Errorf("cap:// lists:\n%s", index.Text)
			}
			if strings.Contains(index.Text, "cap/notes") != strings.Contains(tt.want, "cap/notes") {
				t.Errorf("cap:// lists cap/notes without agents:\n%s", index.Text)
			}
		})
	}
}
