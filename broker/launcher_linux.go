package broker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentloom/loom/broker/internal/jail"
)

// The launcher (jail.LauncherArgs) stands between the host and a helper
// that needs namespaces. Go forks a child that gets a new user namespace
// without CLONE_VM (its parent must write the child's uid map while the
// child waits), which copies the whole parent's page tables: measured
// here, a host holding 1 GiB of heap paid ~40 ms per jailed command for
// that copy, and stalled while it ran. So a host resident above
// largeHostRSS (and every warm helper) starts the launcher the cheap way
// (vfork, no namespaces), and the launcher — a small process — starts
// the helper in its namespaces as a child of the host's, not its own
// (CLONE_PARENT), says which pid it got, lets go of every descriptor and
// exits. The host reaps the helper itself (jailProcess.wait), so a
// command's end reaches the host at once, not after a launcher woke,
// reaped it and exited in turn. This file is the host's side of it.

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
// before its configuration (the helper's prepareHelper).
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
// comes before the helper's configuration, within jailSetupTimeout.
func (h *waitingHelper) readLine() (jail.Report, error) {
	h.repR.SetReadDeadline(time.Now().Add(jailSetupTimeout))
	defer h.repR.SetReadDeadline(time.Time{})
	line, err := h.rep.ReadSlice('\n')
	if err != nil {
		return jail.Report{}, err
	}
	var rep jail.Report
	if err := json.Unmarshal(bytes.TrimSpace(line), &rep); err != nil {
		return jail.Report{}, fmt.Errorf("malformed report line: %w", err)
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
// helper through a launcher: past it, copying the
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
