//go:build linux

package broker

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A network-off jail's lo is up (its fresh namespace's lo has ::1 only
// once up), whether the helper brought it up while it waited in the pool
// or after its configuration came; the report says so. The control runs
// the same probe in a fresh network namespace nobody brought lo up in.
func TestLoopbackUpInNetworkOffJail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		idle     time.Duration
		launched bool
	}{{"warm", 0, false}, {"cold", -1, false}, {"cold-launched", -1, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newTestBroker(t, Options{WarmHelperIdle: tc.idle})
			defer b.Close()
			if tc.launched {
				b.launchAboveRSS = -1
			}
			p := testPolicy(t.TempDir())
			if tc.idle >= 0 {
				run(t, b, p, 10*time.Second, "true")
				waitWarm(t, b)
			}
			r := run(t, b, p, 10*time.Second, "cat", "/proc/net/if_inet6")
			if !strings.Contains(r.stdout, " lo\n") {
				t.Fatalf("lo has no address in the jail: %q %+v", r.stdout, r.settled)
			}
			if l, ok := r.enf.Layer(LayerLoopback); !ok || !l.Applied {
				t.Fatalf("loopback layer %+v (reported %v)", l, ok)
			}
		})
	}
	t.Run("control", func(t *testing.T) {
		t.Parallel()
		cmd := exec.Command("cat", "/proc/net/if_inet6")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: syscall.Getuid(), Size: 1}}}
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out), " lo\n") {
			t.Fatalf("lo has an address in a fresh network namespace nobody set up: %q; the probe shows nothing", out)
		}
	})
}
