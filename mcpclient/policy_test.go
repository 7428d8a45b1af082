package mcpclient

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/toolchain"
)

// TestStdioPolicy: a stdio server's jail is composed from the session:
// the workspace readable only, its own directory its one writable root,
// no network, none of the session's environment but PATH, LANG and
// TERM; a toolchain's command gets that profile; a Grant widens it.
func TestStdioPolicy(t *testing.T) {
	root := t.TempDir()
	ws, scratch, cache := filepath.Join(root, "ws"), filepath.Join(root, "scratch"), filepath.Join(root, "npm-cache")
	for _, d := range []string{ws, scratch, cache} {
		os.MkdirAll(d, 0o755)
	}
	o := Options{
		Workspace: ws, TempDir: scratch, Broker: broker.New(broker.Options{}),
		Base:       sandbox.Policy{SystemRoots: sandbox.SystemReadableRoots(), WritableRoots: []string{ws, scratch}, Network: sandbox.NetworkOff},
		Env:        map[string]string{"PATH": toolchain.DefaultPath, "LANG": "C.UTF-8", "SECRET_TOKEN": "x"},
		Toolchains: []toolchain.Profile{{Name: "npm", Env: map[string]string{"npm_config_cache": cache}, Caches: []string{cache}}},
	}
	defer o.Broker.Close()
	own, _ := filepath.EvalSymlinks(scratch)
	own = filepath.Join(own, "mcp-")

	plain, err := New(Server{Name: "plain", Command: "true", Env: map[string]string{"K": "v"}}, o)
	if err != nil {
		t.Fatal(err)
	}
	p := plain.pol
	if p.Network != sandbox.NetworkOff || len(p.WritableRoots) != 1 || p.WritableRoots[0] != own+"plain" || !slices.Contains(p.ReadableRoots, ws) {
		t.Errorf("plain policy %+v", p)
	}
	if _, ok := plain.env["SECRET_TOKEN"]; ok || plain.env["K"] != "v" || plain.env["HOME"] != own+"plain/home" || plain.env["TMPDIR"] != own+"plain/tmp" {
		t.Errorf("plain env %v", plain.env)
	}
	if _, ok := plain.env["npm_config_cache"]; ok {
		t.Errorf("a server that is no npm command got npm's profile")
	}

	npx, err := New(Server{Name: "npx", Command: "npx", Grant: Grant{Network: true, WriteWorkspace: true}}, o)
	if err != nil {
		t.Fatal(err)
	}
	p = npx.pol
	if p.Network != sandbox.NetworkFull || !slices.Contains(p.WritableRoots, ws) || !slices.Contains(p.WritableRoots, cache) || npx.env["npm_config_cache"] != cache {
		t.Errorf("npx policy %+v, env %v", p, npx.env)
	}

	if _, err := New(Server{Name: "bad", Command: "true", Grant: Grant{Writable: []string{filepath.Join(ws, "sub")}}}, o); codeOf(err) != CodeInvalidConfig {
		t.Errorf("a writable grant inside a read-only workspace: %v", err)
	}
	o.TempDir = filepath.Join(ws, "tmp")
	if _, err := New(Server{Name: "in", Command: "true"}, o); codeOf(err) != CodeInvalidConfig {
		t.Errorf("a temporary directory in the workspace: %v", err)
	}
}
