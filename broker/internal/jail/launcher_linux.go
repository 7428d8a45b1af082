package jail

import (
	"github.com/agentloom/loom/internal/errno"
	"github.com/agentloom/loom/sandbox"

	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The launcher stands between the host and a helper that needs
// namespaces, so the host need not copy its own page tables into a
// namespaced child (the broker's launcher_linux.go says when it uses
// one): started the cheap way (vfork, no namespaces), the launcher — a
// small process — starts the helper in its namespaces as a child of the
// host's, not its own (CLONE_PARENT), says which pid it got, lets go of
// every descriptor and exits. The host reaps the helper itself.
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

// LauncherArgs are the argv of a launcher that starts a helper with
// namespaces (a network namespace among them when newNet), with extra
// when it holds a descriptor at ExtraFileFD and stage for a helper
// started ahead of its command. The launcher itself is started without
// namespaces (SysProcAttr(false, false)).
func LauncherArgs(newNet, extra, stage bool) []string {
	args := []string{launcherArg0}
	if newNet {
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
		files = append(files, os.NewFile(sandbox.ExtraFileFD, "extra"))
	}
	attr := SysProcAttr(true, newNet)
	// The host's child: its parent-death signal follows the host's thread
	// that started the launcher, as a helper the host starts itself does.
	attr.Cloneflags |= unix.CLONE_PARENT
	cmd := &exec.Cmd{
		Path:        SelfExe,
		Args:        HelperArgs(true, newNet, slices.Contains(os.Args[1:], launcherStageArg)),
		Env:         ProcessEnv(),
		Dir:         "/",
		Stdin:       os.Stdin,
		Stdout:      os.Stdout,
		Stderr:      os.Stderr,
		ExtraFiles:  files,
		SysProcAttr: attr,
	}
	if err := cmd.Start(); err != nil {
		b, _ := json.Marshal(Report{Fatal: "start jail: " + errno.Name(StartError(err))})
		rep.Write(append(b, '\n'))
		return exitHelperSetup
	}
	// The first line on the report pipe: the helper writes only once it
	// has its configuration, which the host sends after reading this.
	b, _ := json.Marshal(Report{JailPid: cmd.Process.Pid})
	rep.Write(append(b, '\n'))
	for _, f := range append([]*os.File{os.Stdin, os.Stdout, os.Stderr}, files...) {
		f.Close()
	}
	return exitLauncherDone
}

// launcherProbe starts the helper in probe mode in the jail's
// namespaces and says how it went.
func launcherProbe(newNet bool) int {
	cmd := &exec.Cmd{Path: SelfExe, Args: []string{probeArg0}, Env: ProcessEnv(), SysProcAttr: SysProcAttr(true, newNet)}
	err := cmd.Run()
	if err == nil {
		return 0
	}
	if en, ok := StartError(err).(syscall.Errno); ok {
		fmt.Printf("errno %d\n", int(en))
	} else {
		fmt.Println(StartError(err))
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
	return StartError(err)
}
