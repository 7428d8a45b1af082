package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// codeOf returns the code of err's *Error.
func codeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// settleGoroutines waits until the goroutine count is at most n, and
// fails t with the stacks when it does not within 10 s.
func settleGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, want at most %d:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHostileServer(t *testing.T) {
	s := newSession(t)
	bin := fakeServer(t)
	before := runtime.NumGoroutine()
	c := s.client(t, Server{Name: "fake", Command: bin})
	c.test.callTimeout = 3 * time.Second
	ctx := context.Background()
	reg, _ := tool.NewRegistry()
	skipped, err := Register(ctx, reg, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 1 || skipped[0].Code != CodeBadInputSchema || skipped[0].Tool != "not_object" {
		t.Fatalf("skipped %v, want not_object's bad schema", skipped)
	}
	store, err := blob.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	call := &tool.Call{Blobs: store}
	dispatch := func(name, args string) tool.Outcome {
		return reg.Dispatch(ctx, call, "mcp__fake__"+name, json.RawMessage(args))
	}

	if out := dispatch("echo", `{"text":"hi"}`); out.IsError || out.Text != "hi" {
		t.Fatalf("echo: %+v", out)
	}
	// A gigantic result spills to the blob store.
	out := dispatch("big", `{}`)
	d, _ := out.Details.(Details)
	if out.IsError || d.Overflow == nil || d.Overflow.Path == "" || len(out.Text) > 16<<10 {
		t.Fatalf("big: error %v, %d bytes, overflow %+v", out.IsError, len(out.Text), d.Overflow)
	}
	// Without a store it is cut, saying so.
	out = reg.Dispatch(ctx, &tool.Call{}, "mcp__fake__big", nil)
	if out.IsError || len(out.Text) > blob.OverflowThreshold+256 || !strings.Contains(out.Text, "output cut at") {
		t.Fatalf("big without a store: %d bytes, %q", len(out.Text), out.Text[len(out.Text)-100:])
	}
	// _meta is neither kept nor passed on.
	out = dispatch("meta", `{}`)
	if b, _ := json.Marshal(out); out.IsError || strings.Contains(string(b), "forward me") {
		t.Fatalf("meta: %s", b)
	}
	if out := dispatch("bad_output", `{}`); out.Code != tool.Code(CodeOutputMismatch) {
		t.Fatalf("bad_output: %+v", out)
	}
	if out := dispatch("good_output", `{}`); out.IsError {
		t.Fatalf("good_output: %+v", out)
	}

	// Each breach stops the server; the next call starts it again, at
	// most MaxRestarts times.
	for i, tc := range []struct {
		tool string
		code Code
	}{
		{"huge_line", CodeProtocol},
		{"garbage", CodeProtocol},
		{"batch", CodeProtocol},
	} {
		out := dispatch(tc.tool, `{}`)
		if out.Code != tool.Code(tc.code) {
			t.Fatalf("%s: %+v", tc.tool, out)
		}
		if !strings.Contains(out.Text, fmt.Sprintf("restart %d of %d", i+1, MaxRestarts)) {
			t.Errorf("%s: %q does not say which restart comes", tc.tool, out.Text)
		}
		if out := dispatch("echo", `{"text":"again"}`); out.Text != "again" && i < 2 {
			t.Fatalf("echo after %s: %+v", tc.tool, out)
		}
	}
	// The fourth end uses the last restart up; the next is refused.
	if out := dispatch("die", `{}`); out.Code != tool.Code(CodeCrashed) || !strings.Contains(out.Text, "status 3") || !strings.Contains(out.Text, "dying mid-call") {
		t.Fatalf("die: %+v", out)
	}
	if out := dispatch("echo", `{"text":"x"}`); out.Code != tool.Code(CodeRestartsExhausted) {
		t.Fatalf("echo past the restarts: %+v", out)
	}
	c.Close()
	settleGoroutines(t, before+2)
}

// hangBound tells a hang from a slow, busy machine; no test asserts a
// duration closer than this.
const hangBound = 2 * time.Minute

func TestHostileServerHangs(t *testing.T) {
	s := newSession(t)
	before := runtime.NumGoroutine()
	c := s.client(t, Server{Name: "fake", Command: fakeServer(t)})
	c.test.callTimeout = time.Second
	ctx := context.Background()
	began := time.Now()
	_, err := c.Call(ctx, "hang", nil)
	// The bound only tells a hang from a slow machine: the call includes
	// the server's lazy start.
	if codeOf(err) != CodeTimeout || time.Since(began) > hangBound {
		t.Fatalf("hang: %v after %v", err, time.Since(began))
	}
	// The server still answers others.
	if res, err := c.Call(ctx, "echo", json.RawMessage(`{"text":"ok"}`)); err != nil || res.Text != "ok" {
		t.Fatalf("echo after a hang: %+v, %v", res, err)
	}
	// A context that ends answers at once too.
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := c.Call(cctx, "hang", nil); codeOf(err) != CodeTimeout {
		t.Fatalf("hang with a context: %v", err)
	}
	began = time.Now()
	c.Close()
	if d := time.Since(began); d > hangBound {
		t.Errorf("Close took %v", d)
	}
	if _, err := c.Call(ctx, "echo", nil); codeOf(err) != CodeClosed {
		t.Fatalf("after Close: %v", err)
	}
	settleGoroutines(t, before+2)
}

func TestHostileServerChangesItsTools(t *testing.T) {
	s := newSession(t)
	ctx := context.Background()
	t.Run("announced", func(t *testing.T) {
		c := s.client(t, Server{Name: "fake", Command: fakeServer(t)})
		reg, _ := tool.NewRegistry()
		if _, err := Register(ctx, reg, c); err != nil {
			t.Fatal(err)
		}
		if out := reg.Dispatch(ctx, nil, "mcp__fake__change_announced", nil); out.IsError {
			t.Fatal(out.Text)
		}
		if out := reg.Dispatch(ctx, nil, "mcp__fake__echo", json.RawMessage(`{"text":"x"}`)); out.Code != tool.Code(CodeToolChanged) {
			t.Fatalf("echo after an announced change: %+v", out)
		}
		// Tools the change left alone still run.
		if out := reg.Dispatch(ctx, nil, "mcp__fake__good_output", nil); out.IsError {
			t.Fatalf("good_output: %+v", out)
		}
	})
	t.Run("unannounced", func(t *testing.T) {
		c := s.client(t, Server{Name: "fake", Command: fakeServer(t)})
		reg, _ := tool.NewRegistry()
		if _, err := Register(ctx, reg, c); err != nil {
			t.Fatal(err)
		}
		reg.Dispatch(ctx, nil, "mcp__fake__change", nil)
		if out := reg.Dispatch(ctx, nil, "mcp__fake__refuse", nil); out.Code != tool.Code(CodeRequestFailed) {
			t.Fatalf("refuse: %+v", out)
		}
		if out := reg.Dispatch(ctx, nil, "mcp__fake__echo", json.RawMessage(`{"text":"x"}`)); out.Code != tool.Code(CodeUnannouncedChange) {
			t.Fatalf("echo after an unannounced change: %+v", out)
		}
		if _, err := c.Call(ctx, "echo", json.RawMessage(`{"text":1}`)); codeOf(err) != CodeUnannouncedChange {
			t.Fatalf("Call(echo) after an unannounced change: %v", err)
		}
	})
	t.Run("unannounced across a restart", func(t *testing.T) {
		c := s.client(t, Server{Name: "restarted", Command: fakeServer(t)})
		reg, _ := tool.NewRegistry()
		if _, err := Register(ctx, reg, c); err != nil {
			t.Fatal(err)
		}
		reg.Dispatch(ctx, nil, "mcp__restarted__change", nil) // remembered in its TMPDIR (its own: the name is the subtest's)
		if out := reg.Dispatch(ctx, nil, "mcp__restarted__die", nil); out.Code != tool.Code(CodeCrashed) {
			t.Fatalf("die: %+v", out)
		}
		if out := reg.Dispatch(ctx, nil, "mcp__restarted__echo", json.RawMessage(`{"text":"x"}`)); out.Code != tool.Code(CodeUnannouncedChange) {
			t.Fatalf("echo after a restart with a changed declaration: %+v", out)
		}
		if out := reg.Dispatch(ctx, nil, "mcp__restarted__good_output", nil); out.IsError {
			t.Fatalf("good_output after the restart: %+v", out)
		}
	})
	t.Run("duplicate", func(t *testing.T) {
		c := s.client(t, Server{Name: "fake", Command: fakeServer(t), Args: []string{"-dup"}})
		reg, _ := tool.NewRegistry()
		skipped, err := Register(ctx, reg, c)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range skipped {
			found = found || (e.Code == CodeDuplicateTool && e.Tool == "echo")
		}
		if _, ok := reg.Lookup("mcp__fake__echo"); ok || !found {
			t.Fatalf("a duplicate echo: registered %v, skipped %v", ok, skipped)
		}
		if _, err := c.Call(ctx, "echo", nil); codeOf(err) != CodeDuplicateTool {
			t.Fatalf("Call(echo) of a duplicate: %v", err)
		}
	})
}

// TestJailedServerConfined: a jailed server cannot read outside its
// roots nor reach the network; the control, the same server run
// unjailed with the SDK's CommandTransport, does both.
func TestJailedServerConfined(t *testing.T) {
	s := newSession(t)
	secret := filepath.Join(s.outside, "secret")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	args := json.RawMessage(fmt.Sprintf(`{"read":%q,"dial":%q}`, secret, ln.Addr().String()))
	ctx := context.Background()

	c := s.client(t, Server{Name: "fake", Command: fakeServer(t)})
	res, err := c.Call(ctx, "probe", args)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Text, "read: ok") || strings.Contains(res.Text, "dial: ok") || strings.Contains(res.Text, "s3cret") {
		t.Fatalf("jailed probe: %s", res.Text)
	}
	// The workspace is readable, and not writable.
	if err := os.WriteFile(filepath.Join(s.ws, "f"), []byte("in the workspace"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = c.Call(ctx, "probe", json.RawMessage(fmt.Sprintf(`{"read":%q}`, filepath.Join(s.ws, "f"))))
	if err != nil || !strings.Contains(res.Text, "read: ok in the workspace") {
		t.Fatalf("jailed read of the workspace: %+v, %v", res, err)
	}
	if pol := c.pol; len(pol.WritableRoots) != 1 || !strings.HasPrefix(pol.WritableRoots[0], s.scratch) {
		t.Errorf("writable roots %v, want its own directory only", pol.WritableRoots)
	}

	// Control: unjailed, the same probe reads and dials.
	sdk := mcp.NewClient(&mcp.Implementation{Name: "control"}, nil)
	cs, err := sdk.Connect(ctx, &mcp.CommandTransport{Command: exec(fakeServer(t))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "probe", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	text := r.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(text, "read: ok s3cret") || !strings.Contains(text, "dial: ok") {
		t.Fatalf("control probe: %s", text)
	}
}

// TestDeafServer: a server that reads none of its input is stopped as
// hung once a write waits past WriteTimeout.
func TestDeafServer(t *testing.T) {
	s := newSession(t)
	before := runtime.NumGoroutine()
	c := s.client(t, Server{Name: "fake", Command: fakeServer(t), Args: []string{"-deaf"}})
	c.test.writeTimeout = time.Second
	args, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", 1<<20)})
	began := time.Now()
	_, err := c.Call(context.Background(), "echo", args)
	if codeOf(err) != CodeHung || time.Since(began) > hangBound {
		t.Fatalf("a deaf server: %v after %v", err, time.Since(began))
	}
	c.Close()
	settleGoroutines(t, before+2)
}
