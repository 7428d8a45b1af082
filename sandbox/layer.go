package sandbox

// Names of the layers an Enforcement report holds. Each names one
// confinement mechanism a jail applies or skips as a whole.
const (
	LayerNamespaces   = "namespaces"   // user, mount, network, pid and ipc namespaces
	LayerMounts       = "mounts"       // private root, read-only protected binds, fresh /proc
	LayerPolicyRoot   = "policy_root"  // the jail's root holds the policy's roots only (pivot_root)
	LayerLoopback     = "loopback"     // lo up inside a private network namespace
	LayerCapabilities = "capabilities" // bounding, ambient, effective, permitted, inheritable all cleared
	LayerNoNewPrivs   = "no_new_privs" // PR_SET_NO_NEW_PRIVS
	LayerLandlock     = "landlock"     // filesystem, TCP and scope rules
	LayerSeccomp      = "seccomp"      // syscall filter returning EPERM
	LayerRlimits      = "rlimits"      // processes, memory, file size, open files, CPU, message queues, no core dumps
	LayerJail         = "jail"         // the jail as a whole (used when none exists on the platform)
	// LayerEmptyRoot: an empty-root run (CallSpec.EmptyRoot) ran in a
	// root that is a fresh tmpfs holding only the command's executable, a
	// minimal /dev and, when asked for, a fresh /proc (pivot_root, the
	// old root detached); applied only once the pivot succeeded.
	LayerEmptyRoot = "empty_root"
	// LayerCgroup: the command's tree ran in a child cgroup bounded by
	// memory.max and pids.max (Params say which were written); reported
	// only when the host gave the jail a cgroup parent.
	LayerCgroup = "cgroup"
)

// LayerNamespaceLimits names the per-namespace kernel ceilings the jail
// writes into its own IPC and user namespaces before /proc/sys goes
// read-only: SysV shared memory, message queues and semaphores, POSIX
// message queues, inotify and fanotify, and nested namespaces. The kernel
// keeps each of these per namespace with defaults sized for a whole
// machine, and none of them is an rlimit.
//
// The layer is applied only when every limit the kernel offers was
// written; its Params list the values set, its Reason every one that was
// refused and why. An unprivileged host cannot set the IPC limits at all:
// the kernel lets only uid 0 of the namespace's owner write them, and the
// jail's identity map has no uid 0.
//
// The ceilings, per command: SysV shared memory 256 MiB per segment and
// in all, 128 segments; SysV messages 8 KiB, 16 KiB per queue, 64
// queues; semaphores "250 32000 32 128"; POSIX message queues 10
// messages of 8 KiB, 64 queues, 1 MiB in all; 8192 inotify watches and
// 16 instances; 8 fanotify groups and 8192 marks. The notification
// ceilings matter because the kernel charges every watch against the
// host uid's own budget, which the host's watchers share.
const LayerNamespaceLimits = "namespace_limits"

// Layer is one confinement mechanism and what became of it. Applied is
// true only when the kernel accepted it; otherwise Reason says why it was
// skipped (an errno name or a short sentence).
type Layer struct {
	Name    string `json:"name"`
	Applied bool   `json:"applied"`
	// Detail is a short qualifier the compact line shows in parentheses,
	// e.g. "abi 6" for Landlock.
	Detail string `json:"detail,omitempty"`
	// Params are the layer's parameters for the full report (which
	// namespaces, how many protected paths); the compact line omits them.
	Params string `json:"params,omitempty"`
	// Reason says why a layer was skipped; empty when applied.
	Reason string `json:"reason,omitempty"`
}

// MissingLayer is the cause a DenialLayerRequired wraps (found with
// errors.As): the first required layer that was not applied, and why.
// Layer is one of the Layer* names; Reason is the kernel's errno name or
// a short sentence, never a claim that the layer holds.
type MissingLayer struct {
	Layer  string `json:"layer"`
	Reason string `json:"reason"`
}

// Error renders "required layer <layer> not applied: <reason>".
func (m *MissingLayer) Error() string {
	return "required layer " + m.Layer + " not applied: " + m.Reason
}
