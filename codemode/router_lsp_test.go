package codemode

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/lsp"
)

// TestLSPWithoutALanguageServerIsRefusedByVetting: an Engine without
// LanguageServers offers no cap/lsp, and vetting refuses its import
// saying why.
func TestLSPWithoutALanguageServerIsRefusedByVetting(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	for _, sm := range s.eng.Seams() {
		if slices.Contains(sm.Packages, "cap/lsp") {
			t.Fatalf("seam %s offers cap/lsp without a language server: %v", sm.Name, sm.Packages)
		}
	}
	src := "package main\n\nimport (\n\t\"context\"\n\t\"fmt\"\n\n\t\"cap/lsp\"\n)\n\nfunc main() {\n\tfmt.Println(lsp.Hover(context.Background(), lsp.Symbol(\"X\")))\n}\n"
	_, err := s.eng.Vet([]byte(src))
	var ve *VetError
	if !errors.As(err, &ve) || len(ve.Violations) != 1 || ve.Violations[0].Rule != ruleImportNotAllowed {
		t.Fatalf("vetting answered %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, `import "cap/lsp" (not offered: cap/lsp is offered only when the host runs a language server`) {
		t.Errorf("the refusal does not say why:\n%s", msg)
	}
}

// TestLSPCapabilitiesRefuseMalformedArguments: every lsp.* call decodes
// its arguments totally before the language server is asked: a wrong
// type, an unknown field, too many paths or kinds, or a malformed edit
// is refused invalid_capability_arguments, whatever the server would say.
func TestLSPCapabilitiesRefuseMalformedArguments(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	p, err := lsp.New(lsp.Options{Workspace: s.call.Workspace, Broker: s.call.Broker.(*broker.Broker)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	h := &seamHost{call: s.call, lsp: p}
	many := make([]any, maxLSPPaths+1)
	for i := range many {
		many[i] = "a.go"
	}
	for _, tc := range []struct {
		cap  string
		args map[string]any
	}{
		{"lsp.definition", map[string]any{"path": 7}},
		{"lsp.references", map[string]any{"symbol": "T.M", "extra": true}},
		{"lsp.hover", map[string]any{"line": "one"}},
		{"lsp.implementation", map[string]any{"line": -1}},
		{"lsp.document_symbols", map[string]any{}},
		{"lsp.workspace_symbols", map[string]any{"query": []any{"x"}}},
		{"lsp.code_actions", map[string]any{"path": "a.go", "line": 1, "kinds": many}},
		{"lsp.diagnostics", map[string]any{"paths": many}},
		{"lsp.diagnostics", map[string]any{"paths": []any{}}},
		{"lsp.rename", map[string]any{"symbol": "T.M"}},
		{"lsp.apply", map[string]any{"files": "a.go"}},
		{"lsp.apply", map[string]any{"files": []any{map[string]any{"path": "a.go", "digest": "d", "changes": []any{"not a map"}}}}},
	} {
		_, err := lookupCapability(tc.cap).serve(h, t.Context(), newCapArgs(tc.cap, tc.args))
		var ce *CapError
		if !errors.As(err, &ce) || ce.Code != codeInvalidCapabilityArguments {
			t.Errorf("%s %v: %v, want %s", tc.cap, tc.args, err, codeInvalidCapabilityArguments)
		}
	}
}
