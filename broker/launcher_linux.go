package broker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The launcher stands between the host and a helper that needs
// namespaces. Go forks a child that gets a new user namespace without
// CLONE_VM (its parent must write the child's uid map while the child
// waits), which copies the whole parent's page tables: measured here, a
// host holding 1 GiB of heap paid ~40 ms per jailed command for that
// copy, and stalled while it ran. So a host resident above largeHostRSS
// starts the launcher the cheap way (vfork, no namespaces), and the
// launcher — a small process — starts the helper in its namespaces, says
// which pid it got, lets go of every descriptor, and waits, then leaves
// the way the helper's process did (exit code or signal), so the host
// reads the command's status as its own child's.
const (
	launcherArg0 = "loom-jail-launcher"
	// launcherNetArg asks the launcher for a network namespace too.
	launcherNetArg = "net"
	// launcherProbeArg makes the launcher a layer probe: it starts the
	// helper in probe mode, and prints "errno N" (or why) on stdout and
	// exits 1 when the namespaces could not be made.
	launcherProbeArg = "probe"
	// launcherExtraArg says the launcher holds a descriptor at
	// ExtraFileFD for the helper: it passes it on at the same number.
	launcherExtraArg = "extra-fd"
)

// launcherArgs are the launcher's argv for flavour f (which has
// namespaces), with extra when it holds a descriptor at ExtraFileFD.
func launcherArgs(f flavour, extra bool) []string {
	args := []string{launcherArg0}
	if f.newNet {
		args = append(args, launcherNetArg)
	}
	if extra {
		args = append(args, launcherExtraArg)
	}
	return args
}

// runLauncher starts the helper in its namespaces, reports its pid on the
// report fd, waits for it and returns only if it could not mirror the
// helper's end.
func runLauncher() int {
	newNet := slices.Contains(os.Args[1:], launcherNetArg)
	if slices.Contains(os.Args[1:], launcherProbeArg) {
		return launcherProbe(newNet)
	}
	cfg := os.NewFile(helperConfigFd, "config")
	rep := os.NewFile(helperReportFd, "report")
	files := []*os.File{cfg, rep}
	if slices.Contains(os.Args[1:], launcherExtraArg) {
		files = append(files, os.NewFile(ExtraFileFD, "extra"))
	}
	cmd := &exec.Cmd{
		Path:        selfExe,
		Args:        helperArgs(flavour{namespaces: true, newNet: newNet}),
		Env:         helperProcessEnv,
		Dir:         "/",
		Stdin:       os.Stdin,
		Stdout:      os.Stdout,
		Stderr:      os.Stderr,
		ExtraFiles:  files,
		SysProcAttr: jailSysProcAttr(true, newNet),
	}
	if err := cmd.Start(); err != nil {
		b, _ := json.Marshal(helperReport{Fatal: "start jail: " + errnoName(unwrapSyscallErr(err))})
		rep.Write(append(b, '\n'))
		return exitHelperSetup
	}
	// The first line on the report pipe: the helper writes only once it
	// has its configuration, which the host sends after reading this.
	b, _ := json.Marshal(helperReport{JailPid: cmd.Process.Pid})
	rep.Write(append(b, '\n'))
	for _, f := range append([]*os.File{os.Stdin, os.Stdout, os.Stderr}, files...) {
		f.Close()
	}
	cmd.Wait()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case !ok:
		return exitHelperSetup
	case ws.Signaled():
		dieBy(ws.Signal())
		return 128 + int(ws.Signal())
	default:
		return ws.ExitStatus()
	}
}

// maxLauncherLineBytes bounds the launcher's one report line.
const maxLauncherLineBytes = 4 << 10

// awaitLauncher reads the launcher's line: the helper's pid, or why it
// could not be started.
func (h *waitingHelper) awaitLauncher() error {
	h.repR.SetReadDeadline(time.Now().Add(JailSetupTimeout))
	defer h.repR.SetReadDeadline(time.Time{})
	var line []byte
	buf := make([]byte, 512)
	for !bytes.Contains(line, []byte{'\n'}) {
		n, err := h.repR.Read(buf)
		line = append(line, buf[:n]...)
		if err != nil || len(line) > maxLauncherLineBytes {
			return fmt.Errorf("jail launcher ended without starting the helper (%v)", err)
		}
	}
	var rep helperReport
	if err := json.Unmarshal(bytes.TrimSpace(line), &rep); err != nil {
		return fmt.Errorf("malformed launcher report: %w", err)
	}
	if rep.Fatal != "" {
		return errors.New(rep.Fatal)
	}
	if rep.JailPid <= 0 {
		return fmt.Errorf("launcher reported no helper pid")
	}
	h.proc.setJailPid(rep.JailPid)
	return nil
}

// largeHostRSS is the resident size above which a host starts each
// helper through a launcher (see launcherArg0): past it, copying the
// host's page tables for a namespaced child costs more than the
// launcher's own start.
const largeHostRSS = 64 << 20

// hostIsLarge reports whether this process is resident above the
// broker's launcher threshold.
func (b *Broker) hostIsLarge() bool {
	limit := b.launchAboveRSS
	if limit == 0 {
		limit = largeHostRSS
	}
	if limit < 0 {
		return true
	}
	return residentBytes() > limit
}

// residentBytes is this process's resident set size, or 0 when unknown.
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// setJailPid records the helper pid the launcher reported, once it is
// confirmed to be the launcher's running child, and holds the helper's
// mount namespace (see release). An unconfirmed pid is ignored: kills
// then go to the launcher, whose death takes the helper with it.
func (p *jailProcess) setJailPid(pid int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.launched || p.jailPid != 0 || pid <= 0 {
		return
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		// No pidfds (Linux before 5.3): the pid alone, if it checks out.
		if parentPid(pid) == p.pid {
			p.jailPid = pid
			p.holdMountNamespace(pid)
		}
		return
	}
	// The pidfd names whatever process holds pid now. While that process
	// runs its pid cannot be reused, so a parent check made before seeing
	// it still running speaks of the same process.
	if parentPid(pid) != p.pid || pidfdExited(fd) {
		unix.Close(fd)
		return
	}
	p.jailPid, p.jailPidfd = pid, fd
	p.holdMountNamespace(pid)
}

// parentPid is pid's parent as /proc says, or -1.
func parentPid(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// "pid (comm) state ppid ...": comm may hold anything, so read past
	// its last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return -1
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return -1
	}
	return ppid
}

// pidfdExited reports whether the process a pidfd names has exited.
func pidfdExited(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

// launcherProbe starts the helper in probe mode in the jail's
// namespaces and says how it went.
func launcherProbe(newNet bool) int {
	cmd := &exec.Cmd{Path: selfExe, Args: []string{probeArg0}, Env: helperProcessEnv, SysProcAttr: jailSysProcAttr(true, newNet)}
	err := cmd.Run()
	if err == nil {
		return 0
	}
	if en, ok := unwrapSyscallErr(err).(syscall.Errno); ok {
		fmt.Printf("errno %d\n", int(en))
	} else {
		fmt.Println(unwrapSyscallErr(err))
	}
	return 1
}

// launcherProbeError turns a failed launcher probe's output back into the
// error the helper's start met.
func launcherProbeError(out []byte, err error) error {
	line := strings.TrimSpace(string(out))
	if n, ok := strings.CutPrefix(line, "errno "); ok {
		if v, perr := strconv.Atoi(n); perr == nil {
			return syscall.Errno(v)
		}
	}
	if line != "" {
		return errors.New(line)
	}
	return unwrapSyscallErr(err)
}

// dieBy ends the process by sig, as the default action does: no handler,
// not blocked, no core file. It returns only if the signal did not end
// the process.
func dieBy(sig syscall.Signal) {
	unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	var dfl [4]uint64 // struct sigaction, zero: SIG_DFL, no flags, empty mask
	unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl[0])), 0, 8, 0, 0)
	set := uint64(1) << (uint(sig) - 1)
	unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_UNBLOCK, uintptr(unsafe.Pointer(&set)), 0, 8, 0, 0)
	unix.Tgkill(unix.Getpid(), unix.Gettid(), sig)
}
