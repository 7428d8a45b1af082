package plane

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/hashline"
	"github.com/agentloom/loom/internal/lsptest"
	"github.com/agentloom/loom/lsp"
	"github.com/agentloom/loom/tool"
)

// fakeServer is the scripted language server, built once per test
// binary and removed by TestMain.
var fakeServer lsptest.Fake

func writeFile(t *testing.T, p *Plane, path, content string) tool.Outcome {
	t.Helper()
	raw, _ := json.Marshal(map[string]string{"path": path, "content": content})
	return p.Registry.Dispatch(t.Context(), p.CallFor(DefaultStrand, "op"), "fs_write", raw)
}

// TestPlaneRunsTheConfiguredLanguageServers: a server the host adds by
// configuration diagnoses what fs_write lands, the plane reports it, and
// Close shuts it down.
func TestPlaneRunsTheConfiguredLanguageServers(t *testing.T) {
	t.Parallel()
	_, cfg := testDirs(t)
	cfg.Families = FamilyFiles
	fake := lsp.Server{Name: "fake", Command: []string{fakeServer.Path(t), "-mode", "publish"},
		Files: []lsp.FilePattern{{Pattern: "*.txt", LanguageID: "plaintext"}}}
	var detected []lsp.Server
	cfg.LanguageServers = func(found []lsp.Server) []lsp.Server {
		detected = found
		return []lsp.Server{fake}
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if len(detected) > 0 && detected[0].Name != lsp.GoplsName {
		t.Errorf("detected %+v", detected)
	}
	if p.LanguageServers == nil {
		t.Fatal("no language servers")
	}
	if st := p.LanguageServers.Servers(); len(st) != 1 || st[0].State != lsp.StateIdle {
		t.Fatalf("before any write: %+v", st)
	}
	o := writeFile(t, p, "a.txt", "fine\nERR here\n")
	if o.IsError {
		t.Fatal(o.Text)
	}
	want := fmt.Sprintf("diagnostics (fake): 1 error in a.txt:\n  a.txt:2 error [2:%s]: flagged: ERR here (fake)\n", hashline.AnchorOf("ERR here"))
	if !strings.HasSuffix(o.Text, want) {
		t.Errorf("answer:\n%s\nwant it to end:\n%s", o.Text, want)
	}
	if d := o.Details.(tool.WriteDetails).Diagnostics; len(d) != 1 || d[0].Status != tool.DiagnosticsSettled {
		t.Errorf("details %+v", d)
	}
	if o := writeFile(t, p, "notes.md", "ERR\n"); strings.Contains(o.Text, "diagnostics") {
		t.Errorf("a file no server owns got a diagnosis:\n%s", o.Text)
	}
	if st := p.LanguageServers.Servers(); st[0].State != lsp.StateRunning || st[0].Starts != 1 {
		t.Errorf("after a write: %+v", st)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if st := p.LanguageServers.Servers(); st[0].State != lsp.StateClosed {
		t.Errorf("after Close: %+v", st)
	}
}

// TestPlaneWithoutLanguageServers: a host that runs none, or leaves the
// file tools out, gets no language-server plane and today's answers.
func TestPlaneWithoutLanguageServers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		set  func(*Config)
	}{
		{"none configured", func(c *Config) {
			c.Families = FamilyFiles
			c.LanguageServers = func([]lsp.Server) []lsp.Server { return nil }
		}},
		{"no file tools", func(c *Config) { c.Families = FamilyGrep }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, cfg := testDirs(t)
			tc.set(&cfg)
			p := newTestPlane(t, cfg)
			if p.LanguageServers != nil {
				t.Fatalf("language servers: %+v", p.LanguageServers.Servers())
			}
			if cfg.Families.Has(FamilyFiles) {
				if o := writeFile(t, p, "a.go", "package m\n\nvar x = y\n"); o.IsError || strings.Contains(o.Text, "diagnostics") {
					t.Errorf("answer:\n%s", o.Text)
				}
			}
		})
	}
}

func TestPlaneRefusesALanguageServerThatCannotRun(t *testing.T) {
	t.Parallel()
	_, cfg := testDirs(t)
	cfg.LanguageServers = func([]lsp.Server) []lsp.Server { return []lsp.Server{{Name: "nameless"}} }
	if _, err := New(cfg); tool.CodeOf(err) != CodeSetupFailed || !strings.Contains(err.Error(), "lsp_invalid_config") && !strings.Contains(err.Error(), "command") {
		t.Errorf("got %v", err)
	}
}

// TestPlaneDiagnosesGoWithGopls: by default the plane detects gopls and
// fs_write answers with its diagnostics, the toolchain profiles giving it
// the module's caches. It skips without gopls unless LOOM_REQUIRE_GOPLS=1.
func TestPlaneDiagnosesGoWithGopls(t *testing.T) {
	t.Parallel()
	lsptest.RequireGopls(t)
	ws, cfg := testDirs(t)
	cfg.Families = FamilyFiles
	p := newTestPlane(t, cfg)
	if p.LanguageServers == nil || p.LanguageServers.Servers()[0].Name != lsp.GoplsName {
		t.Fatal("gopls was not detected")
	}
	if o := writeFile(t, p, "go.mod", "module example.com/m\n\ngo 1.22\n"); o.IsError {
		t.Fatal(o.Text)
	}
	var o tool.Outcome
	// The first write may find gopls still loading the module (unsettled
	// after tool.DiagnosticsWait); it settles once loaded.
	for range 10 {
		o = writeFile(t, p, filepath.Join(ws, "a.go"), "package m\n\nfunc F() int {\n\treturn x\n}\n")
		if !strings.Contains(o.Text, "unsettled") {
			break
		}
	}
	want := fmt.Sprintf("diagnostics (gopls): 1 error in a.go:\n  a.go:4 error [4:%s]: undefined: x (compiler)\n", hashline.AnchorOf("\treturn x"))
	if !strings.HasSuffix(o.Text, want) {
		t.Fatalf("answer:\n%s\nwant it to end:\n%s", o.Text, want)
	}
	o = writeFile(t, p, "a.go", "package m\n\nfunc F() int {\n\treturn 1\n}\n")
	if !strings.HasSuffix(o.Text, "diagnostics (gopls): a.go clean\n") {
		t.Errorf("answer:\n%s", o.Text)
	}
}

// TestCodeModeWritesAreDiagnosed: a program's fs.write and fs.edit land
// their file and answer the language server's diagnosis, as fs_write
// renders it.
func TestCodeModeWritesAreDiagnosed(t *testing.T) {
	t.Parallel()
	_, cfg := testDirs(t)
	cfg.Families = FamilyFiles | FamilyCodeMode
	cfg.LanguageServers = func([]lsp.Server) []lsp.Server {
		return []lsp.Server{{Name: "fake", Command: []string{fakeServer.Path(t), "-mode", "publish"},
			Files: []lsp.FilePattern{{Pattern: "*.txt", LanguageID: "plaintext"}}}}
	}
	p := newTestPlane(t, cfg)
	src := `package main

import (
	"context"
	"fmt"

	"cap/fs"
)

func main() {
	ctx := context.Background()
	w, err := fs.Write(ctx, "a.txt", []byte("fine\nERR here\n"))
	if err != nil {
		panic(err)
	}
	fmt.Print("write: ", w.Diagnostics)
	e, err := fs.Edit(ctx, "a.txt", fs.Replacement{Find: "ERR here", Replace: "all good"})
	if err != nil {
		panic(err)
	}
	fmt.Print("edit: ", e.Diagnostics)
}
`
	raw, _ := json.Marshal(map[string]any{"program": src, "within_ms": 600000})
	o := p.Registry.Dispatch(t.Context(), p.Call.At("op-1", "step-1", 0), "code_mode", raw)
	if o.IsError {
		t.Fatalf("%s: %s", o.Code, o.Text)
	}
	want := fmt.Sprintf("write: diagnostics (fake): 1 error in a.txt:\n  a.txt:2 error [2:%s]: flagged: ERR here (fake)\n", hashline.AnchorOf("ERR here"))
	if !strings.Contains(o.Text, want) || !strings.Contains(o.Text, "edit: diagnostics (fake): a.txt clean\n") {
		t.Fatalf("answer:\n%s\nwant it to hold:\n%s", o.Text, want)
	}
}
