//go:build !linux

package broker

import "github.com/agentloom/loom/sandbox"

// jailScratchBytes is zero outside Linux: no jail mounts scratch.
const jailScratchBytes = 0

// physicalMemoryBytes is unknown outside Linux.
func physicalMemoryBytes() int64 { return 0 }

// helperCgroup exists only where cgroups do: on Linux.
type helperCgroup struct{ layer sandbox.Layer }

func (c *helperCgroup) remove() {}

func (b *Broker) claimCgroup(*jailProcess) *helperCgroup { return nil }

func (b *Broker) sweepCgroups() {}

// makeRoom has no warm helper to discard outside Linux.
func (b *Broker) makeRoom() {}

type cgroupParent struct{}

// prewarmDeferred has no warm helper to start outside Linux.
func (b *Broker) prewarmDeferred() {}

// flavour exists only where helpers do: on Linux.
type flavour struct{}
