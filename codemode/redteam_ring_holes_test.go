package codemode

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestRedteamRingWriterStopsWhileTheProgramTricklesRoom: hostConn.Write
// promises to fail at its deadline and once Close is called. On the
// ring, writeRing looks at both only in waitRoom, which it reaches only
// when put finds the ring full. A program that keeps its read position
// exactly one byte short of a full ring (and its "asleep" word set)
// makes every put move one byte and ring one doorbell (a sendmsg), so
// the writer does not look while the program keeps up: only the
// program's first lag after the bound stops it. Measured here (under
// -race, both ends in one process) the overrun is ~10 ms, so the
// property holds in practice; the test fails if a program can keep the
// writer going well past its bound. The control shows the same write
// stops at the bound when the program does not trickle.
//
// Recommended hardening anyway: check c.shut and the deadline on every
// iteration of writeRing's loop (two atomic loads), so the bound does
// not depend on the program lagging; and ring the doorbell once per
// writeRing (after its last put, or before a wait) rather than after
// every put, so a byte-at-a-time reader cannot buy a host system call
// per byte.
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
// wrote, or more than a ring behind it, breaks the ring's protocol just
// as a forged write position does (TestRingFaults' head_* cases, which
// end the execution with a fault). SECURITY.md says such a position is
// refused "(a channel fault, nothing copied)". put does refuse it and
// copies nothing, but writeRing's fault is returned to channel.writeOut,
// which drops every write error: the answer is silently lost and serve
// goes on taking (and routing, with their effects) the program's calls
// for as long as it likes. The control shows the same sequence with an
// honest position answers the call.
//
// Fix: make a ring fault sticky on the hostConn (say c.fault, set by
// writeRing when put returns a FrameError, which also shuts the socket
// down to wake a sleeping reader), and have Read return it, so serve
// ends with the ChannelFault; or have writeOut hand a *FrameError to a
// channel fault hook that cancels serve the same way.
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
			// The host took the call and tried to answer it (its serve
			// loop writes before it sleeps again).
			rtWaitWord(t, r, ringUpTail, func(v uint64) bool { return v == r.up })
			rtWaitWord(t, r, ringHostAsleep, func(v uint64) bool { return v == 1 })
			// Had the host faulted the channel, serve has returned by now;
			// the program then closes its end, so serve returns either way.
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
