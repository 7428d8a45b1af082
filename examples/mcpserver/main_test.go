package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/mcpserve"
	"github.com/agentloom/loom/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// requireNodeEnv, set to 1, turns a missing TypeScript client into a
// failure instead of a skip (CI sets it after running install.sh).
const requireNodeEnv = "LOOM_REQUIRE_NODE_CLIENT"

// tsClientDir holds the TypeScript client script and its node_modules.
const tsClientDir = "testdata/tsclient"

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// serverBinary builds this program once per test run.
func serverBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcpserver-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "mcpserver")
		out, err := exec.Command("go", "build", "-buildvcs=false", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	if fakePath != "" {
		os.RemoveAll(filepath.Dir(fakePath))
	}
	os.Exit(code)
}

// serverCmd runs the built server on ws with its own user cache
// directory, so the blob store and scratch it keeps there are the test's.
func serverCmd(t testing.TB, bin, ws string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, append([]string{"-workspace", ws, "-warm=false"}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	return cmd
}

// dirs returns a fresh workspace and a directory outside it.
func dirs(t *testing.T) (ws, outside string) {
	root := t.TempDir()
	ws, outside = filepath.Join(root, "ws"), filepath.Join(root, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return ws, outside
}

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

type progressLog struct {
	mu    sync.Mutex
	notes []*mcp.ProgressNotificationParams
}

func (p *progressLog) add(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notes = append(p.notes, r.Params)
}

func (p *progressLog) snapshot() []*mcp.ProgressNotificationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.notes)
}

// TestGoClientEndToEnd drives the built server with the Go SDK's client.
func TestGoClientEndToEnd(t *testing.T) {
	bin := serverBinary(t)
	ws, outside := dirs(t)
	var stderr strings.Builder
	cmd := serverCmd(t, bin, ws)
	cmd.Stderr = &stderr
	progress := &progressLog{}
	client := mcp.NewClient(&mcp.Implementation{Name: "go-e2e", Version: "1"}, &mcp.ClientOptions{ProgressNotificationHandler: progress.add})
	ctx := context.Background()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer func() {
		cs.Close()
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	}()
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return r
	}

	if init := cs.InitializeResult(); init.ServerInfo.Name != "loom" {
		t.Errorf("server info = %+v", init.ServerInfo)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, lt := range tools.Tools {
		names = append(names, lt.Name)
	}
	want := planeToolNames(t)
	slices.Sort(want)
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Errorf("tools/list = %v, want the whole plane's %v", names, want)
	}

	// fs_write, fs_read, fs_edit with the read's anchors.
	if r := call("fs_write", map[string]any{"path": "go/hello.txt", "content": "one\ntwo\nthree\n"}); r.IsError {
		t.Fatalf("fs_write: %s", text(r))
	}
	r := call("fs_read", map[string]any{"path": "go/hello.txt"})
	sc, _ := r.StructuredContent.(map[string]any)
	digest, _ := sc["digest"].(string)
	m := regexp.MustCompile(`(?m)^2:([0-9a-f]{8})\|two$`).FindStringSubmatch(text(r))
	if r.IsError || digest == "" || m == nil {
		t.Fatalf("fs_read: digest %q, text:\n%s", digest, text(r))
	}
	r = call("fs_edit", map[string]any{"path": "go/hello.txt", "digest": digest, "hunks": []any{
		map[string]any{"op": "replace", "start": "2:" + m[1], "lines": []string{"TWO"}},
	}})
	if r.IsError {
		t.Fatalf("fs_edit: %s", text(r))
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "go/hello.txt")); string(got) != "one\nTWO\nthree\n" {
		t.Errorf("file after edit = %q", got)
	}

	// The families beyond files and shell answer on the server's strand:
	// todo, remember, and history_search finding the note.
	if r := call("todo", map[string]any{"op": "init", "items": []string{"write the test"}}); r.IsError || !strings.Contains(text(r), "write the test") {
		t.Errorf("todo: %s", text(r))
	}
	if r := call("remember", map[string]any{"title": "quokka build flag", "description": "when building", "note": "use -tags quokka", "kind": "fact"}); r.IsError {
		t.Errorf("remember: %s", text(r))
	}
	if r := call("history_search", map[string]any{"query": "quokka"}); r.IsError || !strings.Contains(text(r), "kind=note") || !strings.Contains(text(r), "use -tags") {
		t.Errorf("history_search of the note: %s", text(r))
	}

	// A bad argument is an in-band error.
	if r := call("fs_read", map[string]any{"path": 5}); !r.IsError || !strings.Contains(text(r), "invalid arguments") {
		t.Errorf("bad argument: isError=%v %s", r.IsError, text(r))
	}
	// An unknown tool is a protocol error, and the session goes on.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool"}); err == nil {
		t.Error("an unknown tool was accepted")
	}

	// bash: inside the workspace works, outside fails.
	if r := call("bash", map[string]any{"command": "echo inside > go/bash.txt && cat go/bash.txt"}); r.IsError || !strings.Contains(text(r), "inside") {
		t.Fatalf("bash inside: %s", text(r))
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "go/bash.txt")); string(got) != "inside\n" {
		t.Errorf("jailed write = %q", got)
	}
	wd, _ := os.Getwd()
	for _, target := range []string{filepath.Join(outside, "escape.txt"), filepath.Join(wd, "testdata", "escape.txt")} {
		t.Cleanup(func() { os.Remove(target) })
		r := call("bash", map[string]any{"command": fmt.Sprintf("echo escaped > '%s'", target)})
		if !r.IsError {
			t.Errorf("bash wrote outside the workspace to %s: %s", target, text(r))
		}
		if _, err := os.Stat(target); err == nil {
			t.Errorf("%s exists after a jailed write outside the workspace", target)
		}
	}

	// A long command reports its output tail as progress.
	params := &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "for i in 1 2 3 4 5; do echo tick $i; sleep 0.3; done"}}
	params.SetProgressToken("ticks")
	if r, err := cs.CallTool(ctx, params); err != nil || r.IsError {
		t.Fatalf("long bash: %v %v", err, r)
	}
	notes := progress.snapshot()
	if len(notes) == 0 {
		t.Fatal("no progress notification for a long command")
	}
	for i, n := range notes {
		if n.ProgressToken != "ticks" || !strings.Contains(n.Message, "tick") {
			t.Errorf("progress %d = %+v", i, n)
		}
		if i > 0 && n.Progress <= notes[i-1].Progress {
			t.Errorf("progress %d does not increase: %v after %v", i, n.Progress, notes[i-1].Progress)
		}
	}

	// Cancelling a long bash kills its process tree; the session goes on.
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{
			"command": "while true; do echo t >> go/ticks; sleep 0.05; done", "timeout_ms": 600000}})
		errc <- err
	}()
	ticks := filepath.Join(ws, "go/ticks")
	waitFor(t, func() bool { fi, err := os.Stat(ticks); return err == nil && fi.Size() > 0 }, "the long command to start")
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call = %v", err)
	}
	waitFor(t, func() bool { return stable(ticks, 500*time.Millisecond) }, "the cancelled command to stop writing")
	if err := cs.Ping(ctx, nil); err != nil {
		t.Fatalf("ping after cancellation: %v", err)
	}
	if r := call("fs_read", map[string]any{"path": "go/hello.txt"}); r.IsError || !strings.Contains(text(r), "|TWO") {
		t.Errorf("read after cancellation: %s", text(r))
	}
}

// waitFor polls cond for up to 20 s.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// stable reports whether path's size stays the same for d.
func stable(path string, d time.Duration) bool {
	a, err := os.Stat(path)
	if err != nil {
		return false
	}
	time.Sleep(d)
	b, err := os.Stat(path)
	return err == nil && a.Size() == b.Size()
}

// rawServer is the built server driven with raw lines on stdin.
type rawServer struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Reader
}

func startRawServer(t *testing.T) *rawServer {
	bin := serverBinary(t)
	ws, _ := dirs(t)
	cmd := serverCmd(t, bin, ws)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server exited with %v\n%s", err, stderr.String())
			}
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Errorf("server did not exit when its input ended")
		}
	})
	r := &rawServer{t: t, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if got := r.next(); !strings.Contains(got, `"id":0,"result"`) {
		t.Fatalf("initialize answered %s", got)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

func (r *rawServer) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

func (r *rawServer) next() string {
	r.t.Helper()
	c := make(chan string, 1)
	go func() {
		line, _ := r.out.ReadString('\n')
		c <- line
	}()
	select {
	case line := <-c:
		return line
	case <-time.After(30 * time.Second):
		r.t.Fatal("no answer from the server")
		return ""
	}
}

// TestRawBadInputOverStdio sends bad input to the built server, each
// followed by a ping that must be answered.
func TestRawBadInputOverStdio(t *testing.T) {
	huge := strings.Repeat("x", tool.MaxArgumentBytes+1)
	cases := []struct {
		name string
		line string
		want string // substring of the answer
	}{
		{"malformed_json", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{`, `"id":1,"error":{"code":-32700`},
		{"not_jsonrpc", `{"hello":"world"}`, `"id":null,"error":{"code":-32600`},
		{"binary_garbage", "\x00\x01\x02\xff", `"id":null,"error":{"code":-32700`},
		{"unknown_tool", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"rm_rf","arguments":{}}}`, `"id":2,"error":{"code":-32602`},
		{"wrong_argument_types", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fs_write","arguments":{"path":["a"],"content":7}}}`, `"id":3,"result":{"_meta":{"agentloom/code":"invalid_arguments"},"content":[{"type":"text","text":"invalid arguments for fs_write`},
		{"wrong_param_types", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":{"x":1}}}`, `"id":4,"error":{"code":-32602`},
		{"huge_arguments", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"fs_write","arguments":{"path":"big.txt","content":"` + huge + `"}}}`, `"_meta":{"agentloom/code":"arguments_too_large"}`},
		{"over_message_bound", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"fs_write","arguments":{"path":"big.txt","content":"` + strings.Repeat("y", mcpserve.MaxMessageBytes) + `"}}}`, `"id":6,"error":{"code":-32600`},
	}
	r := startRawServer(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r.t = t
			r.send(c.line)
			got := r.next()
			if !strings.Contains(got, c.want) {
				t.Errorf("answer = %.300s\nwant it to contain %s", got, c.want)
			}
			r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"ping-%d","method":"ping"}`, i))
			if got := r.next(); !strings.Contains(got, fmt.Sprintf(`"id":"ping-%d","result"`, i)) {
				t.Fatalf("ping after %s answered %.300s", c.name, got)
			}
		})
	}
}

// TestTypeScriptClient drives the built server with the reference
// TypeScript client (testdata/tsclient/client.mjs).
func TestTypeScriptClient(t *testing.T) {
	if _, err := os.Stat(filepath.Join(tsClientDir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		msg := "the TypeScript MCP client is not installed; run " + tsClientDir + "/install.sh"
		if os.Getenv(requireNodeEnv) == "1" {
			t.Fatalf("%s (%s=1 requires it)", msg, requireNodeEnv)
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node_modules is installed but node is not on PATH: %v", err)
	}
	bin := serverBinary(t)
	ws, outside := dirs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs", bin, ws, outside)
	cmd.Dir = tsClientDir
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "tsclient: ok\n") {
		t.Fatalf("TypeScript client failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// TestPlaneToolsServable checks every tool this program registers can
// be served: an MCP-valid name and a schema jsonschema-go resolves.
func TestPlaneToolsServable(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ws, _ := dirs(t)
	p, err := newPlane(config{workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, bt := range p.Registry.Registered() {
		if err := mcpserve.CheckTool(bt); err != nil {
			t.Error(err)
		}
	}
}

// wholePlane names a tool of every family the server serves, and the
// agent tools it leaves out (no model runs a sub-agent here).
var wholePlane = struct{ served, left []string }{
	served: []string{"fs_read", "fs_write", "fs_edit", "working_directory", "grep", "bash", "job_poll", "job_kill", "job_send", "history_search", "remember", "todo", "code_mode"},
	left:   []string{"agent_spawn", "agent_send", "agent_wait", "agent_note", "agent_notes", "agent_roster"},
}

// planeToolNames returns the names of the tools the server's plane
// registers, checking it holds every family and no agent_* tool.
func planeToolNames(t *testing.T) []string {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ws, _ := dirs(t)
	p, err := newPlane(config{workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	names := p.Registry.Names()
	for _, n := range wholePlane.served {
		if !slices.Contains(names, n) {
			t.Errorf("the plane lacks %s: %v", n, names)
		}
	}
	for _, n := range wholePlane.left {
		if slices.Contains(names, n) {
			t.Errorf("the plane offers %s, which no model here can run: %v", n, names)
		}
	}
	return names
}

func TestRunRefusesBadSetup(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown_flag", []string{"-nope"}, "flag provided but not defined"},
		{"extra_argument", []string{"extra"}, "unexpected arguments"},
		{"missing_workspace", []string{"-workspace", filepath.Join(t.TempDir(), "missing")}, "workspace"},
		{"file_workspace", []string{"-workspace", file}, "not a directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := run(c.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("run(%q) = %v, want an error containing %q", c.args, err, c.want)
			}
		})
	}
}

func TestNewSession(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	ws, _ := dirs(t)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	p, err := newPlane(config{workspace: link})
	if err != nil {
		t.Fatal(err)
	}
	c := p.Call
	if c.Workspace != ws {
		t.Errorf("workspace = %q, want the resolved %q", c.Workspace, ws)
	}
	if c.Strand != mcpserve.DefaultStrand {
		t.Errorf("strand = %q, want %q", c.Strand, mcpserve.DefaultStrand)
	}
	realCache, _ := filepath.EvalSymlinks(cache)
	if want := filepath.Join(realCache, "loom", "blobs"); c.Blobs == nil || c.Blobs.Root() != want {
		t.Errorf("blob store at %v, want %s in the user cache", c.Blobs, want)
	}
	scratch := c.Scratch()
	if within(ws, scratch) || !within(filepath.Join(realCache, scratchDir), scratch) {
		t.Errorf("scratch %s, want a directory under the user cache, outside the workspace", scratch)
	}
	// The workspace, the scratch directory, and the toolchain profiles'
	// caches (in the user cache, outside the git guard).
	want := []string{ws, scratch}
	for _, tc := range p.Toolchains {
		want = append(want, tc.Caches...)
	}
	if !slices.Equal(c.Base.WritableRoots, want) || !slices.Equal(c.Base.Unguarded, want[2:]) || c.Base.Network != "off" || c.Broker == nil {
		t.Errorf("session = %+v", c)
	}
	for _, w := range want[2:] {
		if !within(filepath.Join(realCache, "loom", "toolchains"), w) {
			t.Errorf("toolchain cache %s is not under the user cache", w)
		}
	}
	if !slices.Contains(c.Base.Protected, filepath.Join(ws, ".git", "hooks")) {
		t.Errorf("protected = %v lacks .git/hooks", c.Base.Protected)
	}
	if hist, _ := filepath.Glob(filepath.Join(realCache, "loom", "history", "workspace-*.sqlite")); len(hist) != 1 {
		t.Errorf("history index files in the user cache: %v, want one", hist)
	}
	if ents, _ := os.ReadDir(ws); len(ents) != 0 {
		t.Errorf("the session left %d entries in the workspace", len(ents))
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := os.Stat(scratch); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("scratch %s survived cleanup: %v", scratch, err)
	}
}

// TestNewSessionRefusesBlobsInWorkspace: a blob store or history index
// inside the workspace, where a command could tamper with it, is refused.
func TestNewSessionRefusesBlobsInWorkspace(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ws, _ := dirs(t)
	for _, dir := range []string{filepath.Join(ws, ".loom", "blobs"), ws} {
		if p, err := newPlane(config{workspace: ws, blobs: dir, scratch: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "inside the workspace") {
			t.Errorf("-blobs %s: %v, want a refusal", dir, err)
			if p != nil {
				p.Close()
			}
		}
	}
	for _, file := range []string{filepath.Join(ws, ".loom", "history.sqlite"), filepath.Join(ws, "h.sqlite")} {
		if p, err := newPlane(config{workspace: ws, blobs: t.TempDir(), history: file, scratch: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "inside the workspace") {
			t.Errorf("-history %s: %v, want a refusal", file, err)
			if p != nil {
				p.Close()
			}
		}
	}
}

// TestNewSessionRefusesScratchInWorkspace: a scratch directory inside
// the workspace, which a command could swap for a link, is refused, also
// when a link outside leads into it.
func TestNewSessionRefusesScratchInWorkspace(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ws, _ := dirs(t)
	link := filepath.Join(t.TempDir(), "into-ws")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(ws, ".scratch"), ws, link} {
		if p, err := newPlane(config{workspace: ws, blobs: t.TempDir(), scratch: dir}); err == nil || !strings.Contains(err.Error(), "inside the workspace") {
			t.Errorf("-scratch %s: %v, want a refusal", dir, err)
			if p != nil {
				p.Close()
			}
		}
	}
	if _, err := os.Stat(filepath.Join(ws, ".scratch")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused scratch directory was made in the workspace: %v", err)
	}
}

// TestServerStateOutsideWorkspace: the built server spills overflowing
// output into the blob store in the user cache and gives commands a
// TMPDIR there; the workspace gets nothing of the server's, a command
// cannot swap the store for a link, and the scratch directory is gone
// once the server exits.
func TestServerStateOutsideWorkspace(t *testing.T) {
	bin := serverBinary(t)
	ws, outside := dirs(t)
	cmd := serverCmd(t, bin, ws)
	cache := strings.TrimPrefix(cmd.Env[len(cmd.Env)-1], "XDG_CACHE_HOME=")
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "state", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{
		"command": "echo \"tmp=$TMPDIR\"; touch \"$TMPDIR/mark\"; head -c 200000 /dev/zero | tr '\\0' a"}})
	if err != nil || r.IsError {
		t.Fatalf("bash: %v %s", err, text(r))
	}
	m := regexp.MustCompile(`tmp=(\S+)`).FindStringSubmatch(text(r))
	if m == nil {
		t.Fatalf("no TMPDIR in %.500s", text(r))
	}
	realCache, _ := filepath.EvalSymlinks(cache)
	scratch := m[1]
	if !within(filepath.Join(realCache, scratchDir), scratch) {
		t.Errorf("TMPDIR %s is not under the user cache %s", scratch, realCache)
	}
	if _, err := os.Stat(filepath.Join(scratch, "mark")); err != nil {
		t.Errorf("the command could not write its TMPDIR: %v", err)
	}
	var blobs []string
	filepath.WalkDir(filepath.Join(realCache, "loom", "blobs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && blob.Ref(d.Name()).Valid() { // not the store's ledger
			blobs = append(blobs, p)
		}
		return nil
	})
	if len(blobs) != 1 || !strings.Contains(text(r), blobs[0]) {
		t.Errorf("blobs in the cache %v; the answer should name the one spilled:\n%.300s", blobs, text(r))
	}
	if len(blobs) == 1 {
		read, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs_read", Arguments: map[string]any{"path": blobs[0]}})
		if err != nil || read.IsError {
			t.Errorf("fs_read of the spilled blob: %v %.300s", err, text(read))
		}
	}
	if ents, _ := os.ReadDir(ws); len(ents) != 0 {
		t.Errorf("the server left %d entries in the workspace, e.g. %s", len(ents), ents[0].Name())
	}

	// The attack of issue 11: a command replaces the store with a link to
	// a directory of its choosing, then makes the server spill again.
	// With the store in the user cache the command cannot reach it; the
	// control shows the same command does replace a directory it can
	// reach (where the store used to live, in the workspace).
	store := filepath.Join(realCache, "loom", "blobs")
	swap := func(dir string) string {
		return fmt.Sprintf("rm -rf '%s' && ln -s '%s' '%s'", dir, outside, dir)
	}
	victim := filepath.Join(ws, "victim")
	if err := os.Mkdir(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	if r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": swap(victim)}}); err != nil || r.IsError {
		t.Fatalf("control: the swap failed inside the workspace: %v %s", err, text(r))
	}
	if got, err := os.Readlink(victim); err != nil || got != outside {
		t.Fatalf("control: %s -> %q, %v; want a link to %s", victim, got, err, outside)
	}
	cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": swap(store)}})
	if r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{
		"command": "head -c 300000 /dev/zero | tr '\\0' b"}}); err != nil || r.IsError {
		t.Fatalf("second spill: %v %s", err, text(r))
	}
	if fi, err := os.Lstat(store); err != nil || !fi.IsDir() {
		t.Errorf("the blob store is no longer a directory: %v %v", fi, err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("the server wrote %d entries into the command's chosen directory", len(ents))
	}
	cs.Close()
	cmd.Wait()
	if _, err := os.Stat(scratch); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("scratch %s survived the server: %v", scratch, err)
	}
}

// benchSession connects the Go SDK client to the built server over stdio.
func benchSession(b *testing.B) (*mcp.ClientSession, string) {
	b.Helper()
	bin := serverBinary(b)
	ws := b.TempDir()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: serverCmd(b, bin, ws)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs, ws
}

// BenchmarkStdioFsRead is one fs_read of a small file, client to server
// process and back.
func BenchmarkStdioFsRead(b *testing.B) {
	cs, ws := benchSession(b)
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte(strings.Repeat("line\n", 100)), 0o644); err != nil {
		b.Fatal(err)
	}
	params := &mcp.CallToolParams{Name: "fs_read", Arguments: map[string]any{"path": "a.txt"}}
	for b.Loop() {
		if r, err := cs.CallTool(context.Background(), params); err != nil || r.IsError {
			b.Fatal(err, r)
		}
	}
}

// BenchmarkStdioBashTrue is one jailed `true`, client to server process,
// through the jail, and back.
func BenchmarkStdioBashTrue(b *testing.B) {
	cs, _ := benchSession(b)
	params := &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "true"}}
	for b.Loop() {
		if r, err := cs.CallTool(context.Background(), params); err != nil || r.IsError {
			b.Fatal(err, r)
		}
	}
}

// TestSessionKeepsSystemSecretsFromFileTools: the server's file tools read
// the workspace, never the system roots the jail needs (/etc/shadow
// among them); a command can still run programs from those roots.
func TestSessionKeepsSystemSecretsFromFileTools(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ws, _ := dirs(t)
	p, err := newPlane(config{workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, reg := p.Call, p.Registry
	if !slices.Contains(c.Base.SystemRoots, "/etc") || slices.Contains(c.Base.ReadableRoots, "/etc") {
		t.Fatalf("base policy: system roots %v, readable roots %v; want /etc a system root only", c.Base.SystemRoots, c.Base.ReadableRoots)
	}
	out := reg.Dispatch(context.Background(), c.At("op", "s", 0), "fs_read", json.RawMessage(`{"path":"/etc/passwd"}`))
	if !out.IsError || strings.Contains(out.Text, "root:x:0") {
		t.Errorf("fs_read /etc/passwd through the server's session = %q, want a refusal", out.Text)
	}
}

// TestApprovalOverStdio: through the built server, a bash call asking to
// read a directory outside the workspace is put to the client's user; it
// runs with the grant when the user accepts and is refused in band, with
// its code, when the user declines. The control: the same command without
// permissions is refused by the jail.
func TestApprovalOverStdio(t *testing.T) {
	root, err := os.MkdirTemp("/var/tmp", "mcpserver-approval-") // the jail's /tmp is private
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	ws, outside := filepath.Join(root, "ws"), filepath.Join(root, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const secret = "listed-only-with-a-grant"
	if err := os.WriteFile(filepath.Join(outside, secret), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var answer string
	var questions []string
	handler := func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		questions = append(questions, r.Params.Message)
		return &mcp.ElicitResult{Action: answer}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stderr strings.Builder
	cmd := serverCmd(t, serverBinary(t), ws)
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "approver", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: handler}).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	command := "ls " + outside
	cases := []struct {
		name     string
		answer   string
		perm     bool
		listed   bool
		approval string
	}{
		{name: "control_no_permissions", answer: "accept"},
		{name: "accept", answer: "accept", perm: true, listed: true, approval: string(mcpserve.ApprovalGranted)},
		{name: "decline", answer: "decline", perm: true, approval: string(mcpserve.ApprovalDeclined)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			answer, questions = c.answer, nil
			mu.Unlock()
			args := map[string]any{"command": command}
			if c.perm {
				args["permissions"] = map[string]any{"readable_roots": []string{outside}}
			}
			r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: args})
			if err != nil {
				t.Fatalf("bash: %v", err)
			}
			if got := strings.Contains(text(r), secret); got != c.listed || r.IsError == c.listed {
				t.Errorf("isError=%v listed=%v, want listed=%v:\n%s", r.IsError, got, c.listed, text(r))
			}
			if got, _ := r.Meta[mcpserve.MetaApprovalKey].(string); got != c.approval {
				t.Errorf("approval = %q, want %q", got, c.approval)
			}
			mu.Lock()
			asked := slices.Clone(questions)
			mu.Unlock()
			if len(asked) != map[bool]int{true: 1}[c.perm] {
				t.Fatalf("asked %d questions, want one exactly when permissions are asked for", len(asked))
			}
			if c.perm && (!strings.Contains(asked[0], "readable_root "+outside) || !strings.Contains(asked[0], command)) {
				t.Errorf("the question does not name the grant and the command:\n%s", asked[0])
			}
			if c.answer == "decline" {
				if code, _ := r.Meta[mcpserve.MetaCodeKey].(string); code != "requirements_not_covered" || !strings.Contains(text(r), "declined") {
					t.Errorf("decline: code %q, text:\n%s", code, text(r))
				}
			}
		})
	}
}
