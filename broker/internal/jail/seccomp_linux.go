package jail

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
	seccompArgBytes = 8  // each argument is a __u64
)

// seccompArg is the offset of the low 32 bits of argument i.
func seccompArg(i int) uint32 { return uint32(seccompDataArg0 + seccompArgBytes*i) }

// seccompSpecialModeBits are the mode bits no jailed command may set on a
// file: set-user-ID and set-group-ID. A command that could set them on a
// file it owns (the jail's uid is the host's) would plant a program that
// runs as its owner for whoever executes it outside the jail.
const seccompSpecialModeBits = unix.S_ISUID | unix.S_ISGID

// seccompCreateFlags are the open flags under which the kernel reads the
// mode argument: O_CREAT and O_TMPFILE (whose __O_TMPFILE bit is
// O_TMPFILE without O_DIRECTORY).
const seccompCreateFlags = unix.O_CREAT | (unix.O_TMPFILE &^ unix.O_DIRECTORY)

// seccompModeSyscall is one syscall that sets a file mode: mode is the
// index of its mode argument, flags the index of its open flags (-1 when
// the mode always applies). A mode holding seccompSpecialModeBits is
// refused with EPERM (for an open, only when the flags create a file).
type seccompModeSyscall struct {
	nr          uintptr
	mode, flags int
}

// seccompTerminalIoctls are the ioctl requests refused on every file:
// TIOCSTI (type into a terminal's input), TIOCLINUX (console selection
// paste and console control), TIOCSETD (change a terminal's line
// discipline, which loads kernel code), TIOCCONS (redirect the console)
// and TIOCSCTTY (take a terminal as the controlling terminal, which the
// jail's new session lacks). The kernel reads the request as a 32-bit
// unsigned int, so the low half of the argument is what is compared.
var seccompTerminalIoctls = []uint32{unix.TIOCSTI, unix.TIOCLINUX, unix.TIOCSETD, unix.TIOCCONS, unix.TIOCSCTTY}

// errSeccompArch means this build has no syscall table for its machine.
var errSeccompArch = errors.New("no seccomp syscall table for this architecture")

// SeccompAvailable asks the kernel whether filters returning an errno are
// supported, without installing anything.
func SeccompAvailable() error {
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

// BPF opcodes and seccomp actions the filter uses.
const (
	bpfLd         = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	bpfJeq        = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	bpfJge        = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	bpfJset       = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	bpfRet        = unix.BPF_RET | unix.BPF_K
	seccompEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	seccompENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	seccompAllow  = unix.SECCOMP_RET_ALLOW
)

// seccompBlock appends to prog a block entered only for syscall nr (the
// accumulator holds the number): body, which must end in a return.
func seccompBlock(prog []unix.SockFilter, nr uintptr, body ...unix.SockFilter) []unix.SockFilter {
	prog = append(prog, bpfJump(bpfJeq, uint32(nr), 0, uint8(len(body))))
	return append(prog, body...)
}

// seccompProgram builds the filter. A foreign architecture, the x32 ABI
// and every seccompDenied syscall return EPERM; clone3 and openat2 return
// ENOSYS (their flags and mode sit behind a pointer a classic filter
// cannot read, so libc falls back to clone and openat, which it can);
// clone with namespace flags returns EPERM; an ioctl whose request is
// one of seccompTerminalIoctls returns EPERM; a mode-setting syscall
// (seccompModeSyscalls) whose mode holds setuid or setgid returns EPERM;
// with networkOff, socket() for any family but AF_UNIX returns EPERM.
// Everything else is allowed.
func seccompProgram(networkOff bool) []unix.SockFilter {
	prog := []unix.SockFilter{
		bpfStmt(bpfLd, seccompDataArch),
		bpfJump(bpfJeq, seccompAuditArch, 1, 0),
		bpfStmt(bpfRet, seccompEPERM),
		bpfStmt(bpfLd, seccompDataNr),
	}
	if seccompX32Bit != 0 {
		prog = append(prog, bpfJump(bpfJge, seccompX32Bit, 0, 1), bpfStmt(bpfRet, seccompEPERM))
	}
	for _, nr := range seccompDenied {
		prog = seccompBlock(prog, nr, bpfStmt(bpfRet, seccompEPERM))
	}
	prog = seccompBlock(prog, unix.SYS_CLONE3, bpfStmt(bpfRet, seccompENOSYS))
	prog = seccompBlock(prog, unix.SYS_OPENAT2, bpfStmt(bpfRet, seccompENOSYS))
	prog = seccompBlock(prog, unix.SYS_CLONE,
		bpfStmt(bpfLd, seccompArg(0)),
		bpfJump(bpfJset, cloneNamespaceFlags, 0, 1),
		bpfStmt(bpfRet, seccompEPERM),
		bpfStmt(bpfRet, seccompAllow),
	)
	ioctl := []unix.SockFilter{bpfStmt(bpfLd, seccompArg(1))}
	for i, req := range seccompTerminalIoctls {
		// Equal: jump to the EPERM after the last comparison.
		ioctl = append(ioctl, bpfJump(bpfJeq, req, uint8(len(seccompTerminalIoctls)-i), 0))
	}
	ioctl = append(ioctl, bpfStmt(bpfRet, seccompAllow), bpfStmt(bpfRet, seccompEPERM))
	prog = seccompBlock(prog, unix.SYS_IOCTL, ioctl...)
	for _, m := range seccompModeSyscalls {
		var body []unix.SockFilter
		if m.flags >= 0 {
			body = append(body,
				bpfStmt(bpfLd, seccompArg(m.flags)),
				bpfJump(bpfJset, seccompCreateFlags, 0, 2), // no file created: the mode is unused
			)
		}
		body = append(body,
			bpfStmt(bpfLd, seccompArg(m.mode)),
			bpfJump(bpfJset, seccompSpecialModeBits, 1, 0),
			bpfStmt(bpfRet, seccompAllow),
			bpfStmt(bpfRet, seccompEPERM),
		)
		prog = seccompBlock(prog, m.nr, body...)
	}
	if networkOff {
		prog = seccompBlock(prog, unix.SYS_SOCKET,
			bpfStmt(bpfLd, seccompArg(0)),
			bpfJump(bpfJeq, unix.AF_UNIX, 1, 0),
			bpfStmt(bpfRet, seccompEPERM),
			bpfStmt(bpfRet, seccompAllow),
		)
	}
	return append(prog, bpfStmt(bpfRet, seccompAllow))
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
