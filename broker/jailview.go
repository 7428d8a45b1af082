package broker

import "github.com/agentloom/loom/broker/internal/jail"

// ScratchDir is where a jailed command finds its private scratch
// directory: a tmpfs of its own, bounded, gone when the command ends.
const ScratchDir = jail.ScratchDir

// ScratchBytes bounds the private tmpfs mounted at ScratchDir inside the
// jail (per command; it vanishes with the command's mount namespace).
const ScratchBytes = jail.ScratchBytes

// JailReplacedRoots returns the directories every jail mounts its own
// copy of (/proc, /dev and ScratchDir), each time a fresh slice. What a
// harness reads at these paths on the host is not what a jailed command
// sees there, so harness-side tools refuse to read them outside the
// roots a host names inside them.
func JailReplacedRoots() []string { return jail.ReplacedRoots() }
