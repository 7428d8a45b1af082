package tool

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/internal/jailtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if jailHelper.dir != "" {
		os.RemoveAll(jailHelper.dir)
	}
	os.Exit(code)
}

// jailHelper is the jail helper the test brokers of this package run: a
// host-built program (jailtest.HostHelper), built once per test binary
// and kept until TestMain removes it, instead of the race-instrumented
// test binary re-executed for every jail.
var jailHelper struct {
	once sync.Once
	dir  string
	path string
}

// jailHelperForTests returns the path of the package's host-built jail
// helper, for broker.Options.HelperPath, building it on first use. It
// fails tb when the helper cannot be built: a test broker never falls
// back to re-executing the test binary unnoticed.
func jailHelperForTests(tb testing.TB) string {
	tb.Helper()
	jailHelper.once.Do(func() {
		built := jailtest.HostHelper(tb) // lives in tb's temporary directory
		data, err := os.ReadFile(built)
		if err != nil {
			tb.Fatalf("reading the host helper: %v", err)
		}
		dir, err := os.MkdirTemp("", "loom-tool-test-helper-")
		if err != nil {
			tb.Fatalf("a directory for the host helper: %v", err)
		}
		p := filepath.Join(dir, "host")
		if err := os.WriteFile(p, data, 0o755); err != nil {
			os.RemoveAll(dir)
			tb.Fatalf("copying the host helper: %v", err)
		}
		jailHelper.dir, jailHelper.path = dir, p
	})
	if jailHelper.path == "" {
		tb.Fatal("the host-built jail helper could not be built (see the first test that asked for it)")
	}
	return jailHelper.path
}

// testBroker returns a broker running the package's host-built helper,
// closed when tb ends.
func testBroker(tb testing.TB) *broker.Broker {
	b := broker.New(broker.Options{HelperPath: jailHelperForTests(tb)})
	tb.Cleanup(func() { b.Close() })
	return b
}

// shellTimeout bounds a command of shellTool.
const shellTimeout = time.Minute

// shellTool is what these tests run commands with: a tool named "bash"
// that runs its command with /bin/sh through the call's broker, in the
// workspace, under the base policy with the workspace writable. The bash
// tool itself lives in package job, which imports this one, so these
// tests cannot register it; package job's tests run the same guards
// through it. A denial is an error outcome with the broker's code and
// explanation, a failed or non-zero command an error outcome with its
// output.
func shellTool() Tool {
	type shellArgs struct {
		Command string `json:"command"`
	}
	return Typed(Tool{Name: "bash", Replay: ReplayNever, Mode: Exclusive},
		func(ctx context.Context, c *Call, a shellArgs) Outcome {
			req := broker.Policy{
				SystemRoots:   broker.SystemReadableRoots(),
				WritableRoots: []string{c.Workspace},
				Network:       c.Base.Network,
				EnvAllow:      c.Base.EnvAllow,
			}
			pol, err := broker.Compose(c.Base, req, c.Grants)
			if d := brokerDenial(err); d != nil {
				return Fail(Code(d.Code), d.Explain())
			}
			ex, err := c.Broker.Clear(ctx, broker.CallSpec{
				Key: c.stepKey(), Argv: []string{"/bin/sh", "-c", a.Command},
				Dir: c.Workspace, Env: c.Env, Policy: pol, Timeout: shellTimeout,
			})
			if d := brokerDenial(err); d != nil {
				return Fail(Code(d.Code), d.Explain())
			}
			var out []byte
			for o := range ex.Output() {
				out = append(out, o.Bytes...)
			}
			if s := ex.Wait(); s.Failed != "" || s.ExitCode != 0 {
				return Fail("command_failed", string(out)+s.Failed)
			}
			return Success(string(out))
		})
}
