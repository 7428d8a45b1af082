package codemode

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestRedteamRingWriterStopsWhileTheProgramTricklesRoom: hostConn.Write
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
			host, rg := rtGrant(t)
			var stop atomic.Bool
			done := make(chan struct{})
			go func() {
				defer close(done)
				for tc.trickle && !stop.Load() {
					if h := atomic.LoadUint64(rg.word(ringDownHead)); h >= ringBytes {
						atomic.StoreUint64(rg.word(ringDownTail), h-ringBytes+1)
					}
					atomic.StoreUint64(rg.word(ringProgAsleep), 1)
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
				n := atomic.LoadUint64(rg.word(ringDownHead))
				t.Fatalf("the write is still going %v after its %v bound (%d bytes written, %d of them a byte at a time)", time.Since(start), bound, n, n-ringBytes)
			}
		})
	}
}

// TestRedteamRingForgedReadPositionEndsTheChannel: a program that
// publishes a read position for the host's ring ahead of what the host
// wrote, or more than a ring behind it, ends its channel with a fault,
// as a forged write position does (TestRingFaults' head_* cases). put
// refuses it and copies nothing; before, the refusal went back to
// channel.writeOut, which drops write errors, so the answer was lost and
// serve went on routing the program's calls. Now the fault sticks to the
// connection (hostConn.fault) and the serve loop's next read returns it.
// The control shows the same sequence with an honest position answers
// the call.
func TestRedteamRingForgedReadPositionEndsTheChannel(t *testing.T) {
	t.Parallel()
	for name, tail := range map[string]uint64{
		"ahead_of_the_host":      1,
		"a_ring_behind_the_host": ^uint64(0) - ringBytes, // host at 0: used = ringBytes+1
		"control_honest":         0,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g, finish := testChannel(t, func(ctx context.Context, cap string, args map[string]any) (any, error) {
				return "answer", nil // kv.get: the serve loop answers it itself
			})
			r := askRing(t, g)
			atomicStore(r, ringDownTail, tail)
			r.send(call(1, "kv.get", map[string]any{"key": "k"}))
			if tail == 0 {
				if f := r.read(); f.ID != 1 || f.Kind != FrameCapResult {
					t.Fatalf("answer %+v", f)
				}
				r.conn.CloseWrite()
				if err, _ := finish(); err != nil {
					t.Fatalf("serve = %v, want nil", err)
				}
				return
			}
			// The host took the call; its serve loop answers it before it
			// reads again. The program then closes its end, so serve
			// returns either way.
			rtWaitWord(t, r, ringUpTail, func(v uint64) bool { return v == r.up })
			r.conn.CloseWrite()
			err, rec := finish()
			var cf *ChannelFault
			if !errors.As(err, &cf) {
				t.Fatalf("serve = %v after the program forged its read position to %d (host at %d) and called %d time(s): want a ChannelFault",
					err, tail, atomicLoad(r, ringDownHead), rec.OK)
			}
		})
	}
}

func atomicStore(r *ringGuest, off int, v uint64) { atomic.StoreUint64(r.word(off), v) }
func atomicLoad(r *ringGuest, off int) uint64     { return atomic.LoadUint64(r.word(off)) }
