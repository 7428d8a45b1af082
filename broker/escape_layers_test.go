//go:build linux

package broker

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

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
				l.SetDeadline(time.Now().Add(unixQueueWait))
				c, err := l.Accept()
				if err == nil {
					c.Close()
				}
				return err == nil
			}
		}
		unixReachedMu.Lock()
		unixReachedBy[e] = reached
		unixReachedMu.Unlock()
	}
}

// unixQueueWait is how long unixReached waits on a queue that is empty;
// anything the probe sent is queued before the probe exits.
const unixQueueWait = 20 * time.Millisecond

var (
	unixReachedMu sync.Mutex
	unixReachedBy = map[*escapeEnv]func() bool{}
)

func unixReached(_ *testing.T, e *escapeEnv, _ result) bool {
	unixReachedMu.Lock()
	f := unixReachedBy[e]
	delete(unixReachedBy, e)
	unixReachedMu.Unlock()
	return f != nil && f()
}

// shareArg lists the case's socket ($ARG) in Policy.Sockets.
func shareArg(e *escapeEnv, p *Policy) { p.Sockets = append(p.Sockets, e.arg) }

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
	cases = append(cases, []escapeCase{
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
				// Outside /tmp, so the jail's mount table shows the link as
				// the host has it and only the Landlock rule decides.
				if err := os.Symlink(e.hidden, e.hidden+"-link"); err != nil {
					t.Fatal(err)
				}
				e.cleanup = append(e.cleanup, func() { os.Remove(e.hidden + "-link") })
			},
			policy:  func(e *escapeEnv, p *Policy) { p.ReadableRoots = append(p.ReadableRoots, e.hidden+"-link") },
			script:  `cat "$HIDDEN/secret" "$HIDDEN-link/secret"`,
			widen:   func(e *escapeEnv, p *Policy) { p.ReadableRoots = append(p.ReadableRoots, e.hidden) },
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
			policy:  func(_ *escapeEnv, p *Policy) { p.ReadableRoots = append(p.ReadableRoots, "/run") },
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
			ex, d := b.Clear(context.Background(), CallSpec{
				Key: StepKey{OpID: "escape", StepID: t.Name()}, Argv: []string{"sh", "-c", layerProbeEnv + "=" + mode + ` exec "$PROBE"`},
				Dir: e.ws, Env: e.vars(), Policy: e.policy(), Budget: Budget{MaxOutstanding: 1}, Timeout: 20 * time.Second,
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
		cmd.Env = []string{layerProbeEnv + "=" + mode}
		cmd.Stdin = slave
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: mode == "tty-dev", Ctty: 0}
		out, err := cmd.Output()
		if err != nil {
			t.Logf("control: %v %s", err, out)
		}
		return strings.Contains(string(out), "PROBE-SUCCEEDED")
	}
}
