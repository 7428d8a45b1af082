package broker

// ScratchDir is where a jailed command finds its private scratch
// directory: a tmpfs of its own, bounded, gone when the command ends.
const ScratchDir = "/tmp"

// JailReplacedRoots returns the directories every jail mounts its own
// copy of (/proc, /dev and ScratchDir), each time a fresh slice. What a
// harness reads at these paths on the host is not what a jailed command
// sees there, so harness-side tools refuse to read them outside the
// roots a host names inside them.
func JailReplacedRoots() []string { return []string{"/proc", "/dev", ScratchDir} }
