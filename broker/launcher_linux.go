package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
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
// launcher — a small process —
// starts the helper in its namespaces, says which pid it got, lets go of
// every descriptor, and waits, then leaves the way the helper's process
// did (exit code or signal), so the host reads the command's status as
// its own child's.
const (
	launcherArg0 = "loom-jail-launcher"
	// launcherNetArg asks the launcher for a network namespace too.
	launcherNetArg = "net"
	// launcherProbeArg makes the launcher a layer probe: it starts the
	// helper in probe mode, and prints "errno N" (or why) on stdout and
	// exits 1 when the namespaces could not be made.
	launcherProbeArg = "probe"
)

// launcherArgs are the launcher's argv for flavour f (which has
// namespaces).
func launcherArgs(f flavour) []string {
	if f.newNet {
		return []string{launcherArg0, launcherNetArg}
	}
	return []string{launcherArg0}
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
	cmd := &exec.Cmd{
		Path:        selfExe,
		Args:        []string{helperArg0},
		Env:         helperProcessEnv,
		Dir:         "/",
		Stdin:       os.Stdin,
		Stdout:      os.Stdout,
		Stderr:      os.Stderr,
		ExtraFiles:  []*os.File{cfg, rep},
		SysProcAttr: jailSysProcAttr(true, newNet),
	}
	if err := cmd.Start(); err != nil {
		b, _ := json.Marshal(helperReport{Fatal: "start jail: " + errnoName(unwrapSyscallErr(err))})
		rep.Write(append(b, '\n'))
		return exitHelperSetup
	}
	// One short line: a single atomic pipe write, whatever the helper
	// writes around it.
	b, _ := json.Marshal(helperReport{JailPid: cmd.Process.Pid})
	rep.Write(append(b, '\n'))
	for _, f := range []*os.File{os.Stdin, os.Stdout, os.Stderr, cfg, rep} {
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
