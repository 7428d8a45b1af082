//go:build linux

package jail

import "golang.org/x/sys/unix"

// seccompArchModeArgs are x86-64's own mode-setting syscalls and where
// their mode and flags are, from the kernel's syscall definitions.
var seccompArchModeArgs = map[uintptr][2]int{
	unix.SYS_CHMOD: {1, -1}, unix.SYS_CREAT: {1, -1}, unix.SYS_OPEN: {2, 1},
	unix.SYS_MKDIR: {1, -1}, unix.SYS_MKNOD: {1, -1},
}
