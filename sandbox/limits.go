package sandbox

// Limits are the resource ceilings a helper sets with setrlimit before
// exec (broker.Limits is this type). In a Config every field holds the
// value to set: the broker has already put its defaults in the zero
// fields.
type Limits struct {
	CPUSeconds    uint64 `json:"cpu_seconds,omitempty"`
	MemoryBytes   uint64 `json:"memory_bytes,omitempty"`
	Processes     uint64 `json:"processes,omitempty"`
	FileSizeBytes uint64 `json:"file_size_bytes,omitempty"`
	OpenFiles     uint64 `json:"open_files,omitempty"`
}
