package transport_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentloom/loom/codemode/internal/transport"
	"github.com/agentloom/loom/codemode/internal/transport/transporttest"
)

// TestRedteamRingWriterStopsWhileTheProgramTricklesRoom: Conn.Write
// fails at its deadline and once Close is called, even on a ring whose
// program keeps its read position exactly one byte short of full (and
// its "asleep" word set), so every put moves one byte: writeRing looks
// at both bounds between parts, not only when the ring is full (before,
// only the program's first lag after the bound stopped it, ~10 ms
// late). The control shows the same write stops at the bound when the
// program does not trickle.
func TestRedteamRingWriterStopsWhileTheProgramTricklesRoom(t *testing.T) {
	for _, tc := range []struct {
		name     string
		trickle  bool
		deadline bool // else Close
	}{
		{"deadline", true, true},
		{"close", true, false},
		{"control_no_trickle", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host, rg := transporttest.Grant(t)
			var stop atomic.Bool
			done := make(chan struct{})
			go func() {
				defer close(done)
				for tc.trickle && !stop.Load() {
					if h := atomic.LoadUint64(rg.Word(transport.RingDownHead)); h >= transport.RingBytes {
						atomic.StoreUint64(rg.Word(transport.RingDownTail), h-transport.RingBytes+1)
					}
					atomic.StoreUint64(rg.Word(transport.RingProgAsleep), 1)
				}
			}()
			defer func() { stop.Store(true); <-done }()
			const bound = 20 * time.Millisecond
			if tc.deadline {
				host.SetWriteDeadline(time.Now().Add(bound))
			} else {
				time.AfterFunc(bound, func() { host.Close() })
			}
			type result struct {
				n   int
				err error
			}
			res := make(chan result, 1)
			start := time.Now()
			go func() {
				n, err := host.Write(make([]byte, 4<<20))
				res <- result{n, err}
			}()
			select {
			case r := <-res:
				if r.err == nil {
					t.Fatalf("a 4 MiB write to a program reading a byte at a time finished (%d bytes) in %v", r.n, time.Since(start))
				}
				t.Logf("the write stopped after %v, %d bytes: %v", time.Since(start), r.n, r.err)
			case <-time.After(1500 * time.Millisecond):
				n := atomic.LoadUint64(rg.Word(transport.RingDownHead))
				t.Fatalf("the write is still going %v after its %v bound (%d bytes written, %d of them a byte at a time)", time.Since(start), bound, n, n-transport.RingBytes)
			}
		})
	}
}
