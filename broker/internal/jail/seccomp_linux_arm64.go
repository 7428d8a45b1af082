package jail

import "golang.org/x/sys/unix"

const (
	seccompArchSupported = true
	seccompAuditArch     = unix.AUDIT_ARCH_AARCH64
	// seccompX32Bit is zero: arm64 has no x32-style second ABI to refuse.
	seccompX32Bit = 0
)

// seccompModeSyscalls are the syscalls of this machine that take a file
// mode (see seccompModeSyscall); arm64 has only the *at forms.
var seccompModeSyscalls = seccompModeSyscallsAt
