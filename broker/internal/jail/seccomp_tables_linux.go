//go:build amd64 || arm64

package jail

import "golang.org/x/sys/unix"

// seccompDenied are the syscalls a jailed command may never make: they
// reach other processes' memory, the mount table, the kernel's keyrings
// and BPF, io_uring (which bypasses syscall filtering), namespaces and
// module/kexec loading. The list is the same on every machine the jail
// has a syscall table for.
var seccompDenied = []uintptr{
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT,
	unix.SYS_OPEN_TREE, unix.SYS_OPEN_TREE_ATTR, unix.SYS_MOVE_MOUNT, unix.SYS_FSOPEN,
	unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR,
	unix.SYS_BPF, unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD, unix.SYS_OPEN_BY_HANDLE_AT,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT, unix.SYS_ACCT,
}

// seccompModeSyscallsAt are the mode-taking syscalls every machine has:
// the *at family and fchmod.
var seccompModeSyscallsAt = []seccompModeSyscall{
	{nr: unix.SYS_FCHMOD, mode: 1, flags: -1},
	{nr: unix.SYS_FCHMODAT, mode: 2, flags: -1},
	{nr: unix.SYS_FCHMODAT2, mode: 2, flags: -1},
	{nr: unix.SYS_OPENAT, mode: 3, flags: 2},
	{nr: unix.SYS_MKDIRAT, mode: 2, flags: -1},
	{nr: unix.SYS_MKNODAT, mode: 2, flags: -1},
}
