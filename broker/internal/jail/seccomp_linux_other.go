//go:build linux && !amd64 && !arm64

package jail

const (
	seccompArchSupported = false
	seccompAuditArch     = 0
	seccompX32Bit        = 0
)

// seccompModeSyscalls is empty: without a syscall table no filter is
// installed at all (the seccomp layer is reported skipped).
var seccompModeSyscalls []seccompModeSyscall

// seccompDenied is empty for the same reason.
var seccompDenied []uintptr
