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
const LayerNamespaceLimits = jail.LayerNamespaceLimits

// Per-command IPC ceilings (each jail has an IPC namespace of its own,
// which dies with the command's last process). They bound the memory a
// command can pin outside every rlimit: a detached SysV segment belongs
// to no process, so RLIMIT_AS never sees it.
const (
	// JailSysVShmBytes bounds one SysV shared memory segment
	// (kernel.shmmax) and all of them together (kernel.shmall): room for
	// a database test server configured for SysV shared buffers (128 MiB
	// by default in PostgreSQL), far below a host's memory.
	JailSysVShmBytes = jail.SysVShmBytes
	// JailSysVShmSegments bounds how many SysV segments exist at once
	// (kernel.shmmni).
	JailSysVShmSegments = jail.SysVShmSegments
	// JailSysVMsgBytes bounds one SysV message (kernel.msgmax) and one
	// queue's contents (kernel.msgmnb), the kernel's own defaults.
	JailSysVMsgBytes      = jail.SysVMsgBytes
	JailSysVMsgQueueBytes = jail.SysVMsgQueueBytes
	// JailSysVMsgQueues bounds how many SysV message queues exist at once
	// (kernel.msgmni): with JailSysVMsgQueueBytes, 1 MiB queued in all.
	JailSysVMsgQueues = jail.SysVMsgQueues
	// JailSysVSem is kernel.sem: semaphores per set, in all, operations
	// per semop call, sets (the historical Linux defaults PostgreSQL's
	// documentation sizes against).
	JailSysVSem = jail.SysVSem
	// JailMqueueMessages, JailMqueueMessageBytes and JailMqueueQueues are
	// fs.mqueue.msg_max, msgsize_max and queues_max for POSIX message
	// queues (the first two the kernel's defaults).
	JailMqueueMessages     = jail.MqueueMessages
	JailMqueueMessageBytes = jail.MqueueMessageBytes
	JailMqueueQueues       = jail.MqueueQueues
	// JailMqueueBytes is the jail's RLIMIT_MSGQUEUE: the bytes all of its
	// POSIX message queues may hold (the kernel's default is 800 KiB per
	// user, but a host may run with it raised).
	JailMqueueBytes = jail.MqueueBytes
)

// Per-command notification ceilings, written into the jail's user
// namespace. The kernel charges each watch, instance, group and mark at
// every user-namespace level up to the host's, against the host uid's
// own budget (fs.inotify.max_user_watches and the like), which the host's
// own watchers (the git guard's among them) share: without a ceiling of
// its own a command can take all of it.
const (
	// JailInotifyWatches bounds one command's inotify watches: a test
	// watcher or `inotifywait -r` over a source tree of a few thousand
	// directories fits.
	JailInotifyWatches = jail.InotifyWatches
	// JailInotifyInstances bounds one command's inotify instances.
	JailInotifyInstances = jail.InotifyInstances
	// JailFanotifyGroups and JailFanotifyMarks bound one command's
	// fanotify groups and marks (where the kernel lets it have any).
	JailFanotifyGroups = jail.FanotifyGroups
	JailFanotifyMarks  = jail.FanotifyMarks
)
