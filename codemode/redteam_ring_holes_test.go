package codemode

import (
	"context"
	"errors"
	"testing"

	"github.com/agentloom/loom/codemode/internal/transport"
	"github.com/agentloom/loom/codemode/internal/transport/transporttest"
	"github.com/agentloom/loom/codemode/internal/wire"
)

// TestRedteamRingForgedReadPositionEndsTheChannel: a program that
// publishes a read position for the host's ring ahead of what the host
// wrote, or more than a ring behind it, ends its channel with a fault,
// as a forged write position does (TestRingFaults' head_* cases). put
// refuses it and copies nothing; before, the refusal went back to
// channel.writeOut, which drops write errors, so the answer was lost and
// serve went on routing the program's calls. Now the fault sticks to the
// connection (transport.Conn.fault) and the serve loop's next read returns it.
// The control shows the same sequence with an honest position answers
// the call.
func TestRedteamRingForgedReadPositionEndsTheChannel(t *testing.T) {
	t.Parallel()
	for name, tail := range map[string]uint64{
		"ahead_of_the_host":      1,
		"a_ring_behind_the_host": ^uint64(0) - transport.RingBytes, // host at 0: used = RingBytes+1
		"control_honest":         0,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g, finish := testChannel(t, func(ctx context.Context, cap string, args map[string]any) (any, error) {
				return "answer", nil // kv.get: the serve loop answers it itself
			})
			r := askRing(t, g)
			r.Store(transport.RingDownTail, tail)
			r.Send(call(1, "kv.get", map[string]any{"key": "k"}))
			if tail == 0 {
				if f := r.ReadFrame(); f.ID != 1 || f.Kind != wire.FrameCapResult {
					t.Fatalf("answer %+v", f)
				}
				r.Conn.CloseWrite()
				if err, _ := finish(); err != nil {
					t.Fatalf("serve = %v, want nil", err)
				}
				return
			}
			// The host took the call; its serve loop answers it before it
			// reads again. The program then closes its end, so serve
			// returns either way.
			transporttest.WaitWord(t, r, transport.RingUpTail, func(v uint64) bool { return v == r.Up })
			r.Conn.CloseWrite()
			err, rec := finish()
			var cf *channelFault
			if !errors.As(err, &cf) {
				t.Fatalf("serve = %v after the program forged its read position to %d (host at %d) and called %d time(s): want a channelFault",
					err, tail, r.Load(transport.RingDownHead), rec.OK)
			}
		})
	}
}
