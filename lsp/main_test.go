package lsp

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/internal/jailtest"
	"github.com/agentloom/loom/internal/lsptest"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
	"github.com/agentloom/loom/toolchain"
)

func TestMain(m *testing.M) {
	code := m.Run()
	jailHelper.Remove()
	fake.Remove()
	os.Exit(code)
}

// jailHelper is the host-built jail helper this package's test brokers
// run, built once per test binary and removed by TestMain.
var jailHelper jailtest.Shared

// fake is the scripted language server, built once per test binary.
var fake lsptest.Fake

// testSession is a workspace and a scratch directory beside it under
// /var/tmp, with the session base policy and environment a plane gives
// commands (toolchain profiles included), and a test broker.
type testSession struct {
	ws, scratch string
	base        sandbox.Policy
	env         map[string]string
	broker      *broker.Broker
}

func newSession(tb testing.TB) *testSession {
	tb.Helper()
	root, err := os.MkdirTemp("/var/tmp", "loom-lsp-test-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(root) })
	root, _ = filepath.EvalSymlinks(root)
	s := &testSession{ws: filepath.Join(root, "ws"), scratch: filepath.Join(root, "scratch")}
	for _, d := range []string{s.ws, filepath.Join(s.scratch, "home")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	s.env = map[string]string{"PATH": toolchain.DefaultPath, "HOME": filepath.Join(s.scratch, "home"), "LANG": "C.UTF-8"}
	s.base = sandbox.Policy{
		SystemRoots:   sandbox.SystemReadableRoots(),
		WritableRoots: []string{s.ws, s.scratch},
		Protected:     broker.DefaultProtected(s.ws),
		Network:       sandbox.NetworkOff,
	}
	profiles, err := toolchain.Detect(toolchain.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	profiles, err = toolchain.Prepare(profiles)
	if err != nil {
		tb.Fatal(err)
	}
	for _, p := range profiles {
		for k, v := range p.Env {
			s.env[k] = v
		}
		s.base.SystemRoots = append(s.base.SystemRoots, p.ReadOnly...)
		s.base.WritableRoots = append(s.base.WritableRoots, p.Caches...)
	}
	s.broker = broker.New(broker.Options{HelperPath: jailHelper.Path(tb)})
	tb.Cleanup(func() { s.broker.Close() })
	return s
}

// plane makes a plane over servers, closed when tb ends.
func (s *testSession) plane(tb testing.TB, servers ...Server) *Plane {
	tb.Helper()
	p, err := New(Options{Workspace: s.ws, Servers: servers, Broker: s.broker, Base: s.base, Env: s.env, TempDir: s.scratch})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close() })
	return p
}

// fakeConfig is the fake server in mode, owning *.txt files.
func fakeConfig(tb testing.TB, mode string) Server {
	return Server{Name: "fake", Command: []string{fake.Path(tb), "-mode", mode}, Files: []FilePattern{{Pattern: "*.txt", LanguageID: "plaintext"}}}
}

// write writes content to name in the workspace and diagnoses it.
func (s *testSession) write(tb testing.TB, p *Plane, ctx context.Context, name, content string) tool.FileDiagnostics {
	tb.Helper()
	path := filepath.Join(s.ws, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
	got := p.Diagnose(ctx, []tool.ChangedFile{{Path: path, Content: []byte(content)}})
	if len(got) != 1 {
		tb.Fatalf("Diagnose answered %d diagnoses for one owned file: %+v", len(got), got)
	}
	return got[0]
}
