package codemode

import (
	"errors"
	"slices"
	"strings"
	"testing"
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
