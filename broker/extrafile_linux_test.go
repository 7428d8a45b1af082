//go:build linux

package broker

import (
	"bufio"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentloom/loom/sandbox"
)

// socketPair returns the two ends of a unix stream socketpair, closed
// when tb ends.
func socketPair(tb testing.TB) (ours, theirs *os.File) {
	tb.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	ours, theirs = os.NewFile(uintptr(fds[0]), "ours"), os.NewFile(uintptr(fds[1]), "theirs")
	tb.Cleanup(func() { ours.Close(); theirs.Close() })
	return ours, theirs
}

// TestExtraFileReachesTheCommand: with CallSpec.ExtraFile, the command
// (on a helper started for it, and on a warm one that receives the file
// over its handoff socket; in a policy jail, and in the empty root with
// and without /proc) holds exactly descriptors 0, 1, 2 and ExtraFileFD
// open across exec, and data crosses fd ExtraFileFD both ways; without
// one it holds exactly 0, 1 and 2. The control: the same probe run
// outside the jail with a descriptor leaked to it at 7 lists that one.
func TestExtraFileReachesTheCommand(t *testing.T) {
	ws := t.TempDir()
	prog := staticProbe(t, ws)

	t.Run("control_leak_seen", func(t *testing.T) {
		_, theirs := socketPair(t)
		cmd := exec.Command(prog, "fds")
		cmd.ExtraFiles = []*os.File{nil, nil, nil, nil, theirs} // fd 7
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("probe: %v %q", err, out)
		}
		// The test process may itself hold descriptors its parent leaked
		// to it (os/exec passes only 0-2 and ExtraFiles, so not those).
		got := strings.TrimSpace(string(out))
		fds := strings.Fields(strings.Trim(strings.TrimPrefix(got, "inherited proc "), "[]"))
		if !strings.HasPrefix(got, "inherited proc [0 1 2 ") || !slices.Contains(fds, "7") {
			t.Fatalf("the probe does not see a descriptor leaked to it at 7: %q", got)
		}
	})

	jails := []struct {
		name string
		spec func(argv ...string) sandbox.CallSpec
		via  string
	}{
		{"policy_jail", func(argv ...string) sandbox.CallSpec {
			return sandbox.CallSpec{Argv: append([]string{prog}, argv...), Policy: testPolicy(ws)}
		}, "proc"},
		{"empty_root_proc", func(argv ...string) sandbox.CallSpec { return emptyRootSpec(prog, true, argv...) }, "proc"},
		{"empty_root_no_proc", func(argv ...string) sandbox.CallSpec { return emptyRootSpec(prog, false, argv...) }, "fcntl"},
	}
	for _, helper := range []string{"cold", "warm"} {
		t.Run(helper, func(t *testing.T) {
			opts := Options{WarmHelperIdle: -1}
			if helper == "warm" {
				opts = Options{}
			}
			b := newTestBroker(t, opts)
			// The jails alternate policies: every one is handed a helper
			// holding none (TestPrimedHelperTakesTheExtraFile covers a
			// primed one).
			b.test.noPrime = true
			var spawned, inClear atomic.Int32
			b.test.onSpawn = func(_ int, warm bool) {
				// A warm helper the pool starts meanwhile is not the
				// command's.
				if inClear.Load() == 1 && !warm {
					spawned.Add(1)
				}
			}
			// The first command probes the layers and, for the warm broker,
			// leaves a helper prestarted.
			if _, err := clearCollect(t, b, sandbox.CallSpec{Argv: []string{"true"}, Policy: testPolicy(ws), Env: map[string]string{"PATH": "/usr/bin:/bin"}}); err != nil {
				t.Fatal(err)
			}
			for _, j := range jails {
				for _, extra := range []bool{true, false} {
					name := j.name + "/none"
					if extra {
						name = j.name + "/extra"
					}
					t.Run(name, func(t *testing.T) {
						if helper == "warm" {
							waitWarm(t, b)
						}
						spec := j.spec("fds")
						ours, theirs := socketPair(t)
						if extra {
							spec.ExtraFile = theirs
						}
						spawned.Store(0)
						inClear.Store(1)
						ex, err := b.Clear(t.Context(), spec)
						inClear.Store(0)
						if err != nil {
							t.Fatal(err)
						}
						theirs.Close() // the caller's copy, closed once Clear returned
						if n, want := spawned.Load(), map[string]int32{"cold": 1, "warm": 0}[helper]; n != want {
							t.Errorf("%d helpers started inside Clear, want %d (%s path)", n, want, helper)
						}
						var reply string
						if extra {
							if _, err := ours.WriteString("ping\n"); err != nil {
								t.Fatal(err)
							}
							reply, _ = bufio.NewReader(ours).ReadString('\n')
						}
						r := collect(ex)
						if r.settled.ExitCode != 0 {
							t.Fatalf("settled %+v stderr %q\n%s", r.settled, r.stderr, r.enf)
						}
						want := "inherited " + j.via + " [0 1 2]"
						if extra {
							want = "inherited " + j.via + " [0 1 2 5]"
						}
						if got := strings.TrimSpace(r.stdout); got != want {
							t.Errorf("descriptors: %q, want %q", got, want)
						}
						if extra && reply != "pong ping\n" {
							t.Errorf("reply on fd %d: %q, want %q", sandbox.ExtraFileFD, reply, "pong ping\n")
						}
					})
				}
			}
		})
	}
}
