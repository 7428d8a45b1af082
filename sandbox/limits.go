package sandbox

// Limits are the resource ceilings applied to a jailed command with
// setrlimit: CPUSeconds (RLIMIT_CPU), MemoryBytes (RLIMIT_AS), Processes
// (RLIMIT_NPROC), FileSizeBytes (RLIMIT_FSIZE) and OpenFiles
// (RLIMIT_NOFILE). A zero field means the jail's default, never
// "unlimited" (the broker's: 1200 CPU seconds, 16 GiB of address space,
// 1024 processes, 8 GiB per file, 4096 descriptors).
type Limits struct {
	CPUSeconds    uint64 `json:"cpu_seconds,omitempty"`
	MemoryBytes   uint64 `json:"memory_bytes,omitempty"`
	Processes     uint64 `json:"processes,omitempty"`
	FileSizeBytes uint64 `json:"file_size_bytes,omitempty"`
	OpenFiles     uint64 `json:"open_files,omitempty"`
}
