package plane

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentloom/loom/mcpclient"
)

// TestCodeModeMCPServer: with an MCP server configured, code mode offers
// it as cap/mcp/<name>: a program calls its tool through the plane's
// client, code_mode's description names the server and its tool count,
// and fs_read cap://mcp/<name> documents the package.
func TestCodeModeMCPServer(t *testing.T) {
	t.Parallel()
	ws, cfg := testDirs(t)
	bin := filepath.Join(filepath.Dir(ws), "fakeserver")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-buildvcs=false", "-o", bin, "./mcpclient/internal/fakeserver")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the fake server: %v\n%s", err, out)
	}
	servers, err := mcpclient.ParseConfig(fmt.Appendf(nil, `{"mcpServers": {"fake": {"command": %q}}}`, bin))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Families = FamilyFiles | FamilyCodeMode
	cfg.MCPServers = servers
	p := newTestPlane(t, cfg)
	src := `package main

import (
	"context"
	"fmt"

	"cap/mcp/fake"
)

func main() {
	text := "through code mode"
	r, err := fake.Echo(context.Background(), fake.EchoInput{Text: &text})
	fmt.Println(r.Text, err)
}
`
	raw, _ := json.Marshal(map[string]any{"program": src, "within_ms": 600000})
	o := p.Registry.Dispatch(t.Context(), p.Call.At("op-1", "step-1", 0), "code_mode", raw)
	if o.IsError || !strings.Contains(o.Text, "through code mode <nil>\n") {
		t.Fatalf("%s: %s", o.Code, o.Text)
	}
	tl, _ := p.Registry.Lookup("code_mode")
	if !strings.Contains(tl.Description, `import "cap/mcp/fake" ("fake", `) {
		t.Errorf("code_mode's description does not name the server:\n%s", tl.Description)
	}
	doc, _ := json.Marshal(map[string]string{"path": "cap://mcp/fake"})
	if o := p.Registry.Dispatch(t.Context(), p.Call.At("op-2", "step-1", 0), "fs_read", doc); o.IsError ||
		!strings.Contains(o.Text, "func Echo(ctx context.Context, in EchoInput) (Result, error)") {
		t.Errorf("fs_read cap://mcp/fake:\n%s", o.Text)
	}
	q, _ := json.Marshal(map[string]string{"path": "cap://mcp?q=echoes"})
	if o := p.Registry.Dispatch(t.Context(), p.Call.At("op-3", "step-1", 0), "fs_read", q); o.IsError ||
		!strings.Contains(o.Text, "cap/mcp/fake.Echo") {
		t.Errorf("fs_read cap://mcp?q=echoes:\n%s", o.Text)
	}
}
