//go:build linux

package broker

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/agentloom/loom/broker/internal/jail"
	"github.com/agentloom/loom/sandbox"
	"golang.org/x/sys/unix"
)

// layerProbeEnv selects one of this file's probe modes when the test
// binary is run (jailed or not) as a probe: LOOM_LAYER_PROBE=<mode>, with
// the mode's operands as arguments. A probe prints PROBE-SUCCEEDED and
// exits 0 when its action worked, and exits 1 when it was refused.
const layerProbeEnv = "LOOM_LAYER_PROBE"

func init() {
	mode := os.Getenv(layerProbeEnv)
	if mode == "" {
		return
	}
	if err := layerProbe(mode, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "probe %s: %v\n", mode, err)
		os.Exit(1)
	}
	fmt.Println("PROBE-SUCCEEDED")
	os.Exit(0)
}

// ttyInjection is what the terminal probes type into their terminal.
const ttyInjection = "id\n"

func tiocsti(fd int) error {
	for i := 0; i < len(ttyInjection); i++ {
		c := ttyInjection[i]
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCSTI, uintptr(unsafe.Pointer(&c))); e != 0 {
			return fmt.Errorf("TIOCSTI: %w", e)
		}
	}
	return nil
}

func layerProbe(mode string, args []string) error {
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	switch mode {
	case "tty-sctty":
		// Take the terminal on fd 0 as the controlling terminal (as a
		// session leader may), then type into it.
		unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCSCTTY, 0)
		return tiocsti(0)
	case "tty-reopen":
		// Reopening the terminal as a session leader with none makes it
		// the controlling terminal without any ioctl; read-only is enough
		// for TIOCSTI.
		fd, err := unix.Open("/proc/self/fd/0", unix.O_RDONLY, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return tiocsti(fd)
	case "tty-dev":
		fd, err := unix.Open("/dev/tty", unix.O_RDONLY, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return tiocsti(fd)
	case "session":
		// Succeeds when the process shares a session with whoever started
		// it (the host's session and so its controlling terminal).
		sid, err := unix.Getsid(0)
		if err != nil {
			return err
		}
		if sid == unix.Getpid() {
			return fmt.Errorf("session %d is the process's own", sid)
		}
		return nil
	case "mode":
		return modeProbe(arg(0), arg(1))
	case "xattr":
		return unix.Setxattr(arg(0), "user.loom_escape", []byte("x"), 0)
	case "shm":
		return shmProbe(args)
	case "shm-touch":
		size, err := strconv.Atoi(arg(0))
		if err != nil {
			return err
		}
		return shmTouchProbe(size)
	case "securebits":
		// Succeeds (the escape) unless every bit jail.Securebits names is
		// set and KEEP_CAPS is off: a root that could regain
		// capabilities by exec or by changing uids.
		v, err := unix.PrctlRetInt(unix.PR_GET_SECUREBITS, 0, 0, 0, 0)
		if err != nil {
			return err
		}
		if v&jail.Securebits == jail.Securebits && v&jail.SecbitKeepCaps == 0 {
			return fmt.Errorf("securebits locked: %#x", v)
		}
		return nil
	case "inotify":
		n, err := strconv.Atoi(arg(1))
		if err != nil {
			return err
		}
		return inotifyProbe(arg(0), n)
	case "unix", "unixgram":
		c, err := net.DialTimeout(mode, arg(0), 2*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte("escape"))
		return err
	}
	return fmt.Errorf("unknown layer probe %q", mode)
}

// modeProbe tries to leave a setuid or setgid file (or directory) at path
// by one syscall path; the case checks the result on the host.
func modeProbe(how, path string) error {
	unix.Umask(0)
	switch how {
	case "openat-creat":
		fd, err := unix.Open(path, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o4755)
		if err != nil {
			return err
		}
		return unix.Close(fd)
	case "openat-tmpfile":
		// An unnamed file created setgid, then linked into place.
		fd, err := unix.Open(filepath.Dir(path), unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o2755)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Linkat(fd, "", unix.AT_FDCWD, path, unix.AT_EMPTY_PATH)
	case "openat2-creat":
		fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: unix.O_CREAT | unix.O_WRONLY | unix.O_CLOEXEC, Mode: 0o4755})
		if err != nil {
			return err
		}
		return unix.Close(fd)
	case "fchmod":
		fd, err := unix.Open(path, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o755)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Fchmod(fd, 0o4755)
	case "fchmodat2":
		if err := os.WriteFile(path, nil, 0o755); err != nil {
			return err
		}
		p, _ := unix.BytePtrFromString(path)
		dirfd := unix.AT_FDCWD
		if _, _, e := unix.Syscall6(unix.SYS_FCHMODAT2, uintptr(dirfd), uintptr(unsafe.Pointer(p)), 0o6755, 0, 0, 0); e != 0 {
			return e
		}
		return nil
	case "mknodat":
		return unix.Mknod(path, unix.S_IFREG|0o4755, 0)
	}
	return fmt.Errorf("unknown mode probe %q", how)
}

// shmProbe creates a SysV shared memory segment of each size in sizes
// (bytes, never touched, so nothing is allocated) and removes them all;
// it fails at the first segment the kernel refuses.
func shmProbe(sizes []string) error {
	var ids []int
	defer func() {
		for _, id := range ids {
			unix.SysvShmCtl(id, unix.IPC_RMID, nil)
		}
	}()
	for _, a := range sizes {
		size, err := strconv.Atoi(a)
		if err != nil {
			return err
		}
		id, err := unix.SysvShmGet(unix.IPC_PRIVATE, size, unix.IPC_CREAT|0o600)
		if err != nil {
			return fmt.Errorf("shmget %d bytes after %d segments: %w", size, len(ids), err)
		}
		ids = append(ids, id)
	}
	return nil
}

// shmTouchProbe uses a SysV segment of size bytes as a program would:
// creates it, attaches it, writes every page, detaches and removes it.
func shmTouchProbe(size int) error {
	id, err := unix.SysvShmGet(unix.IPC_PRIVATE, size, unix.IPC_CREAT|0o600)
	if err != nil {
		return fmt.Errorf("shmget %d bytes: %w", size, err)
	}
	defer unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	b, err := unix.SysvShmAttach(id, 0, 0)
	if err != nil {
		return fmt.Errorf("shmat: %w", err)
	}
	for i := 0; i < len(b); i += os.Getpagesize() {
		b[i] = 1
	}
	return unix.SysvShmDetach(b)
}

// inotifyProbe creates n files in dir and adds an inotify watch on each,
// stopping at the first the kernel refuses. It then prints how many it
// holds and "HOLDING", and keeps them until its stdin closes; it fails
// when it could not add all n. It removes dir when done.
func inotifyProbe(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	held := 0
	var werr error
	for i := 0; i < n && werr == nil; i++ {
		p := filepath.Join(dir, strconv.Itoa(i))
		if werr = os.WriteFile(p, nil, 0o644); werr != nil {
			break
		}
		if _, werr = unix.InotifyAddWatch(fd, p, unix.IN_MODIFY); werr == nil {
			held++
		}
	}
	fmt.Printf("WATCHES %d\n%s\n", held, inotifyHolding)
	io.Copy(io.Discard, os.Stdin)
	if held < n {
		return fmt.Errorf("%d of %d watches: %v", held, n, werr)
	}
	return nil
}

// inotifyHolding is the line the inotify probe prints once it holds all
// the watches it could add.
const inotifyHolding = "HOLDING"

// inotifyProbeExtra is how many watches past the jail's ceiling the
// inotify probe asks for.
const inotifyProbeExtra = 64

// runInotifyPastBound: a command adding inotify watches past the jail's
// ceiling must be refused at the ceiling, and while it holds them the
// host must still be able to add a watch of its own. The control runs
// the same probe unjailed, where the host's per-uid limit (far above the
// jail's) lets it add them all.
func runInotifyPastBound(t *testing.T, b *Broker, e *escapeEnv, jailed bool) bool {
	ceiling := jail.InotifyWatchesCeiling()
	// The files live in /dev/shm (the jail's own, or the host's for the
	// control), a tmpfs where creating thousands is cheap; the probe
	// removes them.
	script := fmt.Sprintf(`%s=inotify exec "$PROBE" "$(mktemp -d -p /dev/shm loom-inotify-XXXXXX)" %d`, layerProbeEnv, ceiling+inotifyProbeExtra)
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdinR.Close()
	defer stdinW.Close()
	var out strings.Builder
	hostAdded := true
	onHolding := func() {
		if jailed {
			hostAdded = hostCanWatch(t, e.out)
		}
		stdinW.Close()
	}
	if jailed {
		ex, d := b.Clear(context.Background(), sandbox.CallSpec{
			Key: sandbox.StepKey{OpID: "escape", StepID: t.Name()}, Argv: []string{"sh", "-c", script},
			Dir: e.ws, Env: e.vars(), Policy: e.policy(), Budget: sandbox.Budget{MaxOutstanding: 1}, Timeout: 60 * time.Second,
			Stdin: stdinR,
		})
		if d != nil {
			t.Fatalf("Clear: %v", d)
		}
		held := false
		for o := range ex.Output() {
			if o.Stream == sandbox.Stdout {
				out.Write(o.Bytes)
			}
			if !held && strings.Contains(out.String(), inotifyHolding) {
				held = true
				onHolding()
			}
		}
		ex.Wait()
	} else {
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = e.ws
		for k, v := range e.vars() {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Stdin = stdinR
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if sc.Text() == inotifyHolding {
				onHolding()
			}
		}
		cmd.Wait()
	}
	t.Logf("jailed=%v ceiling %d: %s", jailed, ceiling, strings.TrimSpace(out.String()))
	if !hostAdded {
		t.Errorf("the host could not add an inotify watch while the jail held its own")
	}
	return strings.Contains(out.String(), "PROBE-SUCCEEDED") || !hostAdded
}

// hostCanWatch reports whether the host can add an inotify watch on dir
// now.
func hostCanWatch(t *testing.T, dir string) bool {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Logf("host inotify_init1: %v", err)
		return false
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_MODIFY); err != nil {
		t.Logf("host inotify_add_watch: %v", err)
		return false
	}
	return true
}

// shmRefusedOrOwned: the SysV probe succeeded (an escape), except in an
// unprivileged jail whose report says the IPC limits were refused: the
// kernel lets only uid 0 of the jail's user namespace set them, so there
// the bound is missing and the report must say so (its absence is then
// the escape).
func shmRefusedOrOwned(t *testing.T, _ *escapeEnv, r result) bool {
	if !strings.Contains(r.stdout, "PROBE-SUCCEEDED") {
		return false
	}
	l, ok := r.enf.Layer(sandbox.LayerNamespaceLimits)
	if ok && os.Geteuid() != 0 && !l.Applied && strings.Contains(l.Reason, "kernel.shmall") && strings.Contains(l.Reason, "kernel.shmmax") {
		t.Logf("unprivileged: SysV shared memory unbounded, and the report says so: %s", l.Reason)
		return false
	}
	return true
}

// hasSpecialBits reports whether the host sees path setuid or setgid.
func hasSpecialBits(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0
}

func wsFileSpecial(name string) func(*testing.T, *escapeEnv, result) bool {
	return func(_ *testing.T, e *escapeEnv, _ result) bool { return hasSpecialBits(filepath.Join(e.ws, name)) }
}

// unixListener binds a unix socket (stream or datagram) at the path
// where(e) names and passes the path as $ARG; unixReached then asks the
// kernel whether anything reached it (a connection in the accept queue,
// a datagram in the receive queue), so no reader goroutine races the
// check.
func unixListener(network string, where func(e *escapeEnv) string) func(t *testing.T, e *escapeEnv) {
	return func(t *testing.T, e *escapeEnv) {
		path := where(e)
		e.arg = path
		e.cleanup = append(e.cleanup, func() { os.Remove(path) })
		var reached func() bool
		if network == "unixgram" {
			c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
			if err != nil {
				t.Fatal(err)
			}
			e.cleanup = append(e.cleanup, func() { c.Close() })
			reached = func() bool {
				if queued(c, func(fd int) error {
					_, _, err := unix.Recvfrom(fd, make([]byte, 64), unix.MSG_DONTWAIT)
					return err
				}) {
					return true
				}
				c.SetReadDeadline(time.Now().Add(unixQueueWait))
				_, _, err := c.ReadFrom(make([]byte, 64))
				return err == nil
			}
		} else {
			l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
			if err != nil {
				t.Fatal(err)
			}
			e.cleanup = append(e.cleanup, func() { l.Close() })
			reached = func() bool {
				if queued(l, func(fd int) error {
					nfd, _, err := unix.Accept4(fd, unix.SOCK_CLOEXEC)
					if err == nil {
						unix.Close(nfd)
					}
					return err
				}) {
					return true
				}
				l.SetDeadline(time.Now().Add(unixQueueWait))
				c, err := l.Accept()
				if err == nil {
					c.Close()
				}
				return err == nil
			}
		}
		e.unixReached = reached
	}
}

// unixQueueWait is how long unixReached waits on a queue that is empty;
// anything the probe sent is queued before the probe exits.
const unixQueueWait = 20 * time.Millisecond

// queued takes what the probe queued on sock at once, without a
// deadline: Go refuses a read whose deadline passed before it even
// tries, which a descheduled test on a loaded host would read as an
// empty queue.
func queued(sock syscall.Conn, take func(fd int) error) bool {
	rc, err := sock.SyscallConn()
	if err != nil {
		return false
	}
	var took error
	if err := rc.Control(func(fd uintptr) { took = take(int(fd)) }); err != nil {
		return false
	}
	return took == nil
}

func unixReached(_ *testing.T, e *escapeEnv, _ result) bool {
	return e.unixReached != nil && e.unixReached()
}

// shareArg lists the case's socket ($ARG) in Policy.Sockets.
func shareArg(e *escapeEnv, p *sandbox.Policy) { p.Sockets = append(p.Sockets, e.arg) }

// fakeHome lays out credentials under $OUT/home and makes it the
// command's HOME.
func fakeHome(t *testing.T, e *escapeEnv) {
	home := filepath.Join(e.out, "home")
	e.write(t, filepath.Join(home, ".netrc"), "machine example.com login u password s3cr3t-netrc\n")
	e.write(t, filepath.Join(home, ".ssh", "id_ed25519"), "s3cr3t-ssh-key\n")
	e.write(t, filepath.Join(home, ".aws", "credentials"), "aws_secret_access_key = s3cr3t-aws\n")
	e.write(t, filepath.Join(home, ".config", "gh", "hosts.yml"), "oauth_token: s3cr3t-gh\n")
	e.write(t, filepath.Join(home, "notes.txt"), "not a secret\n")
	e.env = map[string]string{"HOME": home}
}

func stdoutHas(s string) func(*testing.T, *escapeEnv, result) bool {
	return func(_ *testing.T, _ *escapeEnv, r result) bool { return strings.Contains(r.stdout, s) }
}

// layerEscapeCases attacks the jail layers: terminal, mode bits, host view, sockets, secrets, rlimits.
func layerEscapeCases() []escapeCase {
	hiddenTarget := func(t *testing.T, e *escapeEnv) { e.write(t, filepath.Join(e.hidden, "target"), "original\n") }
	outTarget := func(t *testing.T, e *escapeEnv) { e.write(t, filepath.Join(e.out, "target"), "original\n") }
	perm777 := func(dir func(*escapeEnv) string) func(*testing.T, *escapeEnv, result) bool {
		return func(_ *testing.T, e *escapeEnv, _ result) bool {
			fi, err := os.Stat(filepath.Join(dir(e), "target"))
			return err == nil && fi.Mode().Perm() == 0o777
		}
	}
	cases := []escapeCase{
		// The terminal (issue 11, item 2).
		{name: "terminal_tiocsti_after_sctty", run: runTerminalProbe("tty-sctty")},
		{name: "terminal_tiocsti_reopened_stdin", run: runTerminalProbe("tty-reopen")},
		{name: "terminal_dev_tty", run: runTerminalProbe("tty-dev")},
		{
			name:    "terminal_host_session",
			script:  layerProbeEnv + `=session exec "$PROBE"`,
			escaped: probeSucceeded,
		},

		// Setuid and setgid bits (item 3): the chmod family and creation modes.
		{
			name:    "setuid_chmod_numeric",
			script:  `cp /bin/true "$WS/t" && chmod 4755 "$WS/t"`,
			escaped: wsFileSpecial("t"),
		},
		{
			name:    "setgid_chmod_symbolic",
			script:  `cp /bin/true "$WS/t" && chmod g+s "$WS/t"`,
			escaped: wsFileSpecial("t"),
		},
		{
			// mkdir's own mode cannot carry setgid (the kernel masks it off),
			// so a setgid directory takes a chmod.
			name:    "setgid_directory_chmod",
			script:  `mkdir "$WS/t" && chmod 2755 "$WS/t"`,
			escaped: wsFileSpecial("t"),
		},
		{
			name:    "setuid_install_mode",
			script:  `install -m 4755 /bin/true "$WS/t"`,
			escaped: wsFileSpecial("t"),
		},
	}
	for _, how := range []string{"openat-creat", "openat-tmpfile", "openat2-creat", "fchmod", "fchmodat2", "mknodat"} {
		cases = append(cases, escapeCase{
			name:    "setuid_" + strings.ReplaceAll(how, "-", "_"),
			script:  layerProbeEnv + `=mode exec "$PROBE" ` + how + ` "$WS/t"`,
			escaped: wsFileSpecial("t"),
		})
	}
	page := os.Getpagesize()
	cases = append(cases, []escapeCase{
		// Exhaustion through per-namespace kernel limits: the jail's IPC
		// namespace would otherwise allow SysV segments without bound
		// (none of it counted by RLIMIT_AS once detached), and its user
		// namespace the host uid's whole inotify budget. The control runs
		// on the host, whose own limits are far higher (no segment is
		// touched, so nothing is allocated).
		{
			name:    "ipc_sysv_shm_segment_past_bound",
			script:  fmt.Sprintf(`%s=shm exec "$PROBE" %d`, layerProbeEnv, jail.SysVShmBytes+page),
			escaped: shmRefusedOrOwned,
		},
		{
			name:    "ipc_sysv_shm_total_past_bound",
			script:  fmt.Sprintf(`%s=shm exec "$PROBE" %d %d`, layerProbeEnv, jail.SysVShmBytes/2+page, jail.SysVShmBytes/2+page),
			escaped: shmRefusedOrOwned,
		},
		{name: "inotify_watches_past_bound", run: runInotifyPastBound},

		// Kernel-wide state in the jail's fresh /proc.
		{
			name:        "proc_timer_list",
			rootControl: true, // root-only on the host
			script:      `cat /proc/timer_list`,
			escaped:     stdoutHas("Timer List"),
		},
		{
			name:        "proc_keys",
			rootControl: true, // lists the keys the caller may view: the host root has some
			script:      `cat /proc/keys`,
			escaped:     stdoutHas("keyring"),
		},

		// The host view outside the writable roots (item 3): Landlock has
		// no right for these, the read-only mount refuses them.
		{
			name:    "chmod_outside_writable_roots",
			setup:   hiddenTarget,
			script:  `chmod 777 "$HIDDEN/target"`,
			widen:   widenWritable(hiddenDir),
			escaped: perm777(hiddenDir),
		},
		{
			name:    "chmod_readable_root",
			setup:   outTarget,
			script:  `chmod 777 "$OUT/target"`,
			widen:   widenWritable(outDir),
			escaped: perm777(outDir),
		},
		{
			name:   "utime_outside_writable_roots",
			setup:  hiddenTarget,
			script: `touch -d 2001-02-03T04:05:06Z "$HIDDEN/target"`,
			widen:  widenWritable(hiddenDir),
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool {
				fi, err := os.Stat(filepath.Join(e.hidden, "target"))
				return err == nil && fi.ModTime().Year() == 2001
			},
		},
		{
			name:   "xattr_outside_writable_roots",
			setup:  hiddenTarget,
			script: layerProbeEnv + `=xattr exec "$PROBE" "$HIDDEN/target"`,
			widen:  widenWritable(hiddenDir),
			escaped: func(_ *testing.T, e *escapeEnv, _ result) bool {
				sz, err := unix.Getxattr(filepath.Join(e.hidden, "target"), "user.loom_escape", nil)
				return err == nil && sz > 0
			},
		},

		// A root that is a symbolic link (item 6): the Landlock rule is
		// never opened through it, so it grants nothing.
		{
			name: "readable_root_through_symlink",
			setup: func(t *testing.T, e *escapeEnv) {
				e.write(t, filepath.Join(e.hidden, "secret"), "s3cr3t-behind-link\n")
				// Outside /tmp and outside every root: the policy's root
				// carries the link, to a target it does not show; Landlock
				// gives the link no rule either.
				if err := os.Symlink(e.hidden, e.hidden+"-link"); err != nil {
					t.Fatal(err)
				}
				e.cleanup = append(e.cleanup, func() { os.Remove(e.hidden + "-link") })
			},
			policy:  func(e *escapeEnv, p *sandbox.Policy) { p.ReadableRoots = append(p.ReadableRoots, e.hidden+"-link") },
			script:  `cat "$HIDDEN/secret" "$HIDDEN-link/secret"`,
			widen:   func(e *escapeEnv, p *sandbox.Policy) { p.ReadableRoots = append(p.ReadableRoots, e.hidden) },
			escaped: stdoutHas("s3cr3t-behind-link"),
		},

		// Host unix sockets (item 8).
		{
			name:    "unix_socket_under_readable_root",
			setup:   unixListener("unix", func(e *escapeEnv) string { return filepath.Join(e.out, "s.sock") }),
			script:  layerProbeEnv + `=unix exec "$PROBE" "$ARG"`,
			widen:   shareArg,
			escaped: unixReached,
		},
		{
			name:    "unixgram_socket_under_readable_root",
			setup:   unixListener("unixgram", func(e *escapeEnv) string { return filepath.Join(e.out, "g.sock") }),
			script:  layerProbeEnv + `=unixgram exec "$PROBE" "$ARG"`,
			widen:   shareArg,
			escaped: unixReached,
		},
		{
			// Landlock does not mediate connect(2): a socket outside every
			// root is as reachable as one inside.
			name:    "unix_socket_outside_every_root",
			setup:   unixListener("unix", func(e *escapeEnv) string { return filepath.Join(e.hidden, "s.sock") }),
			script:  layerProbeEnv + `=unix exec "$PROBE" "$ARG"`,
			widen:   shareArg,
			escaped: unixReached,
		},
		{
			name:    "unix_socket_in_workspace",
			setup:   unixListener("unix", func(e *escapeEnv) string { return filepath.Join(e.ws, "s.sock") }),
			script:  layerProbeEnv + `=unix exec "$PROBE" "$ARG"`,
			widen:   shareArg,
			escaped: unixReached,
		},
		{
			name: "unix_socket_through_symlink",
			setup: func(t *testing.T, e *escapeEnv) {
				unixListener("unix", func(e *escapeEnv) string { return filepath.Join(e.out, "s.sock") })(t, e)
				if err := os.Symlink(e.arg, filepath.Join(e.ws, "link.sock")); err != nil {
					t.Fatal(err)
				}
			},
			script:  layerProbeEnv + `=unix exec "$PROBE" "$WS/link.sock"`,
			widen:   shareArg,
			escaped: unixReached,
		},
		{
			name:        "unix_socket_under_run",
			rootControl: true, // only root may bind in /run
			setup: unixListener("unix", func(e *escapeEnv) string {
				return fmt.Sprintf("/run/loom-escape-%d-%d.sock", os.Getpid(), time.Now().UnixNano())
			}),
			script:  layerProbeEnv + `=unix exec "$PROBE" "$ARG"`,
			widen:   shareArg,
			escaped: unixReached,
		},

		{
			// A host that lists /run itself keeps it, but not its sockets.
			name:        "unix_socket_under_listed_run",
			rootControl: true,
			setup: unixListener("unix", func(e *escapeEnv) string {
				return fmt.Sprintf("/run/loom-escape-%d-%d.sock", os.Getpid(), time.Now().UnixNano())
			}),
			policy:  func(_ *escapeEnv, p *sandbox.Policy) { p.ReadableRoots = append(p.ReadableRoots, "/run") },
			script:  layerProbeEnv + `=unix exec "$PROBE" "$ARG"`,
			widen:   shareArg,
			escaped: unixReached,
		},

		// Secrets under system and readable roots (item 9).
		{
			name:        "secret_etc_shadow",
			rootControl: true, // only root reads /etc/shadow unjailed
			script:      `cat /etc/shadow`,
			escaped:     stdoutHas("root:"),
		},
		{
			name:        "secret_etc_gshadow",
			rootControl: true,
			script:      `grep -h root /etc/gshadow /etc/shadow-`,
			escaped:     stdoutHas("root:"),
		},
		{
			name:    "secret_home_credentials",
			setup:   fakeHome,
			script:  `cat "$HOME/.netrc" "$HOME/.ssh/id_ed25519" "$HOME/.aws/credentials" "$HOME/.config/gh/hosts.yml"; cat "$HOME/notes.txt" >&2`,
			escaped: stdoutHas("s3cr3t-"),
		},
		{
			name:    "secret_home_through_symlink",
			setup:   fakeHome,
			script:  `ln -s "$HOME/.aws" "$WS/aws" && cat "$WS/aws/credentials"`,
			escaped: stdoutHas("s3cr3t-aws"),
		},
		{
			name:    "secret_home_copied_by_find",
			setup:   fakeHome,
			script:  `find "$HOME" -type f -exec cat {} +`,
			escaped: stdoutHas("s3cr3t-"),
		},
	}...)
	return cases
}

// ptyPair opens a pseudo-terminal and returns its master and slave; the
// slave has no session until someone takes it.
func ptyPair(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// runTerminalProbe runs a terminal probe with a fresh pty's slave as its
// stdin: jailed through Clear (CallSpec.Stdin as the *os.File), and as
// the control unjailed in a session of its own, where the kernel lets a
// session leader take the terminal (for tty-dev, the control starts with
// the terminal as its controlling one, as a user's shell has it).
func runTerminalProbe(mode string) func(t *testing.T, b *Broker, e *escapeEnv, jailed bool) bool {
	return func(t *testing.T, b *Broker, e *escapeEnv, jailed bool) bool {
		_, slave := ptyPair(t)
		exe, _ := os.Executable()
		if jailed {
			ex, d := b.Clear(context.Background(), sandbox.CallSpec{
				Key: sandbox.StepKey{OpID: "escape", StepID: t.Name()}, Argv: []string{"sh", "-c", layerProbeEnv + "=" + mode + ` exec "$PROBE"`},
				Dir: e.ws, Env: e.vars(), Policy: e.policy(), Budget: sandbox.Budget{MaxOutstanding: 1}, Timeout: 20 * time.Second,
				Stdin: slave,
			})
			if d != nil {
				t.Fatalf("Clear: %v", d)
			}
			r := collect(ex)
			if strings.Contains(r.stdout, "PROBE-SUCCEEDED") {
				t.Logf("stdout=%q stderr=%q\n%s", r.stdout, r.stderr, r.enf)
				return true
			}
			return false
		}
		cmd := exec.Command(exe)
		cmd.Env = []string{layerProbeEnv + "=" + mode, "GORACE=" + os.Getenv("GORACE")} // see raceExitSleep
		cmd.Stdin = slave
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: mode == "tty-dev", Ctty: 0}
		out, err := cmd.Output()
		if err != nil {
			t.Logf("control: %v %s", err, out)
		}
		return strings.Contains(string(out), "PROBE-SUCCEEDED")
	}
}
