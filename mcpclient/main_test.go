package mcpclient

import (
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/internal/jailtest"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/toolchain"
)

func TestMain(m *testing.M) {
	code := m.Run()
	jailHelper.Remove()
	for _, b := range builds {
		if b.dir != "" {
			os.RemoveAll(b.dir)
		}
	}
	os.Exit(code)
}

// jailHelper is the host-built jail helper this package's test brokers
// run, built once per test binary.
var jailHelper jailtest.Shared

// built is one program built once per test binary under /var/tmp (a
// jail's /tmp is its own).
type built struct {
	once      sync.Once
	dir, path string
	err       error
}

var builds = map[string]*built{"fakeserver": {}, "mcpserver": {}}

// program builds the package at pkg (relative to the module root) once
// and returns its path.
func program(tb testing.TB, name, pkg string) string {
	tb.Helper()
	b := builds[name]
	b.once.Do(func() {
		_, here, _, _ := runtime.Caller(0)
		if b.dir, b.err = os.MkdirTemp("/var/tmp", "loom-mcp-"+name+"-"); b.err != nil {
			return
		}
		os.Chmod(b.dir, 0o755)
		b.path = filepath.Join(b.dir, name)
		cmd := osexec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-buildvcs=false", "-o", b.path, pkg)
		cmd.Dir = filepath.Join(filepath.Dir(here), "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("building %s: %v\n%s", pkg, err, out)
		}
	})
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.path
}

func fakeServer(tb testing.TB) string {
	return program(tb, "fakeserver", "./mcpclient/internal/fakeserver")
}

func loomServer(tb testing.TB) string {
	return program(tb, "mcpserver", "./examples/mcpserver")
}

// testSession is a workspace, a scratch directory and a directory
// outside both under /var/tmp, with the session base policy and
// environment a plane gives commands, and a test broker.
type testSession struct {
	ws, scratch, outside string
	base                 sandbox.Policy
	env                  map[string]string
	profiles             []toolchain.Profile
	broker               *broker.Broker
}

func newSession(tb testing.TB) *testSession {
	tb.Helper()
	root, err := os.MkdirTemp("/var/tmp", "loom-mcp-test-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(root) })
	root, _ = filepath.EvalSymlinks(root)
	s := &testSession{ws: filepath.Join(root, "ws"), scratch: filepath.Join(root, "scratch"), outside: filepath.Join(root, "outside")}
	for _, d := range []string{s.ws, filepath.Join(s.scratch, "home"), s.outside} {
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
	s.broker = broker.New(broker.Options{HelperPath: jailHelper.Path(tb)})
	tb.Cleanup(func() { s.broker.Close() })
	return s
}

// options are the client options of s.
func (s *testSession) options() Options {
	return Options{Workspace: s.ws, Broker: s.broker, Base: s.base, Env: s.env, TempDir: s.scratch, Toolchains: s.profiles}
}

// client makes the client of srv in s, closed with the test.
func (s *testSession) client(tb testing.TB, srv Server) *Client {
	tb.Helper()
	c, err := New(srv, s.options())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// exec is the command of bin, unjailed.
func exec(bin string, args ...string) *osexec.Cmd { return osexec.Command(bin, args...) }
