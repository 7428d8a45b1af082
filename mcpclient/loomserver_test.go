package mcpclient

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/tool"
)

// loomServerConfig is examples/mcpserver over s's workspace.
func loomServerConfig(tb testing.TB, s *testSession) Server {
	return Server{Name: "loom", Command: loomServer(tb), Args: []string{"-workspace", s.ws, "-warm=false"}}
}

// TestLoomServerJailed runs Loom's own MCP server, examples/mcpserver, as
// a stdio server in the jail through the client: its tools registered
// namespaced, with replay safety and scheduling from its annotations, a
// read of the workspace answered, a write refused (the workspace is
// read-only to the server).
func TestLoomServerJailed(t *testing.T) {
	s := newSession(t)
	if err := os.WriteFile(filepath.Join(s.ws, "hello.txt"), []byte("hello from the workspace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := s.client(t, loomServerConfig(t, s))
	ctx := context.Background()
	reg, _ := tool.NewRegistry()
	skipped, err := Register(ctx, reg, c)
	if err != nil {
		t.Fatalf("Register: %v (%+v)", err, c.Status())
	}
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	decl := reg.Declarations()
	for name, want := range map[string]struct {
		replay tool.ReplaySafety
		mode   tool.ExecMode
	}{
		"fs_read":  {tool.ReplaySafe, tool.Concurrent},
		"grep":     {tool.ReplaySafe, tool.Concurrent},
		"fs_edit":  {tool.ReplaySafe, tool.Exclusive},
		"bash":     {tool.ReplayNever, tool.Exclusive},
		"job_poll": {tool.ReplaySafe, tool.Concurrent},
	} {
		d, ok := decl.Declared(ToolName("loom", name))
		if !ok || d.Replay != want.replay || d.Mode != want.mode {
			t.Errorf("%s: declared %+v (%v), want %+v", name, d, ok, want)
		}
	}
	out := reg.Dispatch(ctx, nil, "mcp__loom__fs_read", json.RawMessage(`{"path":"hello.txt"}`))
	if out.IsError || !strings.Contains(out.Text, "hello from the workspace") {
		t.Fatalf("fs_read: %+v", out)
	}
	out = reg.Dispatch(ctx, nil, "mcp__loom__fs_write", json.RawMessage(`{"path":"new.txt","content":"x"}`))
	if !out.IsError {
		t.Fatalf("fs_write in a read-only workspace: %+v", out)
	}
	if _, err := os.Stat(filepath.Join(s.ws, "new.txt")); err == nil {
		t.Fatal("the jailed server wrote the workspace")
	}
	if st := c.Status(); !st.Running || st.Starts != 1 {
		t.Errorf("status %+v", st)
	}
}
