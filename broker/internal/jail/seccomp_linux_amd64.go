package jail

import "golang.org/x/sys/unix"

const (
	seccompArchSupported = true
	seccompAuditArch     = unix.AUDIT_ARCH_X86_64
	// seccompX32Bit marks x32-ABI syscall numbers on x86-64; all refused.
	seccompX32Bit = 0x40000000
)

// seccompModeSyscalls are the syscalls of this machine that take a file
// mode (see seccompModeSyscall); x86-64 still has the pre-*at ones.
var seccompModeSyscalls = append([]seccompModeSyscall{
	{nr: unix.SYS_CHMOD, mode: 1, flags: -1},
	{nr: unix.SYS_CREAT, mode: 1, flags: -1},
	{nr: unix.SYS_OPEN, mode: 2, flags: 1},
	{nr: unix.SYS_MKDIR, mode: 1, flags: -1},
	{nr: unix.SYS_MKNOD, mode: 1, flags: -1},
}, seccompModeSyscallsAt...)
