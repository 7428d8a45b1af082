package plane

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/agentloom/loom/mcpclient"
	"github.com/agentloom/loom/tool"
)

// TestPlaneRegistersMCPServers: the servers of a parsed "mcpServers"
// configuration have their tools registered namespaced after the
// families', run jailed; a server that cannot start and a tool left out
// are said in MCPRefused; Close shuts the servers down.
func TestPlaneRegistersMCPServers(t *testing.T) {
	t.Parallel()
	ws, cfg := testDirs(t)
	bin := filepath.Join(filepath.Dir(ws), "fakeserver")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-buildvcs=false", "-o", bin, "./mcpclient/internal/fakeserver")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the fake server: %v\n%s", err, out)
	}
	servers, err := mcpclient.ParseConfig(fmt.Appendf(nil, `{"mcpServers": {"fake": {"command": %q}, "gone": {"command": "/nonexistent/server"}}}`, bin))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Families = FamilyFiles
	cfg.MCPServers = servers
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	names := p.Registry.Names()
	if !slices.Contains(names, "mcp__fake__echo") || !slices.Contains(names, "fs_read") {
		t.Fatalf("registered %v", names)
	}
	if reg := p.Registry.Registered(); reg[0].Name != "fs_read" {
		t.Errorf("the families' tools do not come first: %s", reg[0].Name)
	}
	var codes []mcpclient.Code
	for _, e := range p.MCPRefused {
		codes = append(codes, e.Code)
	}
	if !slices.Contains(codes, mcpclient.CodeServerNotFound) || !slices.Contains(codes, mcpclient.CodeBadInputSchema) {
		t.Errorf("refused %v", p.MCPRefused)
	}
	if len(p.MCP) != 2 {
		t.Fatalf("%d clients", len(p.MCP))
	}
	out := p.Registry.Dispatch(t.Context(), p.CallFor(DefaultStrand, "op"), "mcp__fake__echo", json.RawMessage(`{"text":"through the plane"}`))
	if out.IsError || out.Text != "through the plane" {
		t.Fatalf("echo: %+v", out)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	out = p.Registry.Dispatch(t.Context(), p.CallFor(DefaultStrand, "op"), "mcp__fake__echo", nil)
	if out.Code != tool.Code(mcpclient.CodeClosed) {
		t.Fatalf("echo after Close: %+v", out)
	}
}
