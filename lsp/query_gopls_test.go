package lsp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/internal/lsptest"
	"github.com/agentloom/loom/tool"
)

// goplsModule writes a small module: an interface, a type implementing
// it, a function calling its method twice.
func goplsModule(t *testing.T, ws string) {
	t.Helper()
	files := map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.22\n",
		"a.go": `package m

// Greeter greets.
type Greeter interface{ Greet() string }

// T is a greeter.
type T struct{}

// Greet says hello.
func (T) Greet() string { return "hello" }

func Use() string {
	var t T
	return t.Greet() + t.Greet()
}
`,
		"b.go": "package m\n\nfunc Other() string { return Use() }\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func show(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestGoplsLanguageOperations asks the installed gopls, through the
// jail, every language operation on a small module. It skips without
// gopls unless LOOM_REQUIRE_GOPLS=1.
func TestGoplsLanguageOperations(t *testing.T) {
	t.Parallel()
	bin := lsptest.RequireGopls(t)
	s := newSession(t)
	goplsModule(t, s.ws)
	p := s.plane(t, Gopls(bin))
	ctx := within(t, goplsWithin)

	def, err := p.Definition(ctx, Position{Path: "a.go", Line: 14, Ident: "Greet"})
	if err != nil || len(def.Items) != 1 || def.Items[0].Path != "a.go" || def.Items[0].Line != 10 || def.Items[0].Anchor == "" {
		t.Fatalf("definition: %s %v", show(def), err)
	}
	refs, err := p.References(ctx, Position{Symbol: "T.Greet"})
	if err != nil || refs.Total != 3 {
		t.Fatalf("references by name: %s %v", show(refs), err)
	}
	if _, err := p.References(ctx, Position{Symbol: "Nope"}); CodeOf(err) != CodeSymbolNotFound {
		t.Errorf("an unknown name: %v", err)
	}
	h, err := p.Hover(ctx, Position{Path: "a.go", Line: 13, Ident: "T"})
	if err != nil || !strings.Contains(h.Text, "struct") {
		t.Errorf("hover: %s %v", show(h), err)
	}
	syms, err := p.DocumentSymbols(ctx, "a.go")
	if err != nil || syms.Total < 4 {
		t.Errorf("document symbols: %s %v", show(syms), err)
	}
	ws, err := p.WorkspaceSymbols(ctx, "Greet")
	if err != nil || ws.Total == 0 {
		t.Errorf("workspace symbols: %s %v", show(ws), err)
	}
	impl, err := p.Implementation(ctx, Position{Symbol: "Greeter"})
	if err != nil || impl.Total != 1 || impl.Items[0].Line != 7 {
		t.Errorf("implementation: %s %v", show(impl), err)
	}
	in, err := p.IncomingCalls(ctx, Position{Symbol: "Use"})
	if err != nil || in.Total != 1 || in.Items[0].Path != "b.go" || in.Items[0].Name != "Other" {
		t.Errorf("incoming calls: %s %v", show(in), err)
	}
	out, err := p.OutgoingCalls(ctx, Position{Symbol: "Use"})
	if err != nil || out.Total != 1 || out.Items[0].Name != "Greet" {
		t.Errorf("outgoing calls: %s %v", show(out), err)
	}
	ren, err := p.Rename(ctx, Position{Symbol: "Use"}, "Used")
	if err != nil || len(ren.Files) != 2 {
		t.Fatalf("rename: %s %v", show(ren), err)
	}
	before, _ := os.ReadFile(filepath.Join(s.ws, "b.go"))
	if !strings.Contains(string(before), "Use()") {
		t.Error("the rename preview wrote")
	}
	c := &tool.Call{Workspace: s.ws, Base: s.base}
	done, err := p.Apply(ctx, c, ren)
	if err != nil || len(done.Files) != 2 {
		t.Fatalf("apply: %s %v", show(done), err)
	}
	after, _ := os.ReadFile(filepath.Join(s.ws, "b.go"))
	if string(after) != "package m\n\nfunc Other() string { return Used() }\n" {
		t.Errorf("b.go after the rename: %q", after)
	}
	for _, d := range done.Diagnostics {
		if d.Status != tool.DiagnosticsSettled || d.Errors != 0 {
			t.Errorf("the renamed module does not build: %+v", d)
		}
	}
	if _, err := p.Apply(ctx, c, ren); CodeOf(err) != CodeStaleEdit {
		t.Errorf("the same edit again: %v", err)
	}
	// The server hears of the rename: the new name is found by name.
	if def, err := p.Definition(ctx, Position{Symbol: "Used"}); err != nil || def.Total != 1 {
		t.Errorf("after the rename: %s %v", show(def), err)
	}

	// A code action: an unused import organized away (gopls offers
	// no quick fix of its own for it).
	os.WriteFile(filepath.Join(s.ws, "c.go"), []byte("package m\n\nimport \"os\"\n\nfunc C() {}\n"), 0o644)
	acts, err := p.CodeActions(ctx, "c.go", 3, 3, []string{"source.organizeImports"})
	if err != nil {
		t.Fatalf("code actions: %v", err)
	}
	var fix *Edit
	for _, a := range acts.Items {
		if a.Edit != nil && a.Kind == "source.organizeImports" {
			fix = a.Edit
		}
	}
	if fix == nil {
		t.Fatalf("no action organizing an unused import away: %s", show(acts))
	}
	if _, err := p.Apply(ctx, c, *fix); err != nil {
		t.Fatalf("applying the quick fix: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(s.ws, "c.go")); string(got) != "package m\n\nfunc C() {}\n" {
		t.Errorf("c.go after the fix: %q", got)
	}
}
