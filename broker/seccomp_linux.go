package broker

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cloneNamespaceFlags are the clone(2) flags that create namespaces; a
// jailed command may not create any (a new user namespace would hand it
// capabilities again, however confined).
const cloneNamespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP

// Offsets into struct seccomp_data.
const (
	seccompDataNr   = 0
	seccompDataArch = 4
	seccompDataArg0 = 16 // low 32 bits on little-endian machines
)

// errSeccompArch means this build has no syscall table for its machine.
var errSeccompArch = errors.New("no seccomp syscall table for this architecture")

// seccompAvailable asks the kernel whether filters returning an errno are
// supported, without installing anything.
func seccompAvailable() error {
	if !seccompArchSupported {
		return errSeccompArch
	}
	action := uint32(unix.SECCOMP_RET_ERRNO)
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	if e != 0 {
		return e
	}
	return nil
}

func bpfStmt(code uint16, k uint32) unix.SockFilter {
	return unix.SockFilter{Code: code, K: k}
}

func bpfJump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

// seccompProgram builds the filter: a foreign architecture, the x32 ABI
// and every denied syscall return EPERM; clone3 returns ENOSYS (so libc
// falls back to clone, whose flags a classic filter can inspect); clone
// with namespace flags returns EPERM; with networkOff, socket() for any
// family but AF_UNIX returns EPERM. Everything else is allowed.
func seccompProgram(networkOff bool) []unix.SockFilter {
	const (
		ld    = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge   = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset  = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		eperm = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		enosy = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
		allow = unix.SECCOMP_RET_ALLOW
	)
	prog := []unix.SockFilter{
		bpfStmt(ld, seccompDataArch),
		bpfJump(jeq, seccompAuditArch, 1, 0),
		bpfStmt(ret, eperm),
		bpfStmt(ld, seccompDataNr),
	}
	if seccompX32Bit != 0 {
		prog = append(prog, bpfJump(jge, seccompX32Bit, 0, 1), bpfStmt(ret, eperm))
	}
	for _, nr := range seccompDenied {
		prog = append(prog, bpfJump(jeq, uint32(nr), 0, 1), bpfStmt(ret, eperm))
	}
	prog = append(prog, bpfJump(jeq, uint32(unix.SYS_CLONE3), 0, 1), bpfStmt(ret, enosy))
	prog = append(prog,
		bpfJump(jeq, uint32(unix.SYS_CLONE), 0, 4),
		bpfStmt(ld, seccompDataArg0),
		bpfJump(jset, cloneNamespaceFlags, 0, 1),
		bpfStmt(ret, eperm),
		bpfStmt(ret, allow),
	)
	if networkOff {
		prog = append(prog,
			bpfJump(jeq, uint32(unix.SYS_SOCKET), 0, 4),
			bpfStmt(ld, seccompDataArg0),
			bpfJump(jeq, unix.AF_UNIX, 1, 0),
			bpfStmt(ret, eperm),
			bpfStmt(ret, allow),
		)
	}
	return append(prog, bpfStmt(ret, allow))
}

// applySeccomp installs the filter on the calling thread. It must run
// after PR_SET_NO_NEW_PRIVS (the jail holds no CAP_SYS_ADMIN by then).
func applySeccomp(networkOff bool) error {
	if !seccompArchSupported {
		return errSeccompArch
	}
	prog := seccompProgram(networkOff)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		return fmt.Errorf("seccomp(SET_MODE_FILTER): %w", e)
	}
	return nil
}
