package lsp

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/internal/lsptest"
)

// gopls answers pulls and publishes too: each distinct file keeps its
// last publication (up to 64 kept findings) in its waiter.
func TestRedGoplsRetains(t *testing.T) {
	bin := lsptest.RequireGopls(t)
	s := newSession(t)
	os.WriteFile(filepath.Join(s.ws, "go.mod"), []byte("module example.com/m\n\ngo 1.22\n"), 0o644)
	p := s.plane(t, Gopls(bin))
	var body strings.Builder
	body.WriteString("package m\n\nfunc F() {\n")
	for i := 0; i < 70; i++ {
		fmt.Fprintf(&body, "\t_ = %s%d\n", strings.Repeat("x", 900), i)
	}
	body.WriteString("}\n")
	for i := 0; i < 5; i++ {
		got := s.write(t, p, within(t, goplsWithin), fmt.Sprintf("f%d.go", i), strings.ReplaceAll(body.String(), "func F", fmt.Sprintf("func F%d", i)))
		t.Logf("%d: %s errors=%d kept=%d", i, got.Status, got.Errors, len(got.Items))
	}
	held, bytes := 0, 0
	for _, d := range p.servers[0].run.docs {
		if d.waiter != nil && len(d.waiter.ch) > 0 {
			held++
			pub := <-d.waiter.ch
			for _, it := range pub.items {
				bytes += len(it.Message)
			}
		}
	}
	if held != 0 {
		t.Errorf("docs %d, holding a publication %d, message bytes held %d", len(p.servers[0].run.docs), held, bytes)
	}
}

// A command sets CC in the go env file under HOME (shared with the
// server); a cgo file makes gopls's go list run it.
func TestRedGoplsRunsAWorkspaceChosenProgram(t *testing.T) {
	bin := lsptest.RequireGopls(t)
	s := newSession(t)
	os.WriteFile(filepath.Join(s.ws, "go.mod"), []byte("module example.com/m\n\ngo 1.22\n"), 0o644)
	marker := filepath.Join(s.scratch, "ran")
	cc := filepath.Join(s.scratch, "cc.sh")
	os.WriteFile(cc, []byte(fmt.Sprintf("#!/bin/sh\n{ echo ran \"$@\"; id; touch %s/planted-by-cc && echo wrote-ws || echo ws-ro; } >> %s 2>&1\nexec gcc \"$@\"\n", s.ws, marker)), 0o755)
	cfg := filepath.Join(s.env["HOME"], ".config", "go")
	os.MkdirAll(cfg, 0o755)
	os.WriteFile(filepath.Join(cfg, "env"), []byte("CC="+cc+"\nCGO_ENABLED=1\n"), 0o644)
	p := s.plane(t, Gopls(bin))
	got := s.write(t, p, within(t, goplsWithin), "a.go", "package m\n\n// #include <stdio.h>\nimport \"C\"\n\nfunc F() int {\n\treturn x\n}\n")
	t.Logf("%s errors=%d %v", got.Status, got.Errors, messages(got))
	out, err := os.ReadFile(marker)
	t.Logf("the chosen program ran: %v (%d bytes of its log)", err == nil, len(out))
	// It may run: inside the server's jail, where the workspace is
	// read-only.
	if _, err := os.Stat(filepath.Join(s.ws, "planted-by-cc")); err == nil || strings.Contains(string(out), "wrote-ws") {
		t.Errorf("a program the workspace chose wrote the workspace from the server's jail")
	}
}
