package plane

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentloom/loom/codemode"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/internal/jailtest"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
	"github.com/agentloom/loom/toolchain"
	"github.com/google/go-cmp/cmp"
)

func TestMain(m *testing.M) {
	code := m.Run()
	jailHelper.Remove()
	fakeServer.Remove()
	os.Exit(code)
}

// jailHelper is the host-built jail helper this package's test brokers
// run, built once per test binary and removed by TestMain.
var jailHelper jailtest.Shared

// testDirs makes a workspace and, beside it (never inside), the blob,
// history and scratch places of a test plane, under /var/tmp where the
// jail's private /tmp does not hide them.
func testDirs(t *testing.T) (ws string, cfg Config) {
	t.Helper()
	root, err := os.MkdirTemp("/var/tmp", "loom-plane-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	ws = filepath.Join(root, "ws")
	if err := os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	return ws, Config{
		Workspace:     ws,
		BlobDir:       filepath.Join(root, "blobs"),
		HistoryPath:   filepath.Join(root, "history", "index.sqlite"),
		Scratch:       filepath.Join(root, "scratch"),
		BrokerOptions: broker.Options{HelperPath: jailHelper.Path(t)},
	}
}

func newTestPlane(t *testing.T, cfg Config) *Plane {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

func namesOf(tools []tool.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}

// TestNewRegistersTheFamilies: each family alone registers exactly its
// package's tools, in their order, and the zero Families registers all
// of them in family order. The expected names come from the packages'
// own constructors.
func TestNewRegistersTheFamilies(t *testing.T) {
	t.Parallel()
	runner := agent.RunnerFunc(func(context.Context, agent.Turn) (string, error) { return "", nil })
	files := namesOf(tool.FileTools())
	grep := []string{tool.GrepTool().Name}
	shell := append([]string{job.BashTool(nil).Name}, namesOf(job.Tools(nil))...)
	hist := []string{history.SearchToolName, history.RememberToolName}
	agents := namesOf(agent.Tools(nil))
	codeMode := []string{codemode.ToolName}
	tests := []struct {
		name   string
		fam    Family
		runner agent.Runner
		want   []string
	}{
		{"files", FamilyFiles, nil, files},
		{"grep", FamilyGrep, nil, grep},
		{"shell", FamilyShell, nil, shell},
		{"history", FamilyHistory, nil, hist},
		{"agents", FamilyAgents, runner, agents},
		{"agents without a runner", FamilyAgents, nil, []string{agent.TodoToolName}},
		{"files and shell", FamilyFiles | FamilyShell, nil, slices.Concat(files, shell)},
		{"code mode", FamilyCodeMode, nil, codeMode},
		{"all", 0, runner, slices.Concat(files, grep, shell, hist, agents, codeMode)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, cfg := testDirs(t)
			cfg.Families, cfg.Runner = tt.fam, tt.runner
			p := newTestPlane(t, cfg)
			if diff := cmp.Diff(tt.want, namesOf(p.Registry.Registered())); diff != "" {
				t.Fatalf("registered tools (-want +got):\n%s", diff)
			}
			if (p.Store != nil) != cfg.Families.Has(FamilyHistory) && tt.fam != 0 {
				t.Errorf("history index opened: %v", p.Store != nil)
			}
		})
	}
}

// TestNewRefuses: every configuration New cannot make safe is refused
// with its code, and nothing it opened is left behind.
func TestNewRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(ws string, cfg *Config)
		code  tool.Code
	}{
		{"no workspace", func(_ string, c *Config) { c.Workspace = "" }, CodeWorkspaceRequired},
		{"missing workspace", func(ws string, c *Config) { c.Workspace = filepath.Join(ws, "nope") }, CodeWorkspaceUnusable},
		{"workspace is a file", func(ws string, c *Config) {
			os.WriteFile(filepath.Join(ws, "f"), nil, 0o644)
			c.Workspace = filepath.Join(ws, "f")
		}, CodeWorkspaceUnusable},
		{"blob store in the workspace", func(ws string, c *Config) { c.BlobDir = filepath.Join(ws, "blobs") }, CodeStoreInWorkspace},
		{"history index in the workspace", func(ws string, c *Config) { c.HistoryPath = filepath.Join(ws, "h", "i.sqlite") }, CodeStoreInWorkspace},
		{"scratch left unwritable", func(_ string, c *Config) {
			c.Policy = func(p sandbox.Policy) sandbox.Policy { p.WritableRoots = p.WritableRoots[:1]; return p }
		}, CodePolicyInvalid},
		{"toolchain cache in the workspace", func(ws string, c *Config) {
			c.Toolchains = func(ps []toolchain.Profile) []toolchain.Profile {
				return append(ps, toolchain.Profile{Name: "x", Caches: []string{filepath.Join(ws, ".cache", "x")}})
			}
		}, CodeStoreInWorkspace},
		{"toolchain cache holding the workspace", func(ws string, c *Config) {
			c.Toolchains = func([]toolchain.Profile) []toolchain.Profile {
				return []toolchain.Profile{{Name: "x", Caches: []string{filepath.Dir(ws)}}}
			}
		}, CodeStoreInWorkspace},
		{"toolchain cache holding the blob store", func(ws string, c *Config) {
			c.Toolchains = func([]toolchain.Profile) []toolchain.Profile {
				return []toolchain.Profile{{Name: "x", Caches: []string{c.BlobDir}}}
			}
		}, CodeStoreInWorkspace},
		{"relative root", func(_ string, c *Config) {
			c.Policy = func(p sandbox.Policy) sandbox.Policy { p.ReadableRoots = []string{"rel"}; return p }
		}, CodePolicyInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws, cfg := testDirs(t)
			tt.setup(ws, &cfg)
			p, err := New(cfg)
			if err == nil {
				p.Close()
				t.Fatal("accepted")
			}
			if got := tool.CodeOf(err); got != tt.code {
				t.Fatalf("code %q (%v), want %q", got, err, tt.code)
			}
		})
	}
}

// TestPlaneRunsABatch: with nothing but paths configured, one batch
// writes a file, runs a jailed command that reads it and writes the
// session scratch, greps it, stores a note and finds it, each answer in
// order; the command could not write outside the workspace and scratch.
func TestPlaneRunsABatch(t *testing.T) {
	t.Parallel()
	ws, cfg := testDirs(t)
	p := newTestPlane(t, cfg)
	outside := filepath.Join(filepath.Dir(ws), "outside.txt")
	calls := []ToolCall{
		{ID: "1", Name: "fs_write", Args: json.RawMessage(`{"path":"a.txt","content":"alpha\nbeta\n"}`)},
		{ID: "2", Name: "bash", Args: json.RawMessage(`{"command":"grep -c beta a.txt && echo kept > \"$TMPDIR/s.txt\" && echo $HOME","mode":"foreground"}`)},
		{ID: "3", Name: "bash", Args: json.RawMessage(`{"command":"echo x > ` + outside + `","mode":"foreground"}`)},
		{ID: "4", Name: "grep", Args: json.RawMessage(`{"pattern":"alp"}`)},
		{ID: "5", Name: "remember", Args: json.RawMessage(`{"kind":"fact","title":"greek","description":"letters","note":"the file a.txt holds greek letters"}`)},
		{ID: "6", Name: "history_search", Args: json.RawMessage(`{"query":"greek","kind":"note"}`)},
	}
	res := p.Dispatcher().Dispatch(context.Background(), p.Call, "op-1", "step-1", calls)
	for i, want := range []string{"a.txt", "1\n", "", "a.txt:1", "", "holds **greek** letters"} {
		o := res[i].Outcome
		if wantErr := i == 2; o.IsError != wantErr {
			t.Fatalf("call %s: %+v", calls[i].ID, o)
		}
		if !strings.Contains(o.Text, want) {
			t.Errorf("call %s lacks %q:\n%s", calls[i].ID, want, o.Text)
		}
	}
	if home := filepath.Join(p.Call.TempDir, "home"); !strings.Contains(res[1].Outcome.Text, home) || strings.Contains(res[1].Outcome.Text, ws) {
		t.Errorf("HOME is not the session's own %s, outside the workspace:\n%s", home, res[1].Outcome.Text)
	}
	if b, err := os.ReadFile(filepath.Join(p.Call.TempDir, "s.txt")); err != nil || string(b) != "kept\n" {
		t.Errorf("scratch file: %q, %v", b, err)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Errorf("a command wrote outside the workspace:\n%s", res[2].Outcome.Text)
	}
}

// TestDefaultsLiveInTheCacheDir: with only a workspace, the blob store,
// the history index and a fresh scratch directory are made under the
// user cache directory; Close removes the scratch directory it made and
// a second Close answers the same.
func TestDefaultsLiveInTheCacheDir(t *testing.T) {
	ws, _ := testDirs(t)
	cache := filepath.Join(filepath.Dir(ws), "cache")
	t.Setenv("XDG_CACHE_HOME", cache)
	p, err := New(Config{Workspace: ws, BrokerOptions: broker.Options{HelperPath: jailHelper.Path(t)}})
	if err != nil {
		t.Fatal(err)
	}
	for what, path := range map[string]string{"blobs": p.Blobs.Root(), "history": p.Store.Path(), "scratch": p.Call.TempDir} {
		if !sandbox.Covers(cache, path) {
			t.Errorf("%s at %s, not under %s", what, path, cache)
		}
	}
	if !slices.Contains(p.Call.Base.WritableRoots, p.Call.TempDir) {
		t.Errorf("scratch %s not writable: %v", p.Call.TempDir, p.Call.Base.WritableRoots)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.Call.TempDir); !os.IsNotExist(err) {
		t.Errorf("scratch left after Close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestCallForKeepsAShellPerStrand: CallFor gives each strand its own
// shell directory, the same one across its runs, and the session's seams.
func TestCallForKeepsAShellPerStrand(t *testing.T) {
	t.Parallel()
	_, cfg := testDirs(t)
	cfg.Families = FamilyFiles
	p := newTestPlane(t, cfg)
	a1, a2, b := p.CallFor("sub:main/a", "run-1"), p.CallFor("sub:main/a", "run-2"), p.CallFor("sub:main/b", "run-1")
	if a1.Shell != a2.Shell || a1.Shell == b.Shell || a1.Shell == p.Call.Shell {
		t.Fatalf("shells: a1 %p a2 %p b %p root %p", a1.Shell, a2.Shell, b.Shell, p.Call.Shell)
	}
	if a1.Strand != "sub:main/a" || a2.OpID != "run-2" || a1.Broker != p.Broker || a1.Blobs != p.Blobs {
		t.Fatalf("child call: %+v", a1)
	}
}

// TestCloseEndsCodeModeLaunches: Close tears the code mode engine's
// launched programs down, so a launch after it is refused
// engine_closed before anything is built.
func TestCloseEndsCodeModeLaunches(t *testing.T) {
	t.Parallel()
	_, cfg := testDirs(t)
	cfg.Families = FamilyFiles | FamilyCodeMode
	p := newTestPlane(t, cfg)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	raw := []byte(`{"mode": "launch", "program": "package main\n\nfunc main() {}\n"}`)
	o := p.Registry.Dispatch(t.Context(), p.CallFor(DefaultStrand, "op"), codemode.ToolName, raw)
	if o.Code != codemode.CodeEngineClosed {
		t.Fatalf("launch after Close: %s: %s", o.Code, o.Text)
	}
}
