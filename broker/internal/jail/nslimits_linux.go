package jail

import (
	"github.com/agentloom/loom/internal/errno"
	"github.com/agentloom/loom/sandbox"

	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// nsLimit is one per-namespace kernel ceiling: the file under /proc/sys
// that holds it for the writer's namespace and the value to write.
type nsLimit struct {
	file  string // relative to /proc/sys
	value string
	// ipc: kept by the IPC namespace (written only by its owner's uid 0);
	// otherwise by the user namespace (written with CAP_SYS_RESOURCE in
	// it).
	ipc bool
}

// procSysDir is where the jail's fresh /proc shows the kernel's knobs.
const procSysDir = "/proc/sys/"

// nestedNamespaceFiles are the user namespace's counts of the namespaces
// that may be created in it. The jail sets each to 0: seccomp refuses
// the calls that create namespaces, and these refuse them again where
// seccomp is absent.
var nestedNamespaceFiles = []string{
	"user/max_user_namespaces", "user/max_mnt_namespaces", "user/max_pid_namespaces",
	"user/max_net_namespaces", "user/max_ipc_namespaces", "user/max_uts_namespaces",
	"user/max_cgroup_namespaces", "user/max_time_namespaces",
}

// notifyLimits pairs each of the jail's notification ceilings with the
// host-wide per-uid limit it is charged against (which the jail's /proc
// still shows: those files belong to the initial user namespace).
var notifyLimits = []struct {
	file, host string
	bound      uint64
}{
	{"user/max_inotify_watches", "fs/inotify/max_user_watches", InotifyWatches},
	{"user/max_inotify_instances", "fs/inotify/max_user_instances", InotifyInstances},
	{"user/max_fanotify_groups", "fs/fanotify/max_user_groups", FanotifyGroups},
	{"user/max_fanotify_marks", "fs/fanotify/max_user_marks", FanotifyMarks},
}

// notifyCeiling is the ceiling for a notification limit whose jail
// constant is bound, given the host's per-uid limit host (0 when
// unknown): bound, or the host's limit divided by jailHostShareDivisor
// when that is smaller (and at least 1).
func notifyCeiling(bound, host uint64) uint64 {
	if host == 0 {
		return bound
	}
	return min(bound, max(host/jailHostShareDivisor, 1))
}

// InotifyWatchesCeiling is the inotify watch ceiling a jail gets on
// this host: InotifyWatches, or less on a host whose per-uid limit is
// small (see notifyCeiling).
func InotifyWatchesCeiling() uint64 {
	return notifyCeiling(InotifyWatches, hostSysctl("fs/inotify/max_user_watches"))
}

// namespaceLimits lists the ceilings the jail writes, in order: the IPC
// namespace's, then the user namespace's notification ceilings (capped
// per notifyCeiling with hostLimit, which reads a /proc/sys file and
// returns 0 when it cannot), then the nested namespace counts.
func namespaceLimits(pageSize int, hostLimit func(file string) uint64) []nsLimit {
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	ls := []nsLimit{
		{"kernel/shmmax", u(SysVShmBytes), true},
		{"kernel/shmall", u(uint64(SysVShmBytes / pageSize)), true},
		{"kernel/shmmni", u(SysVShmSegments), true},
		{"kernel/msgmax", u(SysVMsgBytes), true},
		{"kernel/msgmnb", u(SysVMsgQueueBytes), true},
		{"kernel/msgmni", u(SysVMsgQueues), true},
		{"kernel/sem", SysVSem, true},
		{"fs/mqueue/msg_max", u(MqueueMessages), true},
		{"fs/mqueue/msgsize_max", u(MqueueMessageBytes), true},
		{"fs/mqueue/queues_max", u(MqueueQueues), true},
	}
	for _, n := range notifyLimits {
		ls = append(ls, nsLimit{file: n.file, value: u(notifyCeiling(n.bound, hostLimit(n.host)))})
	}
	for _, f := range nestedNamespaceFiles {
		ls = append(ls, nsLimit{file: f, value: "0"})
	}
	return ls
}

// maxSysctlBytes bounds how much of a /proc/sys file hostSysctl reads.
const maxSysctlBytes = 64

// hostSysctl reads the unsigned number in /proc/sys/file, or 0.
func hostSysctl(file string) uint64 { return hostSysctlAt(unix.AT_FDCWD, procSysDir+file) }

// hostSysctlAt reads the unsigned number in path (relative to dir), or
// 0.
func hostSysctlAt(dir int, path string) uint64 {
	fd, err := unix.Openat(dir, path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	var buf [maxSysctlBytes]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil || n <= 0 {
		return 0
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(buf[:n])), 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// writeSysctl writes value to /proc/sys/file in one write(2), as the
// kernel's sysctl handlers expect.
func writeSysctl(file, value string) error {
	return writeSysctlAt(unix.AT_FDCWD, procSysDir+file, value)
}

// writeSysctlAt is writeSysctl of path relative to dir.
func writeSysctlAt(dir int, path, value string) error {
	fd, err := unix.Openat(dir, path, unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte(value))
	return err
}

// applyNamespaceLimits writes every ceiling in limits with write and
// reports the layer: applied when each one the kernel offers was set
// (a file that does not exist is a facility the kernel lacks, so there
// is nothing to bound), with Params naming every value set; otherwise
// the Reason names each one refused, grouped by error. It must run in
// the jail's own IPC and user namespaces, on its fresh /proc, before
// /proc/sys is bound read-only.
func applyNamespaceLimits(limits []nsLimit, write func(file, value string) error) sandbox.Layer {
	var set, absent []string
	type refusal struct {
		why   string
		files []string
	}
	var refused []refusal
	for _, l := range limits {
		err := write(l.file, l.value)
		switch {
		case err == nil:
			set = append(set, sysctlName(l.file)+"="+strings.ReplaceAll(l.value, " ", ","))
			continue
		case errors.Is(err, unix.ENOENT):
			absent = append(absent, sysctlName(l.file))
			continue
		}
		why := errno.Name(err)
		if l.ipc && errors.Is(err, unix.EACCES) && os.Geteuid() != 0 {
			why += ": only uid 0 of the jail's user namespace may set IPC limits, and an unprivileged host's identity map has none"
		}
		i := 0
		for i < len(refused) && refused[i].why != why {
			i++
		}
		if i == len(refused) {
			refused = append(refused, refusal{why: why})
		}
		refused[i].files = append(refused[i].files, sysctlName(l.file))
	}
	params := strings.Join(set, ", ")
	if len(absent) > 0 {
		if params != "" {
			params += "; "
		}
		params += "not in this kernel: " + strings.Join(absent, ", ")
	}
	if len(refused) == 0 {
		return sandbox.Layer{Name: sandbox.LayerNamespaceLimits, Applied: true, Params: params}
	}
	var reasons []string
	for _, r := range refused {
		reasons = append(reasons, fmt.Sprintf("%s not set (%s)", strings.Join(r.files, ", "), r.why))
	}
	return sandbox.Layer{Name: sandbox.LayerNamespaceLimits, Reason: strings.Join(reasons, "; "), Params: params}
}

// sysctlName renders a /proc/sys-relative file as its sysctl name
// ("kernel/shmmax" as "kernel.shmmax").
func sysctlName(file string) string { return strings.ReplaceAll(file, "/", ".") }

// setNamespaceLimits writes the jail's per-namespace ceilings
// (namespaceLimits) into its IPC and user namespaces, but for those
// prepareNamespaceLimits already set to the same value (the kernel keeps
// them in the namespace, which no one else has entered).
func setNamespaceLimits() sandbox.Layer {
	done := helperPrepared.limits
	dirs := sysctlDirs{}
	defer dirs.close()
	return applyNamespaceLimits(namespaceLimits(os.Getpagesize(), dirs.read), func(file, value string) error {
		if v, ok := done[file]; ok && v == value {
			return nil
		}
		if held, err := writeLate(file, value); held {
			return err
		}
		return dirs.write(file, value)
	})
}

// sysctlDirs holds the directories of /proc/sys that setNamespaceLimits
// reads and writes in, each opened once (O_PATH, no link followed), so
// each file is a one-name lookup instead of a walk from /proc: a cold
// helper writes some twenty of them. A directory that cannot be opened
// is walked to as before, which fails or succeeds as the walk would.
type sysctlDirs map[string]int

// at returns the fd of dir (relative to /proc/sys), or AT_FDCWD and
// dir's full path when it cannot be opened.
func (d sysctlDirs) at(dir string) (int, string) {
	fd, ok := d[dir]
	if !ok {
		var err error
		fd, err = unix.Open(procSysDir+dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			fd = -1
		}
		d[dir] = fd
	}
	if fd < 0 {
		return unix.AT_FDCWD, procSysDir + dir + "/"
	}
	return fd, ""
}

// read is hostSysctl through d.
func (d sysctlDirs) read(file string) uint64 {
	dir, name := splitSysctl(file)
	fd, prefix := d.at(dir)
	return hostSysctlAt(fd, prefix+name)
}

// write is writeSysctl through d.
func (d sysctlDirs) write(file, value string) error {
	dir, name := splitSysctl(file)
	fd, prefix := d.at(dir)
	return writeSysctlAt(fd, prefix+name, value)
}

// close closes every directory d opened.
func (d sysctlDirs) close() {
	for _, fd := range d {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// splitSysctl splits a /proc/sys-relative file into its directory and
// its name ("kernel/shmmax": "kernel", "shmmax").
func splitSysctl(file string) (dir, name string) {
	i := strings.LastIndexByte(file, '/')
	if i < 0 {
		return ".", file
	}
	return file[:i], file[i+1:]
}

// lateLimitFile is the one ceiling prepareNamespaceLimits leaves to
// setNamespaceLimits: the jail still makes anonymous mount namespaces
// (each mask's stand-in, each pinned link) after the preparation.
const lateLimitFile = "user/max_mnt_namespaces"

// prepareNamespaceLimits writes, through proc (a fresh /proc of the
// helper's namespaces, detached), every ceiling of namespaceLimits but
// lateLimitFile, and notes in helperPrepared.limits each one the kernel
// took, with its value. The rest are written, and every one reported, by
// setNamespaceLimits.
func prepareNamespaceLimits(proc int) {
	ls := namespaceLimits(os.Getpagesize(), func(file string) uint64 { return hostSysctlAt(proc, "sys/"+file) })
	done := map[string]string{}
	for _, l := range ls {
		if l.file == lateLimitFile {
			continue
		}
		if writeSysctlAt(proc, "sys/"+l.file, l.value) == nil {
			done[l.file] = l.value
		}
	}
	helperPrepared.limits = done
}
