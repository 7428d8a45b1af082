//go:build linux

package broker

import (
	"context"
	"testing"
	"time"

	"github.com/agentloom/loom/sandbox"
)

// boundEscapeCases attacks output and host-wide bounds.
func boundEscapeCases() []escapeCase {
	return []escapeCase{
		{name: "output_flood_past_bound", run: runOutputPastBound},
		{name: "concurrent_commands_past_bound", run: runConcurrentPastBound},
	}
}

// escapeOutputBound is the bound the output probe runs against; the
// flood writes four times as much.
const escapeOutputBound = 1 << 20

// runOutputPastBound: a command writing 4 MiB under a 1 MiB output bound
// must be stopped with exactly the bound delivered and OutputLimited
// set. The control runs the same flood under a bound larger than it and
// sees all of it pass, so the probe would see a missing bound.
func runOutputPastBound(t *testing.T, b *Broker, e *escapeEnv, jailed bool) bool {
	bound := int64(escapeOutputBound)
	if !jailed {
		bound = 8 * escapeOutputBound
	}
	ex, d := b.Clear(context.Background(), sandbox.CallSpec{
		Key: sandbox.StepKey{OpID: "escape", StepID: t.Name()}, Argv: []string{"sh", "-c", `head -c 4M /dev/zero | tr '\0' A`},
		Dir: e.ws, Env: e.vars(), Policy: e.policy(), Budget: sandbox.Budget{MaxOutstanding: 1}, Timeout: 20 * time.Second,
		MaxOutputBytes: bound,
	})
	if d != nil {
		t.Fatal(d)
	}
	r := collect(ex)
	got := len(r.stdout) + len(r.stderr)
	if jailed && (!r.settled.OutputLimited || got != escapeOutputBound) {
		t.Errorf("flood under the bound: %d bytes delivered (want exactly %d), settled %+v", got, escapeOutputBound, r.settled)
	}
	return got > escapeOutputBound
}

// Concurrency probe: 40 commands at once on a broker bounded to
// escapeLiveBound.
const (
	escapeLiveBound    = 4
	escapeLiveCommands = 40
)

// runConcurrentPastBound: 40 commands cleared at once on a broker bounded
// to 4 live commands must never have more than 4 helpers alive at once
// (counted by pidfds from the broker's spawn hook). The control clears
// them on a broker bounded to 64 and sees more than 4 alive at once.
// Both brokers start helpers as the suite's broker does.
func runConcurrentPastBound(t *testing.T, b *Broker, e *escapeEnv, jailed bool) bool {
	opts := b.opts
	opts.WarmHelpers = 0 // the default pool, whose helpers the bound counts too
	opts.MaxLiveCommands = escapeLiveBound
	if !jailed {
		opts.MaxLiveCommands = 64
	}
	bb := newTestBroker(t, opts)
	bb.test.launchAboveRSS = b.test.launchAboveRSS
	bb.Available()
	var c liveCounter
	c.watch(bb)
	defer c.close()
	// The commands hold their slots until the bound is reached, or,
	// in the control, passed.
	hold := escapeLiveBound
	if !jailed {
		hold = escapeLiveBound + 1
	}
	errs := concurrentHolds(bb, escapeLiveCommands, &c, hold)
	bb.Close()
	for _, err := range errs {
		t.Errorf("a command under the bound failed: %s", err)
	}
	t.Logf("bound %d: at most %d helpers alive at once", opts.MaxLiveCommands, c.max())
	return c.max() > escapeLiveBound
}
