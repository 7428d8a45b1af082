package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// requireNPMServerEnv, set to 1, turns a missing node or npm-installed
// MCP server into a failure instead of a skip (CI sets it after running
// the install script).
const requireNPMServerEnv = "LOOM_REQUIRE_MCP_NPM_SERVER"

// npmServersDir is where mcpclient/testdata/npmservers/install.sh
// installs @modelcontextprotocol/server-everything and server-filesystem.
const npmServersDir = "../../mcpclient/testdata/npmservers"

// npmEntries returns node, the install's node_modules (links resolved)
// and the entry points of server-everything and server-filesystem; the
// test skips when any is absent, unless LOOM_REQUIRE_MCP_NPM_SERVER=1.
func npmEntries(tb testing.TB) (node, modules, everything, filesystem string) {
	tb.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		modules, err = filepath.Abs(filepath.Join(npmServersDir, "node_modules"))
	}
	if err == nil {
		modules, err = filepath.EvalSymlinks(modules)
	}
	entry := func(pkg string) string {
		p := filepath.Join(modules, "@modelcontextprotocol", pkg, "dist", "index.js")
		if err == nil {
			_, err = os.Stat(p)
		}
		return p
	}
	everything, filesystem = entry("server-everything"), entry("server-filesystem")
	if err != nil {
		msg := fmt.Sprintf("node or an MCP server from npm is absent (%v); run mcpclient/testdata/npmservers/install.sh", err)
		if os.Getenv(requireNPMServerEnv) == "1" {
			tb.Fatalf("%s (%s=1 requires it)", msg, requireNPMServerEnv)
		}
		tb.Skip(msg)
	}
	return node, modules, everything, filesystem
}

var (
	fakeOnce sync.Once
	fakePath string
	fakeErr  error
)

// fakeServer builds mcpclient's fake MCP server once, under /var/tmp (a
// jail's /tmp is its own); its file alone is readable in its jail.
func fakeServer(t *testing.T) string {
	t.Helper()
	fakeOnce.Do(func() {
		dir, err := os.MkdirTemp("/var/tmp", "mcpserver-fake-")
		if err != nil {
			fakeErr = err
			return
		}
		os.Chmod(dir, 0o755)
		fakePath = filepath.Join(dir, "fakeserver")
		if out, err := exec.Command("go", "build", "-buildvcs=false", "-o", fakePath, "../../mcpclient/internal/fakeserver").CombinedOutput(); err != nil {
			fakeErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if fakeErr != nil {
		t.Fatal(fakeErr)
	}
	return fakePath
}

// writeConfig writes v as an MCP configuration file outside ws.
func writeConfig(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// mcpSession runs the built server with args and connects the Go SDK's
// client; stop closes it and returns what the server wrote on stderr.
func mcpSession(t *testing.T, ws string, args ...string) (cs *mcp.ClientSession, stop func() string) {
	t.Helper()
	var stderr strings.Builder
	cmd := serverCmd(t, serverBinary(t), ws, args...)
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "mcp-config-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		cmd.Wait()
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	var once sync.Once
	stop = func() string {
		once.Do(func() { cs.Close() })
		return stderr.String()
	}
	t.Cleanup(func() { stop() })
	return cs, stop
}

// TestMCPConfigFlag: -mcp-config serves the configured servers' tools
// beside the plane's, named mcp__<server>__<tool>, and stderr says which
// started with how many tools, which was refused and which tool was left
// out, and why.
func TestMCPConfigFlag(t *testing.T) {
	fake := fakeServer(t)
	ws, outside := dirs(t)
	granted := t.TempDir()
	for path, body := range map[string]string{filepath.Join(outside, "secret"): "s3cret", filepath.Join(granted, "data"): "granted data"} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
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
	cfg := writeConfig(t, map[string]any{"mcpServers": map[string]any{
		"fake":    map[string]any{"command": fake},
		"net":     map[string]any{"command": fake},
		"missing": map[string]any{"command": "/nonexistent/mcp-server"},
		"off":     map[string]any{"command": fake, "disabled": true},
	}})
	cs, stop := mcpSession(t, ws, "-mcp-config", cfg, "-mcp-read", granted, "-mcp-network", "net")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, lt := range tools.Tools {
		names = append(names, lt.Name)
	}
	for _, want := range []string{"fs_read", "bash", "mcp__fake__echo", "mcp__fake__probe"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}
	for _, n := range names {
		if strings.HasPrefix(n, "mcp__missing__") || strings.HasPrefix(n, "mcp__off__") || n == "mcp__fake__not_object" {
			t.Errorf("tools/list offers %s", n)
		}
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fake__echo", Arguments: map[string]any{"text": "through loom"}})
	if err != nil || r.IsError || !strings.Contains(text(r), "through loom") {
		t.Errorf("mcp__fake__echo: %v %+v", err, r)
	}
	// The fake's probe, in its jail: -mcp-read's directory is readable to
	// every server, a directory outside the roots to none; the network
	// only to the server -mcp-network names.
	probe := func(server, read string) string {
		t.Helper()
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__" + server + "__probe", Arguments: map[string]any{"read": read, "dial": ln.Addr().String()}})
		if err != nil {
			t.Fatalf("%s's probe: %v", server, err)
		}
		return text(r)
	}
	if got := probe("fake", filepath.Join(granted, "data")); !strings.Contains(got, "read: ok granted data") || strings.Contains(got, "dial: ok") {
		t.Errorf("fake (no network, -mcp-read granted): %s", got)
	}
	if got := probe("fake", filepath.Join(outside, "secret")); strings.Contains(got, "s3cret") {
		t.Errorf("fake read outside the roots: %s", got)
	}
	if got := probe("net", filepath.Join(granted, "data")); !strings.Contains(got, "dial: ok") {
		t.Errorf("net (-mcp-network net): %s", got)
	}
	stderr := stop()
	for _, want := range []string{
		"mcpserver: MCP servers: fake (14 tools, mcp__fake__*), net (14 tools, mcp__net__*)",
		"mcp__fake__*)",
		"mcpserver: MCP server missing refused (mcp_server_not_found)",
		`mcpserver: MCP server fake: tool "not_object" left out (mcp_bad_input_schema)`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	t.Logf("stderr:\n%s", stderr)
	if strings.Contains(stderr, "server off") {
		t.Errorf("stderr names the disabled server:\n%s", stderr)
	}
}

// TestMCPConfigNPMServers: the configuration a user writes for
// server-everything and server-filesystem, installed with npm install
// --prefix and granted read-only by -mcp-read, serves their tools jailed.
func TestMCPConfigNPMServers(t *testing.T) {
	node, modules, everything, filesystem := npmEntries(t)
	ws, outside := dirs(t)
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello from the workspace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("the secret words\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": node, "args": []string{everything, "stdio"}},
		"files":      map[string]any{"command": node, "args": []string{filesystem, ws, outside}},
	}})
	cs, stop := mcpSession(t, ws, "-mcp-config", cfg, "-mcp-read", modules)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return r
	}
	if r := call("mcp__everything__get-sum", map[string]any{"a": 20, "b": 22}); r.IsError || !strings.Contains(text(r), "42") {
		t.Errorf("get-sum: %s", text(r))
	}
	if r := call("mcp__everything__get-tiny-image", map[string]any{}); r.IsError || !slices.ContainsFunc(r.Content, func(c mcp.Content) bool { _, ok := c.(*mcp.ImageContent); return ok }) {
		t.Errorf("get-tiny-image: %s", text(r))
	}
	if r := call("mcp__files__read_text_file", map[string]any{"path": filepath.Join(ws, "hello.txt")}); r.IsError || !strings.Contains(text(r), "hello from the workspace") {
		t.Errorf("read_text_file in the workspace: %s", text(r))
	}
	// Allowed by its arguments, outside the jail's roots: the server found
	// it inaccessible at start and dropped it.
	if r := call("mcp__files__read_text_file", map[string]any{"path": filepath.Join(outside, "secret.txt")}); !r.IsError || strings.Contains(text(r), "the secret words") {
		t.Errorf("read_text_file outside the jail's roots: %s", text(r))
	}
	if r := call("mcp__files__write_file", map[string]any{"path": filepath.Join(ws, "new.txt"), "content": "x"}); !r.IsError {
		t.Errorf("write_file into the read-only workspace: %s", text(r))
	}
	stderr := stop()
	if !strings.Contains(stderr, "mcpserver: MCP servers: everything (") || !strings.Contains(stderr, "files (") {
		t.Errorf("stderr does not say the servers started:\n%s", stderr)
	}
}

// TestMCPConfigRefusesBadFlags: a configuration or grant that cannot be
// used stops the server before it serves, saying why.
func TestMCPConfigRefusesBadFlags(t *testing.T) {
	ws, _ := dirs(t)
	good := writeConfig(t, map[string]any{"mcpServers": map[string]any{"a": map[string]any{"command": "true"}}})
	bad := writeConfig(t, map[string]any{"mcpServers": map[string]any{"a b": map[string]any{"command": "true"}}})
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"missing_file", []string{"-mcp-config", filepath.Join(t.TempDir(), "none.json")}, "-mcp-config"},
		{"bad_name", []string{"-mcp-config", bad}, "a server's name must match"},
		{"relative_read", []string{"-mcp-config", good, "-mcp-read", "node_modules"}, "not an absolute path"},
		{"read_without_config", []string{"-mcp-read", t.TempDir()}, "need -mcp-config"},
		{"unknown_network", []string{"-mcp-config", good, "-mcp-network", "b"}, "names no such stdio server"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("XDG_CACHE_HOME", t.TempDir())
			err := run(append([]string{"-workspace", ws, "-warm=false"}, c.args...), io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("run(%q) = %v, want an error containing %q", c.args, err, c.want)
			}
		})
	}
}
