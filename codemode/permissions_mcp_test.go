package codemode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloom/loom/mcpserve"
	"github.com/agentloom/loom/tool"
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

// withoutSubject is code_mode as a tool that names nothing it runs: its
// raises reach the host without a Subject, so the host has only the
// call's arguments. It is the control of the tests below.
func withoutSubject(t tool.Tool) tool.Tool {
	run := t.Run
	t.Run = func(ctx context.Context, c *tool.Call, args json.RawMessage) tool.Outcome {
		if raise := c.RaiseRefusal; raise != nil {
			cc := *c
			cc.RaiseRefusal = func(ctx context.Context, r tool.RaisedRefusal) tool.Escalation {
				r.Subject = nil
				return raise(ctx, r)
			}
			c = &cc
		}
		return run(ctx, c, args)
	}
	return t
}

// swapSession is a session whose workspace file tools/p.go holds program
// A (writing "A" under the granted directory), and the call running it
// with a grant of that directory.
func swapSession(t *testing.T) (s *session, granted, file, a, b string, params *mcp.CallToolParams) {
	t.Helper()
	s = newSession(t, nil)
	granted = outsideDir(t, s, "granted")
	a, b = swapPrograms(granted)
	file = filepath.Join(s.ws, "tools", "p.go")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(a), 0o644); err != nil {
		t.Fatal(err)
	}
	params = &mcp.CallToolParams{Name: ToolName, Arguments: map[string]any{"program_path": "tools/p.go", "permissions": map[string]any{"writable_roots": []string{granted}}}}
	return
}

func resultText(r *mcp.CallToolResult) string {
	var out strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out.WriteString(tc.Text)
		}
	}
	return out.String()
}

// TestApprovalQuestionShowsTheProgramThatRuns: the attack of a file
// swapped back to a harmless program while the operator is asked. The
// question carries the program code_mode read and built (its text and
// digest), the one that then runs; the control, the same call through a
// tool that names nothing it runs, is asked with the file's name alone,
// which by then holds the harmless program.
func TestApprovalQuestionShowsTheProgramThatRuns(t *testing.T) {
	t.Parallel()
	for _, named := range []bool{true, false} {
		t.Run(fmt.Sprint("subject=", named), func(t *testing.T) {
			t.Parallel()
			s, granted, file, a, b, params := swapSession(t)
			cm := s.eng.Tool()
			if !named {
				cm = withoutSubject(cm)
			}
			reg, err := tool.NewRegistry(cm)
			if err != nil {
				t.Fatal(err)
			}
			srv, err := mcpserve.New(reg, s.call, mcpserve.Options{ApproveWithElicitation: true})
			if err != nil {
				t.Fatal(err)
			}
			var question string
			copts := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				// The background job swaps the file back before the
				// operator opens it.
				if err := os.WriteFile(file, []byte(b), 0o644); err != nil {
					t.Error(err)
				}
				question = r.Params.Message
				return &mcp.ElicitResult{Action: "accept"}, nil
			}}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			r, err := mcpConnect(t, ctx, srv, copts, mcpElicitingVersion).CallTool(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(filepath.Join(granted, "ran.txt")); r.IsError || string(got) != "A\n" {
				t.Fatalf("program A did not run with the grant: ran.txt %q\n%s", got, resultText(r))
			}
			sum := sha256.Sum256([]byte(a))
			shows := strings.Contains(question, "│ →   // program A\n") && strings.Contains(question, "sha256 "+hex.EncodeToString(sum[:]))
			if shows != named || strings.Contains(question, "// program B") || !strings.Contains(question, "tools/p.go") {
				t.Errorf("subject=%v: the question shows program A: %v (want %v):\n%s", named, shows, named, question)
			}
		})
	}
}

// TestApprovalRoundTripRefusesASwappedProgram: on a multi round-trip
// client, the question is answered by retrying the call, which reads the
// file again. A file swapped between the question and the retry is not
// what the user answered, and nothing runs; the control, through a tool
// that names nothing it runs, lets the retry run the swapped program
// with the grant.
func TestApprovalRoundTripRefusesASwappedProgram(t *testing.T) {
	t.Parallel()
	for _, named := range []bool{true, false} {
		t.Run(fmt.Sprint("subject=", named), func(t *testing.T) {
			t.Parallel()
			s, granted, file, _, b, params := swapSession(t)
			cm := s.eng.Tool()
			if !named {
				cm = withoutSubject(cm)
			}
			reg, err := tool.NewRegistry(cm)
			if err != nil {
				t.Fatal(err)
			}
			srv, err := mcpserve.New(reg, s.call, mcpserve.Options{ApproveWithElicitation: true})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			copts := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					t.Error("asked during the call on a multi round-trip version")
					return &mcp.ElicitResult{Action: "decline"}, nil
				}}
			cs := mcpConnect(t, ctx, srv, copts, mcpRoundTripVersion)
			first, err := cs.CallTool(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			ask, _ := first.InputRequests[mcpApprovalInputName].(*mcp.ElicitParams)
			if !first.NeedsInput() || ask == nil {
				t.Fatalf("the first call did not ask: %+v", first)
			}
			if named && !strings.Contains(ask.Message, "│ →   // program A\n") {
				t.Errorf("the question does not show program A:\n%s", ask.Message)
			}
			if err := os.WriteFile(file, []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
			params.RequestState, params.InputResponses = first.RequestState, mcp.InputResponseMap{mcpApprovalInputName: &mcp.ElicitResult{Action: "accept"}}
			r, err := cs.CallTool(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			ran, _ := os.ReadFile(filepath.Join(granted, "ran.txt"))
			if named {
				if !r.IsError || len(ran) != 0 || !strings.Contains(resultText(r), "other than what the approval question showed") {
					t.Errorf("a retry running a swapped program: isError=%v ran.txt %q\n%s", r.IsError, ran, resultText(r))
				}
				return
			}
			if r.IsError || string(ran) != "B\n" {
				t.Errorf("control: the swapped program did not run with the grant: ran.txt %q\n%s", ran, resultText(r))
			}
		})
	}
}
