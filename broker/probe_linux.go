package broker

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// probeLayers asks the kernel which layers exist: the Landlock ABI
// version, seccomp's errno action, and a trial clone of this executable
// (in probe mode, which exits at once) into the jail's namespaces —
// through a launcher when viaLauncher, as a large host starts helpers.
func probeLayers(helperPath string, viaLauncher bool) probeResult {
	var p probeResult
	p.landlockABI, p.landlockErr = landlockABI()
	p.seccompErr = seccompAvailable()
	if viaLauncher {
		cmd := &exec.Cmd{
			Path: helperPath,
			Args: []string{launcherArg0, launcherNetArg, launcherProbeArg},
			Env:  helperProcessEnv,
		}
		if out, err := cmd.Output(); err != nil {
			p.usernsErr = launcherProbeError(out, err)
		}
		return p
	}
	cmd := &exec.Cmd{
		Path:        helperPath,
		Args:        []string{probeArg0},
		Env:         helperProcessEnv,
		SysProcAttr: jailSysProcAttr(true, true),
	}
	if err := cmd.Run(); err != nil {
		p.usernsErr = unwrapSyscallErr(err)
	}
	return p
}

// unwrapSyscallErr reduces an os/exec start error to its errno where it
// has one, so reports carry "EPERM" rather than a path-laden sentence.
func unwrapSyscallErr(err error) error {
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

// jailSysProcAttr returns the attributes a helper is started with: a
// session of its own (so the command has no controlling terminal, and
// the session's process group is the one the broker kills) and death
// with its parent. With
// namespaces, it gets new user, mount, pid, ipc and uts namespaces (and a new
// network namespace when newNet), an identity uid/gid map, and the
// ambient capabilities it needs to build its mount table and bring lo up
// (CAP_SETPCAP only so it can empty its own bounding set, CAP_SYS_RESOURCE
// only so it can lower its user namespace's limits); it drops all of them
// before exec.
func jailSysProcAttr(namespaces, newNet bool) *syscall.SysProcAttr {
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
