package codemode

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloom/loom/tool"
	"github.com/agentloom/loom/tool/mcpserve"
)

// The protocol versions on which an MCP server asks its client during a
// call, and on which it asks by an input-required result the client
// answers by retrying the call (mcpserve's two approval paths).
const (
	mcpElicitingVersion  = "2025-11-25"
	mcpRoundTripVersion  = "2026-07-28"
	mcpApprovalInputName = "agentloom_approval"
)

// TestApprovalThroughMCP: a code_mode call declaring a writable root is
// asked through mcpserve's approval flow, on both of its paths; accepted,
// the program starts once with the grant (its first effect happens once:
// nothing ran before the approval, nothing is replayed), and the client
// is asked once.
func TestApprovalThroughMCP(t *testing.T) {
	t.Parallel()
	for _, version := range []string{mcpElicitingVersion, mcpRoundTripVersion} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			s := newSession(t, map[string]string{"runs.txt": ""})
			granted := outsideDir(t, s, "granted")
			reg, err := tool.NewRegistry(s.eng.Tool())
			if err != nil {
				t.Fatal(err)
			}
			srv, err := mcpserve.New(reg, s.call, mcpserve.Options{ApproveWithElicitation: true})
			if err != nil {
				t.Fatal(err)
			}
			var asked atomic.Int32
			copts := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked.Add(1)
				if !strings.Contains(r.Params.Message, "writable_root "+granted) || !strings.Contains(r.Params.Message, ToolName) {
					t.Errorf("the question: %s", r.Params.Message)
				}
				return &mcp.ElicitResult{Action: "accept"}, nil
			}}
			if version == mcpRoundTripVersion {
				copts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cs := mcpConnect(t, ctx, srv, copts, version)
			src := mainWith([]string{"cap/fs", "context", "fmt"}, `ctx := context.Background()
	f, err := fs.Read(ctx, "runs.txt")
	if err != nil {
		panic(err)
	}
	fs.Write(ctx, "runs.txt", append(f.Content, "ran\n"...))
	if _, err := fs.Write(ctx, "`+granted+`/a.txt", []byte("granted\n")); err != nil {
		fmt.Println("refused:", err.(*fs.Error).Code)
	}`)
			params := &mcp.CallToolParams{Name: ToolName, Arguments: map[string]any{"program": src, "permissions": map[string]any{"writable_roots": []string{granted}}}}
			r, err := cs.CallTool(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			if version == mcpRoundTripVersion {
				if !r.NeedsInput() || r.RequestState == "" {
					t.Fatalf("the first call did not ask: %+v", r)
				}
				if b, _ := os.ReadFile(filepath.Join(s.ws, "runs.txt")); len(b) != 0 {
					t.Fatalf("the program ran before the approval: %q", b)
				}
				ask, _ := r.InputRequests[mcpApprovalInputName].(*mcp.ElicitParams)
				if ask == nil || !strings.Contains(ask.Message, "writable_root "+granted) {
					t.Fatalf("the question: %+v", ask)
				}
				asked.Add(1)
				params.RequestState, params.InputResponses = r.RequestState, mcp.InputResponseMap{mcpApprovalInputName: &mcp.ElicitResult{Action: "accept"}}
				if r, err = cs.CallTool(ctx, params); err != nil {
					t.Fatal(err)
				}
			}
			var out strings.Builder
			for _, c := range r.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					out.WriteString(tc.Text)
				}
			}
			if r.IsError || strings.Contains(out.String(), "refused:") || !strings.Contains(out.String(), "grants: writable_root "+granted) {
				t.Fatalf("isError %v:\n%s", r.IsError, out.String())
			}
			if n := asked.Load(); n != 1 {
				t.Errorf("the client was asked %d times, want once", n)
			}
			if b, _ := os.ReadFile(filepath.Join(s.ws, "runs.txt")); string(b) != "ran\n" {
				t.Errorf("the program ran %q; want once", b)
			}
			if _, err := os.Stat(filepath.Join(granted, "a.txt")); err != nil {
				t.Errorf("not written under the granted root: %v", err)
			}
		})
	}
}

// mcpConnect serves srv to an in-memory client asking for version.
func mcpConnect(t *testing.T, ctx context.Context, srv *mcpserve.Server, copts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Run(ctx, st)
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "approver", Version: "1"}, copts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		cancel()
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	return cs
}
