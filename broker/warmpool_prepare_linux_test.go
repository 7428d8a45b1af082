//go:build linux

package broker

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentloom/loom/sandbox"
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
				b.test.launchAboveRSS = -1
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
			if l, ok := r.enf.Layer(sandbox.LayerLoopback); !ok || !l.Applied {
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

// Every mask is a clone of the stand-ins a warm helper makes while it
// waits (and a cold one when it starts): a masked secret under a
// writable root reads empty and refuses writes, whether the stand-ins
// were made ahead or not, and the next command's jail shows nothing the
// previous one tried to write there. The control is the same probe on a
// file beside the secrets, which no mask covers: written and read back.
func TestMaskStandinsPreparedAhead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		idle time.Duration
	}{{"warm", 0}, {"cold", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newTestBroker(t, Options{WarmHelperIdle: tc.idle})
			defer b.Close()
			home := t.TempDir()
			if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
				t.Fatal(err)
			}
			for name, body := range map[string]string{".netrc": "machine host password hunter2\n", ".ssh/id_ed25519": "PRIVATE\n", "notes": "plain\n"} {
				if err := os.WriteFile(filepath.Join(home, name), []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			p := testPolicy(home)
			probe := func(target string) result {
				ex, err := b.Clear(context.Background(), sandbox.CallSpec{
					Argv: []string{"sh", "-c", `echo planted >"$1" 2>/dev/null; echo planted >"$2/new" 2>/dev/null; cat "$1"; ls "$2"`, "sh", target, home + "/.ssh"},
					Env:  map[string]string{"PATH": "/usr/bin:/bin", "HOME": home}, Policy: p,
					Budget: sandbox.Budget{MaxOutstanding: 1}, Timeout: 10 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				return collect(ex)
			}
			for round := range 3 {
				if tc.idle >= 0 && round > 0 {
					waitWarm(t, b)
				}
				if r := probe(home + "/.netrc"); r.stdout != "" {
					t.Fatalf("round %d: a masked secret read %q (settled %+v)", round, r.stdout, r.settled)
				}
				if r := probe(home + "/notes"); r.stdout != "planted\n" {
					t.Fatalf("round %d control: a file no mask covers read %q, want it written", round, r.stdout)
				}
			}
			if b, err := os.ReadFile(filepath.Join(home, ".netrc")); err != nil || string(b) != "machine host password hunter2\n" {
				t.Fatalf("the host's secret changed: %q %v", b, err)
			}
			if _, err := os.Stat(filepath.Join(home, ".ssh/new")); err == nil {
				t.Fatal("a file was written into a masked directory")
			}
		})
	}
}
