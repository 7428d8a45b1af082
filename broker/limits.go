package broker

import "github.com/agentloom/loom/sandbox"

// Default resource ceilings applied when a Limits field is zero. They are
// generous for builds and test suites and still stop a runaway command
// from exhausting the host.
const (
	// defaultCPUSeconds bounds CPU time per process (RLIMIT_CPU).
	defaultCPUSeconds = 1200
	// defaultMemoryBytes bounds each process's address space (RLIMIT_AS).
	// Runtimes that reserve large virtual ranges (Go, V8, the JVM) fit.
	defaultMemoryBytes = 16 << 30
	// defaultProcesses bounds the number of processes the jailed user may
	// hold (RLIMIT_NPROC); inside a fresh user namespace it counts the
	// jail's processes only.
	defaultProcesses = 1024
	// defaultFileSizeBytes bounds the size of any file a command writes
	// (RLIMIT_FSIZE).
	defaultFileSizeBytes = 8 << 30
	// defaultOpenFiles bounds open descriptors per process (RLIMIT_NOFILE).
	defaultOpenFiles = 4096
	// defaultMaxOutputBytes bounds one command's stdout and stderr
	// together when CallSpec.MaxOutputBytes is zero (Options.MaxOutputBytes
	// lowers it for every call). Past 64 KiB the tools spool output to a
	// blob a model pages through; 256 MiB is more than any build or test
	// log a model can use, a day of a chatty server's log, and keeps the
	// disk a full host of live commands can fill (defaultMaxLiveCommands
	// of them) at 8 GiB. The first byte past the bound stops the tree.
	defaultMaxOutputBytes = 256 << 20
)

// withDefaults returns l with every zero field replaced by its default.
func withDefaults(l sandbox.Limits) sandbox.Limits {
	if l.CPUSeconds == 0 {
		l.CPUSeconds = defaultCPUSeconds
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = defaultMemoryBytes
	}
	if l.Processes == 0 {
		l.Processes = defaultProcesses
	}
	if l.FileSizeBytes == 0 {
		l.FileSizeBytes = defaultFileSizeBytes
	}
	if l.OpenFiles == 0 {
		l.OpenFiles = defaultOpenFiles
	}
	return l
}
