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

	"golang.org/x/sys/unix"
)

// The launcher stands between the host and a helper that needs
// namespaces. Go forks a child that gets a new user namespace without
// CLONE_VM (its parent must write the child's uid map while the child
// waits), which copies the whole parent's page tables: measured here, a
// host holding 1 GiB of heap paid ~40 ms per jailed command for that
// copy, and stalled while it ran. So a host resident above largeHostRSS
// (and every warm helper) starts the launcher the cheap way (vfork, no
// namespaces), and the launcher — a small process — starts the helper in
// its namespaces as a child of the host's, not its own (CLONE_PARENT),
// says which pid it got, lets go of every descriptor and exits. The host
// reaps the helper itself (jailProcess.wait), so a command's end reaches
// the host at once, not after a launcher woke, reaped it and exited in
// turn.
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
	// launcherStageArg asks the launcher to start the helper with
	// helperStageArg: a helper started ahead of its command.
	launcherStageArg = "stage"
	// exitLauncherDone is the launcher's status once it named the helper.
	exitLauncherDone = 0
)

// launcherArgs are the launcher's argv for flavour f (which has
// namespaces), with extra when it holds a descriptor at ExtraFileFD and
// stage for a helper started ahead of its command.
func launcherArgs(f flavour, extra, stage bool) []string {
	args := []string{launcherArg0}
	if f.newNet {
		args = append(args, launcherNetArg)
	}
	if extra {
		args = append(args, launcherExtraArg)
	}
	if stage {
		args = append(args, launcherStageArg)
	}
	return args
}

// runLauncher starts the helper in its namespaces as a child of the
// launcher's parent (CLONE_PARENT: the host, which reaps it), reports its
// pid on the report fd and returns.
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
	attr := jailSysProcAttr(true, newNet)
	// The host's child: its parent-death signal follows the host's thread
	// that started the launcher, as a helper the host starts itself does.
	attr.Cloneflags |= unix.CLONE_PARENT
	cmd := &exec.Cmd{
		Path:        selfExe,
		Args:        helperArgs(flavour{namespaces: true, newNet: newNet}, slices.Contains(os.Args[1:], launcherStageArg)),
		Env:         helperProcessEnv,
		Dir:         "/",
		Stdin:       os.Stdin,
		Stdout:      os.Stdout,
		Stderr:      os.Stderr,
		ExtraFiles:  files,
		SysProcAttr: attr,
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
	return exitLauncherDone
}

// maxLauncherLineBytes bounds the launcher's one report line.
const maxLauncherLineBytes = 4 << 10

// awaitLauncher reads the launcher's line: the helper's pid, or why it
// could not be started.
func (h *waitingHelper) awaitLauncher() error {
	rep, err := h.readLine()
	if err == nil && rep.Prepared {
		// The helper may speak first: the launcher names it only once
		// its start returned.
		h.prepared = true
		rep, err = h.readLine()
	}
	if err != nil {
		return fmt.Errorf("jail launcher ended without starting the helper (%w)", err)
	}
	if rep.Fatal != "" {
		return errors.New(rep.Fatal)
	}
	if rep.JailPid <= 0 {
		return fmt.Errorf("launcher reported no helper pid")
	}
	h.proc.setJailPid(rep.JailPid)
	if h.proc.jailPid == 0 {
		return fmt.Errorf("launcher reported pid %d, which is not this process's child", rep.JailPid)
	}
	return nil
}

// awaitPrepared reads a warm helper's word that it prepared what it can
// before its configuration (see prepareHelper).
func (h *waitingHelper) awaitPrepared() error {
	if h.prepared {
		return nil
	}
	rep, err := h.readLine()
	switch {
	case err != nil:
		return fmt.Errorf("warm helper ended before it was prepared (%w)", err)
	case rep.Fatal != "":
		return errors.New(rep.Fatal)
	case !rep.Prepared:
		return fmt.Errorf("warm helper said something else than prepared")
	}
	return nil
}

// readLine reads one report line (at most maxLauncherLineBytes) that
// comes before the helper's configuration, within JailSetupTimeout.
func (h *waitingHelper) readLine() (helperReport, error) {
	h.repR.SetReadDeadline(time.Now().Add(JailSetupTimeout))
	defer h.repR.SetReadDeadline(time.Time{})
	line, err := h.rep.ReadSlice('\n')
	if err != nil {
		return helperReport{}, err
	}
	var rep helperReport
	if err := json.Unmarshal(bytes.TrimSpace(line), &rep); err != nil {
		return helperReport{}, fmt.Errorf("malformed report line: %w", err)
	}
	return rep, nil
}

// directExit is how a helper the broker reaped itself (see setJailPid)
// ended, in the shape of an *os.ProcessState.
type directExit syscall.WaitStatus

// ExitCode is the exit status, or -1 when a signal ended the process.
func (d directExit) ExitCode() int {
	if ws := syscall.WaitStatus(d); ws.Exited() {
		return ws.ExitStatus()
	}
	return -1
}

// Exited reports whether the process called exit.
func (d directExit) Exited() bool { return syscall.WaitStatus(d).Exited() }

// Sys is the syscall.WaitStatus.
func (d directExit) Sys() any { return syscall.WaitStatus(d) }

// String says how the process ended, as os.ProcessState does.
func (d directExit) String() string {
	ws := syscall.WaitStatus(d)
	if ws.Signaled() {
		return "signal: " + ws.Signal().String()
	}
	return "exit status " + strconv.Itoa(ws.ExitStatus())
}

// wait reaps the command and returns its state: a launched helper's own
// (reaped here once its launcher, which exits as soon as it named it, is
// reaped; nil when it cannot be reaped), else the process's.
func (p *jailProcess) wait() exitState {
	p.cmd.Wait() // the state is in ProcessState even when err != nil
	var st exitState
	if p.cmd.ProcessState != nil {
		st = p.cmd.ProcessState
	}
	p.mu.Lock()
	pid := p.jailPid
	p.mu.Unlock()
	if pid > 0 {
		// The launcher's own state says nothing of the command's.
		st = nil
		var ws syscall.WaitStatus
		for {
			_, err := syscall.Wait4(pid, &ws, 0, nil)
			if err != syscall.EINTR {
				if err == nil {
					st = directExit(ws)
				}
				break
			}
		}
	}
	p.mu.Lock()
	p.reaped = true
	p.mu.Unlock()
	close(p.exited)
	return st
}

// largeHostRSS is the resident size above which a host starts each
// helper through a launcher (see launcherArg0): past it, copying the
// host's page tables for a namespaced child costs more than the
// launcher's own start.
const largeHostRSS = 64 << 20

// hostIsLarge reports whether this process is resident above the
// broker's launcher threshold.
func (b *Broker) hostIsLarge() bool {
	limit := b.test.launchAboveRSS
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
// confirmed to be this process's child (the launcher starts it with
// CLONE_PARENT), and holds the helper's mount namespace (see release). A
// child of ours keeps its pid until we reap it, so the pid names the
// helper until wait. An unconfirmed pid is ignored, and awaitLauncher
// fails.
func (p *jailProcess) setJailPid(pid int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.launched || p.jailPid != 0 || pid <= 0 {
		return
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		// No pidfds (Linux before 5.3): the pid alone, if it checks out.
		if parentPid(pid) == os.Getpid() {
			p.jailPid = pid
			p.holdMountNamespace(pid)
		}
		return
	}
	// The pidfd names whatever process holds pid now; a child of ours
	// keeps its pid until we reap it, so once the parent check passes the
	// pidfd names our child.
	if parentPid(pid) != os.Getpid() {
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
