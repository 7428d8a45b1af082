package broker

import "github.com/agentloom/loom/broker/internal/jail"

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
