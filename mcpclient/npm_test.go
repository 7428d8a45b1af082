package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// requireNPMServerEnv, set to 1, turns a missing node or npm-installed
// server into a failure instead of a skip (CI sets it after running
// testdata/npmservers/install.sh).
const requireNPMServerEnv = "LOOM_REQUIRE_MCP_NPM_SERVER"

// npmServers is where testdata/npmservers/install.sh installs the
// third-party servers, outside every test workspace.
func npmServers() string {
	_, here, _, _ := runtime.Caller(0)
	dir, _ := filepath.EvalSymlinks(filepath.Join(filepath.Dir(here), "testdata", "npmservers"))
	return dir
}

// npmServer returns the stdio Server running the installed package
// @modelcontextprotocol/<pkg> with node, named name, granted read access
// to the install directory (as an interpreter's packages are: a system
// root of its jail, never the workspace); the test skips when node or
// the package is absent, unless LOOM_REQUIRE_MCP_NPM_SERVER=1.
func npmServer(tb testing.TB, name, pkg string, args ...string) Server {
	tb.Helper()
	dir := npmServers()
	entry := filepath.Join(dir, "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	node, err := osexec.LookPath("node")
	if err == nil {
		_, err = os.Stat(entry)
	}
	if err != nil {
		msg := "node or @modelcontextprotocol/" + pkg + " is absent (" + err.Error() + "); run mcpclient/testdata/npmservers/install.sh"
		if os.Getenv(requireNPMServerEnv) == "1" {
			tb.Fatalf("%s (%s=1 requires it)", msg, requireNPMServerEnv)
		}
		tb.Skip(msg)
	}
	return Server{Name: name, Command: node, Args: append([]string{entry}, args...), Grant: Grant{ReadOnly: []string{filepath.Join(dir, "node_modules")}}}
}

// TestNPMServerEverything runs @modelcontextprotocol/server-everything
// jailed and lists and calls its tools through the client: echo, a sum,
// a result checked against its output schema, an image; its environment
// is the jail's (no session secret, its own HOME outside the workspace),
// and with the network off a tool that fetches a URL fails in band.
func TestNPMServerEverything(t *testing.T) {
	s := newSession(t)
	s.env["SECRET_TOKEN"] = "hunter2"
	c := s.client(t, npmServer(t, "everything", "server-everything", "stdio"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tools, skipped, err := c.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) > 0 {
		t.Errorf("tools left out: %v", skipped)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	for _, want := range []string{"echo", "get-sum", "get-structured-content", "get-tiny-image", "get-env", "gzip-file-as-resource"} {
		if !slices.Contains(names, want) {
			t.Errorf("no tool %s in %v", want, names)
		}
	}
	call := func(name, args string) *Result {
		t.Helper()
		r, err := c.Call(ctx, name, json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return r
	}
	if r := call("echo", `{"message":"jailed hello"}`); r.IsError || !strings.Contains(r.Text, "jailed hello") {
		t.Errorf("echo: %+v", r)
	}
	if r := call("get-sum", `{"a":2,"b":40}`); r.IsError || !strings.Contains(r.Text, "42") {
		t.Errorf("get-sum: %+v", r)
	}
	r := call("get-structured-content", `{"location":"Chicago"}`)
	var weather struct {
		Temperature *float64 `json:"temperature"`
		Conditions  string   `json:"conditions"`
	}
	if err := json.Unmarshal(r.Structured, &weather); r.IsError || err != nil || weather.Temperature == nil || weather.Conditions == "" {
		t.Errorf("get-structured-content: %+v (%v)", r, err)
	}
	if r := call("get-tiny-image", `{}`); r.IsError || len(r.Images) != 1 || r.Images[0].MIME != "image/png" || !bytes.HasPrefix(r.Images[0].Data, []byte("\x89PNG")) {
		t.Errorf("get-tiny-image: text %q, %d images", r.Text, len(r.Images))
	}
	env := call("get-env", `{}`).Text
	if strings.Contains(env, "hunter2") || strings.Contains(env, "SECRET_TOKEN") {
		t.Errorf("the session's secret reached the server: %s", env)
	}
	if !strings.Contains(env, filepath.Join(s.scratch, "mcp-everything", "home")) {
		t.Errorf("its HOME is not its own directory outside the workspace: %s", env)
	}
	// Network off: fetching a URL fails inside the server.
	r = call("gzip-file-as-resource", `{"data":"https://registry.npmjs.org/","name":"x.gz","outputType":"resource"}`)
	if !r.IsError {
		t.Errorf("a jailed server with the network off fetched a URL: %q", cutText(r.Text, 300))
	}
	t.Logf("network refused in band: %s", cutText(r.Text, 200))
}

// TestNPMServerFilesystemJailed runs @modelcontextprotocol/server-filesystem
// jailed. It reads the workspace; it refuses, by its own check, a file
// outside its allowed directory; and, told it may read all of / (its own
// check off), the jail still keeps a file outside the jail's roots from
// it, and the read-only workspace from its writes. With
// Grant.WriteWorkspace it writes.
func TestNPMServerFilesystemJailed(t *testing.T) {
	s := newSession(t)
	if err := os.WriteFile(filepath.Join(s.ws, "in.txt"), []byte("inside the workspace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(s.outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("outside the roots\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	call := func(c *Client, name, args string) *Result {
		t.Helper()
		r, err := c.Call(ctx, name, json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return r
	}
	arg := func(k, v string) string {
		b, _ := json.Marshal(map[string]string{k: v})
		return string(b)
	}
	write := func(path string) string {
		b, _ := json.Marshal(map[string]string{"path": path, "content": "x"})
		return string(b)
	}

	fs := s.client(t, npmServer(t, "fs", "server-filesystem", s.ws))
	if r := call(fs, "read_text_file", arg("path", filepath.Join(s.ws, "in.txt"))); r.IsError || !strings.Contains(r.Text, "inside the workspace") {
		t.Errorf("reading the workspace: %+v", r)
	}
	if r := call(fs, "read_text_file", arg("path", secret)); !r.IsError || !strings.Contains(r.Text, "outside allowed directories") {
		t.Errorf("it read a file outside its allowed directory, or refused it for another reason: %+v", r)
	}

	// Allowed the directory holding the workspace and the secret by its
	// arguments, its own check passes: the kernel refuses it (EACCES).
	wide := s.client(t, npmServer(t, "fswide", "server-filesystem", filepath.Dir(s.ws)))
	r := call(wide, "read_text_file", arg("path", secret))
	if !r.IsError || strings.Contains(r.Text, "outside the roots") || strings.Contains(r.Text, "outside allowed directories") {
		t.Errorf("a jailed server allowed the secret's directory read it, or its own check refused it: %+v", r)
	}
	t.Logf("outside the jail's roots: %s", cutText(r.Text, 200))
	if r := call(wide, "write_file", write(filepath.Join(s.ws, "new.txt"))); !r.IsError {
		t.Errorf("it wrote into the read-only workspace: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(s.ws, "new.txt")); err == nil {
		t.Error("the file it was refused is in the workspace")
	}

	srv := npmServer(t, "fsrw", "server-filesystem", s.ws)
	srv.Grant.WriteWorkspace = true
	rw := s.client(t, srv)
	if r := call(rw, "write_file", write(filepath.Join(s.ws, "new.txt"))); r.IsError {
		t.Errorf("granted the workspace, it could not write: %+v", r)
	}
	if b, err := os.ReadFile(filepath.Join(s.ws, "new.txt")); err != nil || string(b) != "x" {
		t.Errorf("its write: %q, %v", b, err)
	}
}
