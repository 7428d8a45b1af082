package plane

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/internal/lsptest"
)

// TestCodeModeAsksGopls: with gopls detected, a program finds a Go
// function's references by name, previews a rename and applies it, and
// reads the compiler's diagnosis of a broken file, all through cap/lsp
// against the real server. It skips without gopls unless
// LOOM_REQUIRE_GOPLS=1.
func TestCodeModeAsksGopls(t *testing.T) {
	t.Parallel()
	lsptest.RequireGopls(t)
	ws, cfg := testDirs(t)
	cfg.Families = FamilyFiles | FamilyCodeMode
	for name, content := range map[string]string{
		"go.mod":    "module example.com/m\n\ngo 1.22\n",
		"greet.go":  "package m\n\n// Greet says hello.\nfunc Greet(name string) string { return \"hello \" + name }\n",
		"use.go":    "package m\n\nfunc Use() string { return Greet(\"a\") + Greet(\"b\") }\n",
		"broken.go": "package m\n\nfunc Broken() int { return missing }\n",
	} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := newTestPlane(t, cfg)
	src := `package main

import (
	"context"
	"fmt"

	"cap/fs"
	"cap/lsp"
)

func main() {
	ctx := context.Background()
	refs, err := lsp.References(ctx, lsp.Symbol("Greet"))
	if err != nil {
		panic(err)
	}
	fmt.Printf("refs %d by %s:", refs.Total, refs.Server)
	for _, s := range refs.Items {
		fmt.Printf(" %s:%d", s.Path, s.Line)
	}
	fmt.Println()
	edit, err := lsp.Rename(ctx, lsp.Symbol("Greet"), "Welcome")
	if err != nil {
		panic(err)
	}
	if _, err := lsp.Apply(ctx, edit); err != nil {
		panic(err)
	}
	u, _ := fs.Read(ctx, "use.go")
	fmt.Printf("use.go now %q\n", u.Text())
	diags, err := lsp.Diagnostics(ctx, "broken.go")
	if err != nil {
		panic(err)
	}
	for _, f := range diags {
		for _, it := range f.Items {
			fmt.Printf("diagnostic %s:%d %s %s\n", f.Path, it.Line, it.Severity, it.Message)
		}
	}
}
`
	raw, _ := json.Marshal(map[string]any{"program": src, "within_ms": 600000})
	o := p.Registry.Dispatch(t.Context(), p.Call.At("op-1", "step-1", 0), "code_mode", raw)
	if o.IsError {
		t.Fatalf("%s: %s", o.Code, o.Text)
	}
	for _, want := range []string{
		"refs 3 by gopls:",
		"use.go now \"package m\\n\\nfunc Use() string { return Welcome(\\\"a\\\") + Welcome(\\\"b\\\") }\\n\"\n",
		"diagnostic broken.go:3 error undefined: missing\n",
	} {
		if !strings.Contains(o.Text, want) {
			t.Errorf("the program's output lacks %q:\n%s", want, o.Text)
		}
	}
	g, err := os.ReadFile(filepath.Join(ws, "greet.go"))
	if err != nil || !strings.Contains(string(g), "func Welcome(") {
		t.Errorf("greet.go after the rename (%v):\n%s", err, g)
	}
}
