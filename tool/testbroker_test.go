package tool

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/internal/jailtest"
	"github.com/agentloom/loom/sandbox"
)

func TestMain(m *testing.M) {
	code := m.Run()
	jailHelper.Remove()
	os.Exit(code)
}

// jailHelper is the host-built jail helper this package's test brokers
// run, built once per test binary and removed by TestMain.
var jailHelper jailtest.Shared

// testBroker returns a broker running the package's host-built helper,
// closed when tb ends.
func testBroker(tb testing.TB) *broker.Broker {
	b := broker.New(broker.Options{HelperPath: jailHelper.Path(tb)})
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
			req := sandbox.Policy{
				SystemRoots:   sandbox.SystemReadableRoots(),
				WritableRoots: []string{c.Workspace},
				Network:       c.Base.Network,
				EnvAllow:      c.Base.EnvAllow,
			}
			pol, err := sandbox.Compose(c.Base, req, c.Grants)
			if d := sandbox.DenialOf(err); d != nil {
				return Fail(Code(d.Code), d.Explain())
			}
			ex, err := c.Broker.Clear(ctx, sandbox.CallSpec{
				Key: c.stepKey(), Argv: []string{"/bin/sh", "-c", a.Command},
				Dir: c.Workspace, Env: c.Env, Policy: pol, Timeout: shellTimeout,
			})
			if d := sandbox.DenialOf(err); d != nil {
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
