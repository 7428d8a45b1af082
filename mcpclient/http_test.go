package mcpclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentloom/loom/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStreamableHTTPServer: a streamable-HTTP server is reached with its
// configured headers, its tools registered and called.
func TestStreamableHTTPServer(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "web", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "add", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Token") != "t0k" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	servers, err := ParseConfig([]byte(`{"mcpServers": {"web": {"type": "http", "url": "` + ts.URL + `", "headers": {"X-Token": "t0k"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(servers[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reg, _ := tool.NewRegistry()
	if _, err := Register(context.Background(), reg, c); err != nil {
		t.Fatal(err)
	}
	out := reg.Dispatch(context.Background(), nil, "mcp__web__add", json.RawMessage(`{"a":1,"b":41}`))
	if out.IsError || !strings.Contains(out.Text, "42") {
		t.Fatalf("add: %+v", out)
	}

	// Without the header, the server refuses to start the session.
	bare, err := New(Server{Name: "bare", URL: ts.URL}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	if _, _, err := bare.Tools(context.Background()); codeOf(err) != CodeCrashed {
		t.Fatalf("without the header: %v", err)
	}
}
