package codemode

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentloom/loom/codemode/internal/transport"
	"github.com/agentloom/loom/codemode/internal/transport/transporttest"
	"github.com/agentloom/loom/codemode/internal/wire"
)

// Red-team probes of the serve loop against a program that keeps the
// host's ring read spinning (transport's redteam_ring_spin_test.go
// counts the spins themselves).

// dripByte publishes one byte of b to the host as the program's writer
// does, ringing when the host sleeps.
func dripByte(r *transporttest.Guest, b byte) {
	r.UpData()[r.Up%transport.RingBytes] = b
	r.Up++
	r.Publish(r.Up)
}

// TestRedteamRingDripNeitherHidesACancelNorHoldsTheEnd: a program
// publishes its bytes one at a time, a few microseconds apart, within
// the host's readSpin, so the serve loop's read keeps spinning on
// partial frames. A cancel dripped so is still served once whole (the
// control: one byte short, the call is still in flight); then, while
// the program drips a frame it never finishes, end() cancels the call
// in flight and returns, and Close ends serve: the drip holds neither.
func TestRedteamRingDripNeitherHidesACancelNorHoldsTheEnd(t *testing.T) {
	t.Parallel()
	route := func(ctx context.Context, cap string, _ map[string]any) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	g, host, ch, served := rtChannel(t, route)
	r := askRing(t, g)
	r.Send(call(1, "hang", nil))
	var cancel bytes.Buffer
	if err := wire.AppendFrame(&cancel, wire.Frame{ID: 1, Kind: wire.FrameCancel}); err != nil {
		t.Fatal(err)
	}
	for _, b := range cancel.Bytes()[:cancel.Len()-1] {
		dripByte(r, b)
		time.Sleep(5 * time.Microsecond)
	}
	time.Sleep(10 * time.Millisecond)
	if n := r.Load(transport.RingDownHead); n != 0 {
		t.Fatalf("control: the host answered (%d bytes) before the cancel was whole", n)
	}
	dripByte(r, cancel.Bytes()[cancel.Len()-1])
	f := r.ReadFrame()
	body, _ := f.Body.(map[string]any)
	if e, _ := body["err"].(map[string]any); f.ID != 1 || e["code"] != string(codeCallCancelled) {
		t.Fatalf("the answer to a dripped cancel is %+v, want call 1 %s", f, codeCallCancelled)
	}

	r.Send(call(2, "hang", nil))
	var stop atomic.Bool
	dripped := make(chan struct{})
	go func() { // a frame of a MiB, a byte at a time: never whole here
		defer close(dripped)
		dripByte(r, 0)
		dripByte(r, 0x10)
		for !stop.Load() {
			dripByte(r, 0)
			time.Sleep(5 * time.Microsecond)
		}
	}()
	defer func() { stop.Store(true); <-dripped }()
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-served:
		t.Fatalf("control: serve ended under the drip before the end: %v", err)
	default:
	}
	ended := make(chan struct{})
	go func() { ch.end(codeExecutionEnding, "over"); close(ended) }()
	select {
	case <-ended:
	case <-time.After(hangBound):
		t.Fatalf("end() did not return within %v while the program dripped", hangBound)
	}
	host.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("serve = %v after Close mid-frame, want nil", err)
		}
	case <-time.After(hangBound):
		t.Fatalf("serve went on %v after Close while the program dripped", hangBound)
	}
}
