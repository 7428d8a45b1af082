package jail

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// SelfExe is the default helper executable: the running program.
const SelfExe = "/proc/self/exe"

// ProbeNamespaces tries to start the helper at helperPath (in probe mode,
// which exits at once) in the jail's namespaces, network namespace
// included — through a launcher when viaLauncher, as a large host starts
// helpers — and returns why it could not (an errno where there is one),
// or nil.
func ProbeNamespaces(helperPath string, viaLauncher bool) error {
	if viaLauncher {
		cmd := &exec.Cmd{
			Path: helperPath,
			Args: []string{launcherArg0, launcherNetArg, launcherProbeArg},
			Env:  ProcessEnv(),
		}
		if out, err := cmd.Output(); err != nil {
			return launcherProbeError(out, err)
		}
		return nil
	}
	cmd := &exec.Cmd{
		Path:        helperPath,
		Args:        []string{probeArg0},
		Env:         ProcessEnv(),
		SysProcAttr: SysProcAttr(true, true),
	}
	if err := cmd.Run(); err != nil {
		return StartError(err)
	}
	return nil
}

// helperNetArg follows helperArg0 in a helper's argv when the helper was
// born in a network namespace of its own: its loopback interface is then
// the fresh namespace's, down, and no one else's.
const helperNetArg = "net"

// HelperArgs is the argv a helper is started with: with namespaces, and
// a network namespace of its own among them when newNet; stage (for a
// helper started ahead, with namespaces) asks it to prepare the policy
// root's skeleton (helperStageArg).
func HelperArgs(namespaces, newNet, stage bool) []string {
	args := []string{helperArg0}
	if namespaces && newNet {
		args = append(args, helperNetArg)
	}
	if namespaces && stage {
		args = append(args, helperStageArg)
	}
	return args
}

// StartError reduces an os/exec start error to its errno where it has
// one, so reports carry "EPERM" rather than a path-laden sentence.
func StartError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		if en, ok := pe.Err.(syscall.Errno); ok {
			return en
		}
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return fmt.Errorf("probe exited: %s", ee.ProcessState)
	}
	return err
}

// SysProcAttr returns the attributes a helper is started with: a
// session of its own (so the command has no controlling terminal, and
// the session's process group is the one the broker kills) and death
// with its parent. With
// namespaces, it gets new user, mount, pid, ipc and uts namespaces (and a new
// network namespace when newNet), an identity uid/gid map, and the
// ambient capabilities it needs to build its mount table and bring lo up
// (CAP_SETPCAP only so it can empty its own bounding set, CAP_SYS_RESOURCE
// only so it can lower its user namespace's limits); it drops all of them
// before exec.
func SysProcAttr(namespaces, newNet bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if !namespaces {
		return attr
	}
	uid, gid := os.Getuid(), os.Getgid()
	attr.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS
	if newNet {
		attr.Cloneflags |= syscall.CLONE_NEWNET
	}
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	attr.GidMappingsEnableSetgroups = false
	attr.AmbientCaps = []uintptr{capSysAdmin, capNetAdmin, capSetpcap, capSysResource}
	return attr
}

// Capability numbers (linux/capability.h).
const (
	capSetpcap     = 8
	capNetAdmin    = 12
	capSysAdmin    = 21
	capSysResource = 24
)
