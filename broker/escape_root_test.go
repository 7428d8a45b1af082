//go:build linux

package broker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentloom/loom/sandbox"
)

// The policy_root layer: the jail's root holds the policy's roots only,
// so a file or socket anywhere else cannot even be named, however or
// whenever it came to be. Each case's control runs the same probe jailed
// under the same policy with the layer off (rootOff): the host view,
// read-only, with its sockets masked as the host's socket table listed
// them when the command started.

// rootEscapeSeq makes the paths the cases create outside the test's
// temporary directories unique across cases and runs.
var rootEscapeSeq atomic.Int64

// freshOutside makes a directory outside every root under parent (removed
// at cleanup) and returns it.
func freshOutside(t *testing.T, e *escapeEnv, parent string) string {
	t.Helper()
	d := filepath.Join(parent, fmt.Sprintf("loom-escape-root-%d-%d", os.Getpid(), rootEscapeSeq.Add(1)))
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	e.cleanup = append(e.cleanup, func() { os.RemoveAll(d) })
	return d
}

// lateSocket is what a late-socket case does on the host once the
// command is running: it returns the path the probe then dials.
type lateSocket func(t *testing.T, e *escapeEnv) string

// runAfterStart runs the unix probe against the path act returns, where
// act runs on the host after the command started (the command says READY
// and waits on its stdin until act is done). Jailed, the broker is the
// suite's; the control runs under the suite's rootOff broker, the same policy without the
// policy_root layer, or, when widen is set, under b with the policy
// widen makes.
func runAfterStart(before func(t *testing.T, e *escapeEnv), act lateSocket, widen func(e *escapeEnv, p *sandbox.Policy)) func(t *testing.T, b *Broker, e *escapeEnv, jailed bool) bool {
	return func(t *testing.T, b *Broker, e *escapeEnv, jailed bool) bool {
		if before != nil {
			before(t, e)
		}
		p := e.policy()
		switch {
		case jailed:
		case widen != nil:
			widen(e, &p)
		default:
			b = e.brokers.rootOff()
		}
		// The path is known only after act: the command reads it from
		// its stdin.
		stdinR, stdinW := io.Pipe()
		defer stdinW.Close()
		script := `echo READY; read -r path; ` + layerProbeEnv + `=unix exec "$PROBE" "$path"`
		ex, d := b.Clear(context.Background(), sandbox.CallSpec{
			Key: sandbox.StepKey{OpID: "escape", StepID: t.Name()}, Argv: []string{"sh", "-c", script},
			Dir: e.ws, Env: e.vars(), Policy: p, Budget: sandbox.Budget{MaxOutstanding: 1}, Timeout: 20 * time.Second,
			Stdin: stdinR,
		})
		if d != nil {
			t.Fatalf("Clear: %v", d)
		}
		var out, errb bytes.Buffer
		var once sync.Once
		for o := range ex.Output() {
			if o.Stream == sandbox.Stdout {
				out.Write(o.Bytes)
			} else {
				errb.Write(o.Bytes)
			}
			if strings.Contains(out.String(), "READY") {
				once.Do(func() {
					path := act(t, e)
					go func() {
						io.WriteString(stdinW, path+"\n")
						stdinW.Close()
					}()
				})
			}
		}
		s := ex.Wait()
		got := unixReached(t, e, result{})
		if got == jailed {
			t.Logf("jailed=%v stdout=%q stderr=%q settled=%+v\n%s", jailed, out.String(), errb.String(), s, ex.Enforcement)
		}
		return got
	}
}

// bindLate binds a listening socket at where(e) after the command
// started and returns its path.
func bindLate(where func(t *testing.T, e *escapeEnv) string) lateSocket {
	return func(t *testing.T, e *escapeEnv) string {
		p := where(t, e)
		unixListener("unix", func(*escapeEnv) string { return p })(t, e)
		return p
	}
}

// renameLate renames the socket the case bound before the start ($ARG)
// to a second name beside it after the command started.
func renameLate(t *testing.T, e *escapeEnv) string {
	p := e.arg + ".renamed"
	if err := os.Rename(e.arg, p); err != nil {
		t.Fatal(err)
	}
	e.cleanup = append(e.cleanup, func() { os.Remove(p) })
	return p
}

// renamed binds a socket outside every root and renames it before the
// command starts: the host's socket table still shows the old name.
func renamed(t *testing.T, e *escapeEnv) {
	unixListener("unix", func(e *escapeEnv) string { return filepath.Join(e.hidden, "early.sock") })(t, e)
	p := e.arg + ".renamed"
	if err := os.Rename(e.arg, p); err != nil {
		t.Fatal(err)
	}
	e.cleanup = append(e.cleanup, func() { os.Remove(p) })
	e.arg = p
}

// boundByFdPath binds a socket outside every root through a path of the
// form /proc/self/fd/N/name: the host's socket table shows that path,
// which names nothing (or something else) in the jail.
func boundByFdPath(t *testing.T, e *escapeEnv) {
	dir, err := os.Open(e.hidden)
	if err != nil {
		t.Fatal(err)
	}
	e.cleanup = append(e.cleanup, func() { dir.Close() })
	via := fmt.Sprintf("/proc/self/fd/%d/fd.sock", dir.Fd())
	unixListener("unix", func(*escapeEnv) string { return via })(t, e)
	p := filepath.Join(e.hidden, "fd.sock")
	e.cleanup = append(e.cleanup, func() { os.Remove(p) })
	e.arg = p
}

// linkLate hard-links the socket the case bound before the start ($ARG)
// under a second name after the command started.
func linkLate(t *testing.T, e *escapeEnv) string {
	p := e.arg + ".link"
	if err := os.Link(e.arg, p); err != nil {
		t.Fatal(err)
	}
	e.cleanup = append(e.cleanup, func() { os.Remove(p) })
	return p
}

func hiddenSock(_ *testing.T, e *escapeEnv) string { return filepath.Join(e.hidden, "late.sock") }

// rootEscapeCases attack what the jail's root shows.
func rootEscapeCases() []escapeCase {
	outsideFile := func(parent func(e *escapeEnv) string) func(t *testing.T, e *escapeEnv) {
		return func(t *testing.T, e *escapeEnv) {
			d := freshOutside(t, e, parent(e))
			e.write(t, filepath.Join(d, "file"), "s3cr3t-outside-every-root\n")
			e.arg = filepath.Join(d, "file")
		}
	}
	// Absent, not merely unreadable: Landlock does not mediate stat, so
	// with the host view the path is found.
	absentScript := `if [ -e "$ARG" ]; then echo PROBE-SUCCEEDED; fi; cat "$ARG"`
	boundBefore := func(t *testing.T, e *escapeEnv) {
		unixListener("unix", func(e *escapeEnv) string { return filepath.Join(e.hidden, "early.sock") })(t, e)
	}
	// The nested root's workspace lies outside /tmp: roots under the
	// host's /tmp are bound again over the jail's scratch, each on its
	// own, so they would not show whether the plan binds it.
	nestedSetup := func(t *testing.T, e *escapeEnv) {
		d := freshOutside(t, e, "/var/tmp")
		if err := os.Mkdir(filepath.Join(d, ".scratch"), 0o755); err != nil {
			t.Fatal(err)
		}
		e.arg = d
	}
	nestedPolicy := func(e *escapeEnv, p *sandbox.Policy) {
		p.WritableRoots = append(p.WritableRoots, e.arg, filepath.Join(e.arg, ".scratch"))
	}
	return []escapeCase{
		{
			// A root under a writable root is a mount of its own, so a
			// command cannot rename it away and leave a link to / in its
			// place for the harness's file tools to follow (red team:
			// mcpserver with -scratch inside the workspace).
			name:   "nested_writable_root_swapped_for_a_link",
			setup:  nestedSetup,
			policy: nestedPolicy,
			script: `mv "$ARG/.scratch" "$ARG/.scratch.old" && ln -s / "$ARG/.scratch" && echo PROBE-SUCCEEDED`,
			escaped: func(t *testing.T, e *escapeEnv, r result) bool {
				fi, err := os.Lstat(filepath.Join(e.arg, ".scratch"))
				return probeSucceeded(t, e, r) || err != nil || fi.Mode()&os.ModeSymlink != 0
			},
		},
		{
			name:    "file_outside_every_root_absent",
			setup:   outsideFile(hiddenDir),
			script:  absentScript,
			rootOff: true,
			escaped: func(t *testing.T, e *escapeEnv, r result) bool {
				return probeSucceeded(t, e, r) || strings.Contains(r.stdout, "s3cr3t-outside")
			},
		},
		{
			name:        "file_in_fresh_top_level_dir_absent",
			rootControl: true, // only root makes a directory in /
			setup:       outsideFile(func(*escapeEnv) string { return "/" }),
			script:      absentScript,
			rootOff:     true,
			escaped:     probeSucceeded,
		},
		{
			name: "unix_socket_bound_after_start_outside_every_root",
			run:  runAfterStart(nil, bindLate(hiddenSock), nil),
		},
		{
			name:        "unix_socket_bound_after_start_under_var_lib",
			rootControl: true, // only root binds under /var/lib
			run: runAfterStart(nil, bindLate(func(t *testing.T, e *escapeEnv) string {
				return filepath.Join(freshOutside(t, e, "/var/lib"), "late.sock")
			}), nil),
		},
		{
			name:    "unix_socket_renamed_before_start",
			setup:   renamed,
			script:  layerProbeEnv + `=unix exec "$PROBE" "$ARG"`,
			rootOff: true,
			escaped: unixReached,
		},
		{
			// The host view's masks now catch this socket too (the table's
			// fd path is resolved where the host bound it), so the control
			// runs unjailed.
			name:    "unix_socket_bound_through_fd_path",
			setup:   boundByFdPath,
			script:  layerProbeEnv + `=unix exec "$PROBE" "$ARG"`,
			escaped: unixReached,
		},
		{
			name: "unix_socket_hard_link_after_start",
			run:  runAfterStart(boundBefore, linkLate, nil),
		},
		{
			// Under a granted root the start's mask stays on the socket
			// when the host renames it (the mount is on the dentry). The
			// control shares the socket, so nothing masks it.
			name: "unix_socket_under_root_renamed_after_start",
			run: runAfterStart(func(t *testing.T, e *escapeEnv) {
				unixListener("unix", func(e *escapeEnv) string { return filepath.Join(e.out, "early.sock") })(t, e)
			}, renameLate, shareArg),
		},
	}
}

// TestResidualLateSocketUnderRoot keeps SECURITY.md's residual risk
// honest: a socket the host binds under a granted root after the command
// started is not in the start's socket table, so nothing masks it and
// the command reaches it. The same socket bound outside every root is
// out of reach (the escape suite's
// unix_socket_bound_after_start_outside_every_root).
func TestResidualLateSocketUnderRoot(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, Options{})
	defer b.Close()
	e := newEscapeEnv(t)
	inWorkspace := bindLate(func(_ *testing.T, e *escapeEnv) string { return filepath.Join(e.ws, "late.sock") })
	if !runAfterStart(nil, inWorkspace, nil)(t, b, e, true) {
		t.Errorf("a socket bound in the workspace after the start was not reached: SECURITY.md overstates the residual")
	}
}
