package broker

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/broker/internal/jail"
)

// TestHelperOwnEnvNeverReachesTheCommand: the helper's own environment
// (jail.ProcessEnv: the marker and GOMAXPROCS) is not the command's, on
// a cold helper and on a warm one. The control is that environment
// itself, which holds both, so a leak would show them.
func TestHelperOwnEnvNeverReachesTheCommand(t *testing.T) {
	own := jail.ProcessEnv()
	for _, want := range []string{jail.EnvName + "=", "GOMAXPROCS="} {
		if !slices.ContainsFunc(own, func(kv string) bool { return strings.HasPrefix(kv, want) }) {
			t.Fatalf("control: the helper's own environment %q has no %s", own, want)
		}
	}
	for _, f := range []struct {
		name string
		idle time.Duration
	}{{"cold", -1}, {"warm", 0}} {
		t.Run(f.name, func(t *testing.T) {
			b := newTestBroker(t, Options{WarmHelperIdle: f.idle})
			if f.idle >= 0 {
				warmUp(t, b)
			}
			e := newEscapeEnv(t)
			r := runIn(t, b, e, e.policy(), 20*time.Second, `env`)
			if r.settled.ExitCode != 0 {
				t.Fatalf("env: %+v %s", r.settled, r.stderr)
			}
			for _, kv := range own {
				name, _, _ := strings.Cut(kv, "=")
				if strings.Contains(r.stdout, name+"=") {
					t.Errorf("the command's environment holds the helper's %s:\n%s", name, r.stdout)
				}
			}
		})
	}
}
