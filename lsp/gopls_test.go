package lsp

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentloom/loom/internal/lsptest"
	"github.com/agentloom/loom/tool"
)

// goplsWithin bounds one gopls diagnosis in these tests: the first loads
// the module and the standard library's export data on a cold cache.
const goplsWithin = 3 * settleWithin

// TestGoplsEndToEnd runs the installed gopls through the jail on a small
// module: a type error, its fix, an analyzer's finding, a broken go.mod,
// and a definition a command wrote on disk that gopls only hears of
// through the scan. It skips without gopls unless LOOM_REQUIRE_GOPLS=1.
func TestGoplsEndToEnd(t *testing.T) {
	t.Parallel()
	bin := lsptest.RequireGopls(t)
	s := newSession(t)
	os.WriteFile(filepath.Join(s.ws, "go.mod"), []byte("module example.com/m\n\ngo 1.22\n"), 0o644)
	p := s.plane(t, Gopls(bin))

	got := s.write(t, p, within(t, goplsWithin), "a.go", "package m\n\nfunc F() int {\n\treturn x\n}\n")
	if got.Status != tool.DiagnosticsSettled || got.Errors != 1 || got.Items[0].Line != 4 || !strings.Contains(got.Items[0].Message, "undefined: x") {
		t.Fatalf("a type error: %+v", got)
	}

	got = s.write(t, p, within(t, goplsWithin), "a.go", "package m\n\nfunc F() int {\n\treturn 1\n}\n")
	if got.Status != tool.DiagnosticsSettled || got.Errors+got.Warnings+got.Infos+got.Hints != 0 {
		t.Fatalf("its fix: %+v", got)
	}

	got = s.write(t, p, within(t, goplsWithin), "a.go", "package m\n\nimport \"fmt\"\n\nfunc F() int {\n\tfmt.Printf(\"%d\", \"s\")\n\treturn 1\n}\n")
	if got.Status != tool.DiagnosticsSettled || got.Errors != 0 || got.Warnings != 1 || got.Items[0].Source != "printf" || got.Items[0].Line != 6 {
		t.Fatalf("an analyzer's finding, in the same publication: %+v", got)
	}

	// A command defines y on disk; gopls hears of it before it diagnoses
	// the write that uses it.
	os.WriteFile(filepath.Join(s.ws, "b.go"), []byte("package m\n\nvar y = 2\n"), 0o644)
	got = s.write(t, p, within(t, goplsWithin), "a.go", "package m\n\nfunc F() int {\n\treturn y\n}\n")
	if got.Status != tool.DiagnosticsSettled || got.Errors != 0 {
		t.Fatalf("a definition written on disk: %+v", got)
	}

	got = s.write(t, p, within(t, goplsWithin), "go.mod", "module example.com/m\n\ngo 1.22\n\nbogus directive\n")
	if got.Status != tool.DiagnosticsSettled || got.Errors == 0 {
		t.Fatalf("a broken go.mod: %+v", got)
	}
	st := p.Servers()
	if len(st) != 1 || st[0].Name != GoplsName || st[0].Starts != 1 || st[0].State != StateRunning {
		t.Errorf("status %+v", st)
	}
	if real, _ := filepath.EvalSymlinks(bin); !slices.Contains(p.servers[0].pol.SystemRoots, real) {
		t.Errorf("gopls's executable is not a system root of its jail: %v", p.servers[0].pol.SystemRoots)
	}
}

// TestGoplsFirstFileOfAModule: a module whose first Go file is written
// after gopls loaded it empty is diagnosed, not answered clean (gopls
// finds a just-opened module's first file clean until its next change;
// Loom asks again).
func TestGoplsFirstFileOfAModule(t *testing.T) {
	t.Parallel()
	bin := lsptest.RequireGopls(t)
	s := newSession(t)
	p := s.plane(t, Gopls(bin))
	if got := s.write(t, p, within(t, goplsWithin), "go.mod", "module example.com/m\n\ngo 1.22\n"); got.Status != tool.DiagnosticsSettled || got.Errors != 0 {
		t.Fatalf("go.mod: %+v", got)
	}
	got := s.write(t, p, within(t, goplsWithin), "a.go", "package m\n\nfunc F() int {\n\treturn x\n}\n")
	if got.Status != tool.DiagnosticsSettled || got.Errors != 1 || got.Items[0].Line != 4 {
		t.Fatalf("the module's first Go file: %+v", got)
	}
}
