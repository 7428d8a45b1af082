package broker

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// testPolicy returns a policy with the system roots readable and ws
// writable, network off.
func testPolicy(ws string) Policy {
	return Policy{
		ReadableRoots: SystemReadableRoots(),
		WritableRoots: []string{ws},
		Network:       NetworkOff,
		EnvAllow:      []string{"PATH", "HOME"},
	}
}

type result struct {
	stdout, stderr string
	settled        Settled
	enf            Enforcement
}

// run clears argv under p and collects everything.
func run(t testing.TB, b *Broker, p Policy, timeout time.Duration, argv ...string) result {
	t.Helper()
	ex, d := b.Clear(context.Background(), CallSpec{
		Key:     StepKey{OpID: "op", StepID: t.Name()},
		Argv:    argv,
		Env:     map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/nonexistent"},
		Policy:  p,
		Budget:  Budget{MaxOutstanding: 64},
		Timeout: timeout,
	})
	if d != nil {
		t.Fatalf("Clear(%q): %v", argv, d)
	}
	var out, errb bytes.Buffer
	for o := range ex.Output() {
		if o.Stream == Stdout {
			out.Write(o.Bytes)
		} else {
			errb.Write(o.Bytes)
		}
	}
	return result{out.String(), errb.String(), ex.Wait(), ex.Enforcement}
}

func TestClearEcho(t *testing.T) {
	ws := t.TempDir()
	b := New(Options{})
	r := run(t, b, testPolicy(ws), 10*time.Second, "sh", "-c", "echo hello; echo err >&2; id; pwd; ls /proc; exit 3")
	t.Logf("stdout=%q stderr=%q settled=%+v\n%s", r.stdout, r.stderr, r.settled, r.enf)
	if r.settled.ExitCode != 3 {
		t.Fatalf("exit %d", r.settled.ExitCode)
	}
}
