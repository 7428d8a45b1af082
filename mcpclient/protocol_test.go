package mcpclient

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type addOut struct {
	Sum int `json:"sum"`
}

// memClient is a client of an in-process go-sdk server over an
// in-memory transport.
func memClient(t *testing.T, srv *mcp.Server) *Client {
	t.Helper()
	c, err := New(Server{Name: "mem", URL: "http://unused/"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.test.dial = func() mcp.Transport {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(context.Background(), st, nil); err != nil {
			t.Error(err)
		}
		return ct
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestProtocolInMemory(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "mem", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "add", Description: "adds", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "write", Title: "Write", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "disk full"}}}, nil
		})
	c := memClient(t, srv)
	reg, _ := tool.NewRegistry()
	ctx := context.Background()
	skipped, err := Register(ctx, reg, c)
	if err != nil || len(skipped) != 0 {
		t.Fatalf("Register: %v, skipped %v", err, skipped)
	}
	if got := strings.Join(reg.Names(), " "); got != "mcp__mem__add mcp__mem__write" {
		t.Fatalf("names %q", got)
	}
	decl := reg.Declarations()
	if d, _ := decl.Declared("mcp__mem__add"); d.Replay != tool.ReplaySafe || d.Mode != tool.Concurrent {
		t.Errorf("add declared %+v, want safe and concurrent", d)
	}
	if d, _ := decl.Declared("mcp__mem__write"); d.Replay != tool.ReplayNever || d.Mode != tool.Exclusive {
		t.Errorf("write declared %+v, want never and exclusive", d)
	}
	add, _ := reg.Lookup("mcp__mem__add")
	if !strings.Contains(string(add.Schema), `"a"`) || !strings.Contains(add.Description, "MCP server mem") {
		t.Errorf("add: schema %s, description %q", add.Schema, add.Description)
	}

	out := reg.Dispatch(ctx, &tool.Call{}, "mcp__mem__add", json.RawMessage(`{"a":2,"b":3}`))
	d, _ := out.Details.(Details)
	if out.IsError || !strings.Contains(out.Text, `"sum":5`) || string(d.Structured) != `{"sum":5}` {
		t.Fatalf("add: %+v", out)
	}
	out = reg.Dispatch(ctx, &tool.Call{}, "mcp__mem__write", nil)
	if out.Code != tool.Code(CodeToolError) || out.Text != "disk full" {
		t.Fatalf("write: %+v", out)
	}
	out = reg.Dispatch(ctx, &tool.Call{}, "mcp__mem__add", json.RawMessage(`{"a":"x"}`))
	if out.Code != tool.Code(CodeRequestFailed) && out.Code != tool.Code(CodeToolError) {
		t.Fatalf("add with bad arguments: %+v", out)
	}

	// The server changes add's declaration and says so: the registered
	// add is refused, the unchanged write still runs.
	mcp.AddTool(srv, &mcp.Tool{Name: "add", Description: "adds three"},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct{ A, B, C int }) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B + in.C}, nil
		})
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		stale := c.heard != c.cat.heard
		c.mu.Unlock()
		if stale || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	out = reg.Dispatch(ctx, &tool.Call{}, "mcp__mem__add", json.RawMessage(`{"a":2,"b":3}`))
	if out.Code != tool.Code(CodeToolChanged) {
		t.Fatalf("add after an announced change: %+v", out)
	}
	out = reg.Dispatch(ctx, &tool.Call{}, "mcp__mem__write", nil)
	if out.Code != tool.Code(CodeToolError) {
		t.Fatalf("write after add changed: %+v", out)
	}
	// The client itself calls the new add.
	res, err := c.Call(ctx, "add", json.RawMessage(`{"A":1,"B":2,"C":3}`))
	if err != nil || string(res.Structured) != `{"sum":6}` {
		t.Fatalf("Call(add) = %+v, %v", res, err)
	}

	srv.RemoveTools("write")
	time.Sleep(100 * time.Millisecond)
	out = reg.Dispatch(ctx, &tool.Call{}, "mcp__mem__write", nil)
	if out.Code != tool.Code(CodeUnknownTool) {
		t.Fatalf("write after it was removed: %+v", out)
	}
	c.Close()
	out = reg.Dispatch(ctx, &tool.Call{}, "mcp__mem__write", nil)
	if out.Code != tool.Code(CodeClosed) {
		t.Fatalf("after Close: %+v", out)
	}
}
