package broker

// Default resource ceilings applied when a Limits field is zero. They are
// generous for builds and test suites and still stop a runaway command
// from exhausting the host.
const (
	// DefaultCPUSeconds bounds CPU time per process (RLIMIT_CPU).
	DefaultCPUSeconds = 1200
	// DefaultMemoryBytes bounds each process's address space (RLIMIT_AS).
	// Runtimes that reserve large virtual ranges (Go, V8, the JVM) fit.
	DefaultMemoryBytes = 16 << 30
	// DefaultProcesses bounds the number of processes the jailed user may
	// hold (RLIMIT_NPROC); inside a fresh user namespace it counts the
	// jail's processes only.
	DefaultProcesses = 1024
	// DefaultFileSizeBytes bounds the size of any file a command writes
	// (RLIMIT_FSIZE).
	DefaultFileSizeBytes = 8 << 30
	// DefaultOpenFiles bounds open descriptors per process (RLIMIT_NOFILE).
	DefaultOpenFiles = 4096
	// DefaultMaxOutputBytes bounds one command's stdout and stderr
	// together when CallSpec.MaxOutputBytes is zero (Options.MaxOutputBytes
	// lowers it for every call). Past 64 KiB the tools spool output to a
	// blob a model pages through; 256 MiB is more than any build or test
	// log a model can use, a day of a chatty server's log, and keeps the
	// disk a full host of live commands can fill (DefaultMaxLiveCommands
	// of them) at 8 GiB. The first byte past the bound stops the tree.
	DefaultMaxOutputBytes = 256 << 20
)

// withDefaults returns l with every zero field replaced by its default.
func withDefaults(l Limits) Limits {
	if l.CPUSeconds == 0 {
		l.CPUSeconds = DefaultCPUSeconds
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = DefaultMemoryBytes
	}
	if l.Processes == 0 {
		l.Processes = DefaultProcesses
	}
	if l.FileSizeBytes == 0 {
		l.FileSizeBytes = DefaultFileSizeBytes
	}
	if l.OpenFiles == 0 {
		l.OpenFiles = DefaultOpenFiles
	}
	return l
}
