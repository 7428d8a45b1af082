package codemode

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"

	"github.com/agentloom/loom/codemode/internal/transport"
	"github.com/agentloom/loom/codemode/internal/transport/transporttest"
	"github.com/agentloom/loom/codemode/internal/wire"
	"golang.org/x/sys/unix"
)

// askRing asks the host for a ring on g's channel and maps what it
// grants, failing the test when it grants none.
func askRing(t *testing.T, g *guest) *transporttest.Guest {
	t.Helper()
	g.send(t, wire.Frame{Kind: wire.FrameRing})
	conn := g.conn.(*net.UnixConn)
	f, memfd := transporttest.RecvRingAnswer(t, conn)
	if memfd < 0 {
		t.Fatal("the ring answer carried no memory file")
	}
	m, _ := f.Body.(map[string]any)
	if m["header_bytes"] != int64(transport.RingHeaderBytes) || m["ring_bytes"] != int64(transport.RingBytes) {
		unix.Close(memfd)
		t.Fatalf("ring answer body %v", f.Body)
	}
	return transporttest.MapGuest(t, conn, memfd)
}

// blobRoute answers "echo" with its arguments.
func blobRoute(_ context.Context, cap string, args map[string]any) (any, error) {
	if cap == "echo" {
		return args, nil
	}
	return nil, &CapError{Code: codeUnknownCapability, Message: "no " + cap}
}

// TestRingCarriesFramesLargerThanItself: calls and answers several times
// a ring's size pass through in parts, and many small ones after them
// wrap around the ring at every offset; each arrives whole, in order.
func TestRingCarriesFramesLargerThanItself(t *testing.T) {
	t.Parallel()
	g, finish := testChannel(t, blobRoute)
	r := askRing(t, g)
	blob := make([]byte, 3*transport.RingBytes+17)
	for i := range blob {
		blob[i] = byte(i * 7)
	}
	id := uint64(0)
	check := func(payload []byte) {
		t.Helper()
		id++
		r.Send(call(id, "echo", map[string]any{"blob": payload}))
		f := r.ReadFrame()
		ok, _ := f.Body.(map[string]any)["ok"].(map[string]any)
		if f.ID != id || !bytes.Equal(ok["blob"].([]byte), payload) {
			t.Fatalf("call %d came back as id %d holding %d bytes", id, f.ID, len(ok["blob"].([]byte)))
		}
	}
	for range 2 {
		check(blob)
	}
	for i := range 2000 {
		check(blob[:i%97])
	}
	r.Conn.CloseWrite()
	if err, rec := finish(); err != nil || rec.OK != int(id) {
		t.Fatalf("serve = %v, %d calls ok, want nil and %d", err, rec.OK, id)
	}
}

// TestRingWakesASleepingHost: a host with nothing to read marks itself
// asleep and sleeps on the socket; a call published then is served once
// the program rings, as the mark asks it to.
func TestRingWakesASleepingHost(t *testing.T) {
	t.Parallel()
	g, finish := testChannel(t, blobRoute)
	r := askRing(t, g)
	transporttest.WaitWord(t, r, transport.RingHostAsleep, func(v uint64) bool { return v == 1 })
	r.Send(call(1, "echo", map[string]any{"x": 1}))
	if f := r.ReadFrame(); f.ID != 1 || f.Kind != wire.FrameCapResult {
		t.Fatalf("answer %+v", f)
	}
	r.Conn.CloseWrite()
	if err, _ := finish(); err != nil {
		t.Fatalf("serve = %v", err)
	}
}

// TestRingFaults: a program that breaks the ring's rules ends its
// channel with a fault, whatever position or byte it forges.
func TestRingFaults(t *testing.T) {
	t.Parallel()
	cases := map[string]func(g *guest, r func() *transporttest.Guest){
		"head_behind_the_host": func(_ *guest, r func() *transporttest.Guest) {
			r().Publish(^uint64(0))
		},
		"head_past_a_ring": func(_ *guest, r func() *transporttest.Guest) {
			r().Publish(transport.RingBytes + 1)
		},
		"not_a_doorbell": func(_ *guest, r func() *transporttest.Guest) {
			rg := r()
			transporttest.WaitWord(rg.T, rg, transport.RingHostAsleep, func(v uint64) bool { return v == 1 })
			rg.Conn.Write([]byte{'x'})
		},
		"asked_twice": func(_ *guest, r func() *transporttest.Guest) {
			r().Send(wire.Frame{Kind: wire.FrameRing})
		},
		"ring_frame_with_a_body": func(g *guest, _ func() *transporttest.Guest) {
			g.send(t, wire.Frame{Kind: wire.FrameRing, Body: "please"})
		},
		"sent_more_before_the_answer": func(g *guest, _ func() *transporttest.Guest) {
			var b bytes.Buffer
			wire.AppendFrame(&b, wire.Frame{Kind: wire.FrameRing})
			wire.AppendFrame(&b, call(1, "echo", nil))
			g.conn.Write(b.Bytes())
		},
	}
	for name, misbehave := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g, finish := testChannel(t, blobRoute)
			misbehave(g, func() *transporttest.Guest { return askRing(t, g) })
			err, _ := finish()
			var cf *channelFault
			if !errors.As(err, &cf) {
				t.Fatalf("serve = %v, want a channelFault", err)
			}
		})
	}
}
