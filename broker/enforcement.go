package broker

import (
	"strings"

	"github.com/agentloom/loom/broker/internal/jail"
)

// Layer names used in an Enforcement report. Each names one confinement
// mechanism the jail applies or skips as a whole.
const (
	LayerNamespaces   = jail.LayerNamespaces   // user, mount, network, pid and ipc namespaces
	LayerMounts       = jail.LayerMounts       // private root, read-only protected binds, fresh /proc
	LayerPolicyRoot   = jail.LayerPolicyRoot   // the jail's root holds the policy's roots only (pivot_root)
	LayerLoopback     = jail.LayerLoopback     // lo up inside a private network namespace
	LayerCapabilities = jail.LayerCapabilities // bounding, ambient, effective, permitted, inheritable all cleared
	LayerNoNewPrivs   = jail.LayerNoNewPrivs   // PR_SET_NO_NEW_PRIVS
	LayerLandlock     = jail.LayerLandlock     // filesystem, TCP and scope rules
	LayerSeccomp      = jail.LayerSeccomp      // syscall filter returning EPERM
	LayerRlimits      = jail.LayerRlimits      // processes, memory, file size, open files, CPU, message queues, no core dumps
	LayerJail         = "jail"                 // the jail as a whole (used when none exists on the platform)
	// LayerEmptyRoot: an empty-root run (CallSpec.EmptyRoot) ran in a
	// root that is a fresh tmpfs holding only the command's executable, a
	// minimal /dev and, when asked for, a fresh /proc (pivot_root, the
	// old root detached); applied only once the pivot succeeded.
	LayerEmptyRoot = jail.LayerEmptyRoot
	// LayerCgroup: the command's tree ran in a child of
	// Options.CgroupParent bounded by memory.max and pids.max (Params say
	// which were written); reported only when the host set CgroupParent.
	LayerCgroup = "cgroup"
)

// LayerNamespaceLimits names the per-namespace kernel ceilings the jail
// writes into its own IPC and user namespaces before /proc/sys goes
// read-only: SysV shared memory, message queues and semaphores, POSIX
// message queues, inotify and fanotify, and nested namespaces. The kernel
// keeps each of these per namespace with defaults sized for a whole
// machine (a fresh IPC namespace allows SysV shared memory without
// practical bound), and none of them is an rlimit.
//
// The layer is applied only when every limit the kernel offers was
// written; its Params list the values set, its Reason every one that was
// refused and why. An unprivileged host cannot set the IPC limits at all:
// the kernel lets only uid 0 of the namespace's owner write them, and the
// jail's identity map has no uid 0.
//
// The ceilings, per command (each jail has IPC and user namespaces of its
// own, which die with its last process): SysV shared memory 256 MiB per
// segment and in all, 128 segments (room for a database test server's
// shared buffers; a detached segment belongs to no process, so no rlimit
// sees it); SysV messages 8 KiB, 16 KiB per queue, 64 queues; semaphores
// "250 32000 32 128"; POSIX message queues 10 messages of 8 KiB, 64
// queues, 1 MiB in all (RLIMIT_MSGQUEUE); 8192 inotify watches and 16
// instances; 8 fanotify groups and 8192 marks. The notification ceilings
// matter because the kernel charges every watch against the host uid's
// own budget, which the host's watchers (the git guard's among them)
// share.
const LayerNamespaceLimits = jail.LayerNamespaceLimits

// Layer is one confinement mechanism and what became of it: Name (one
// of the Layer* names), Applied, which is true only when the kernel
// accepted it, Detail (a short qualifier the compact line shows in
// parentheses, e.g. "abi 6" for Landlock), Params (the layer's
// parameters for the full report) and Reason, which says why a skipped
// layer was skipped (an errno name or a short sentence; empty when
// applied). It is the helper's own report of the layer.
type Layer = jail.Layer

// Enforcement is the report of how one command was confined. Degraded is
// true whenever any layer was skipped; a report never claims a layer the
// kernel did not apply.
type Enforcement struct {
	Layers   []Layer `json:"layers"`
	Degraded bool    `json:"degraded"`
}

// Layer returns the layer named name and whether the report holds it.
func (e Enforcement) Layer(name string) (Layer, bool) {
	for _, l := range e.Layers {
		if l.Name == name {
			return l, true
		}
	}
	return Layer{}, false
}

// Applied reports whether the layer named name was applied.
func (e Enforcement) Applied(name string) bool {
	l, ok := e.Layer(name)
	return ok && l.Applied
}

// add appends a layer and keeps Degraded in step with it.
func (e *Enforcement) add(l Layer) {
	e.Layers = append(e.Layers, l)
	if !l.Applied {
		e.Degraded = true
	}
}

// String renders the compact, model-facing line: applied layers by name
// (with their Detail in parentheses), then, when degraded, the skipped
// layers with their reasons. Params stay in the full report. For example
//
//	sandbox: namespaces, mounts, landlock(abi 6), seccomp, rlimits applied
//	sandbox: landlock(abi 6), seccomp applied; DEGRADED, skipped: namespaces: EPERM
func (e Enforcement) String() string {
	var applied, skipped []string
	for _, l := range e.Layers {
		if l.Applied {
			name := l.Name
			if l.Detail != "" {
				name += "(" + l.Detail + ")"
			}
			applied = append(applied, name)
			continue
		}
		s := l.Name
		if l.Reason != "" {
			s += ": " + l.Reason
		}
		skipped = append(skipped, s)
	}
	var b strings.Builder
	b.WriteString("sandbox: ")
	if len(applied) == 0 {
		b.WriteString("nothing applied")
	} else {
		b.WriteString(strings.Join(applied, ", "))
		b.WriteString(" applied")
	}
	if e.Degraded || len(skipped) > 0 {
		b.WriteString("; DEGRADED")
		if len(skipped) > 0 {
			b.WriteString(", skipped: ")
			b.WriteString(strings.Join(skipped, "; "))
		}
	}
	return b.String()
}
