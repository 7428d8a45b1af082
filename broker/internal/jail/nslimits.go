package jail

// The per-command IPC ceilings written into the jail's IPC namespace;
// broker.SysVShmBytes and its neighbours document each.
const (
	SysVShmBytes       = 256 << 20          // kernel.shmmax and kernel.shmall (in pages)
	SysVShmSegments    = 128                // kernel.shmmni
	SysVMsgBytes       = 8 << 10            // kernel.msgmax
	SysVMsgQueueBytes  = 16 << 10           // kernel.msgmnb
	SysVMsgQueues      = 64                 // kernel.msgmni
	SysVSem            = "250 32000 32 128" // kernel.sem
	MqueueMessages     = 10                 // fs.mqueue.msg_max
	MqueueMessageBytes = 8 << 10            // fs.mqueue.msgsize_max
	MqueueQueues       = 64                 // fs.mqueue.queues_max
	MqueueBytes        = 1 << 20            // RLIMIT_MSGQUEUE
)

// The per-command notification ceilings written into the jail's user
// namespace; broker.InotifyWatches and its neighbours document each.
const (
	InotifyWatches   = 8192 // user.max_inotify_watches
	InotifyInstances = 16   // user.max_inotify_instances
	FanotifyGroups   = 8    // user.max_fanotify_groups
	FanotifyMarks    = 8192 // user.max_fanotify_marks

	// jailHostShareDivisor caps each notification ceiling at this
	// fraction of the host's per-uid limit, so one command never holds
	// more than a quarter of what the host uid may have on a small host
	// where the limit scales down with memory.
	jailHostShareDivisor = 4
)
