package codemode

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/agentloom/loom/codemode/internal/transport"
	"github.com/agentloom/loom/codemode/internal/transport/transporttest"
	"github.com/agentloom/loom/codemode/internal/wire"
	"golang.org/x/sys/unix"
)

// Red-team probes of the shared ring that found the host holding: each
// could fail, and says how. Those of the transport alone, without a
// serve loop, are transport's (its redteam_ring_holds_test.go).

// TestRedteamRingEndIsBoundedWhileABigAnswerFillsTheRing: a program asks
// for a 15 MiB answer (fs.read-sized, a heavy call) and never reads its
// ring; the host's writer fills the ring and waits for room. end() must
// still finish within outcomeWriteTimeout (its deadline stops the
// writer holding wmu, then its own outcome write); Close alone must stop
// the writer too; and so must both when the program has closed its end
// (on the ring, the writer never learns that from a send).
// hangBound tells a hang from a slow, loaded machine: far longer than
// any wait the code under test means to make.
const hangBound = 30 * time.Second

func TestRedteamRingEndIsBoundedWhileABigAnswerFillsTheRing(t *testing.T) {
	t.Parallel()
	big := make([]byte, 15<<20)
	route := func(_ context.Context, cap string, _ map[string]any) (any, error) {
		return big, nil
	}
	for _, tc := range []struct {
		name        string
		byClose     bool
		programGone bool
	}{
		{"end", false, false},
		{"close", true, false},
		{"end_program_gone", false, true},
		{"close_program_gone", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, host, ch, served := rtChannel(t, route)
			r := askRing(t, g)
			r.Send(call(1, "fs.read", map[string]any{"path": "big"}))
			transporttest.WaitWord(t, r, transport.RingDownHead, func(v uint64) bool { return v == transport.RingBytes })
			if tc.programGone {
				r.Conn.Close()
			}
			start := time.Now()
			if tc.byClose {
				host.Close()
				waited := make(chan struct{})
				go func() { ch.calls.Wait(); close(waited) }()
				select {
				case <-waited:
				case <-time.After(hangBound):
					t.Fatalf("the writer of a big answer was still waiting for room %v after Close", hangBound)
				}
			} else {
				ch.end(codeExecutionEnding, "over")
			}
			// The outcome's write gives up after outcomeWriteTimeout; the
			// bound here only tells a writer waiting for room it will never
			// get from a slow machine.
			if el := time.Since(start); el > hangBound {
				t.Fatalf("ending took %v with a full ring: it waited for room (the outcome's write gives up after %v)", el, outcomeWriteTimeout)
			}
			host.Close()
			select {
			case <-served:
			case <-time.After(5 * time.Second):
				t.Fatal("serve did not return after Close")
			}
		})
	}
}

// TestRedteamRingLeavesNoMappingOrDescriptor: a channel fault (a forged
// ring position the serve loop meets) leaves no mapping of the ring's
// memory file and no descriptor of it in the host, as every other way a
// ring can end does (transport's test of the same name). Not parallel:
// it counts the whole process's. The program's end closes what it
// receives.
func TestRedteamRingLeavesNoMappingOrDescriptor(t *testing.T) {
	baseMaps, baseFDs := transporttest.RingResources(t)
	cases := map[string]func(t *testing.T){
		"channel_fault": func(t *testing.T) {
			g, finish := testChannel(t, blobRoute)
			g.send(t, wire.Frame{Kind: wire.FrameRing})
			memfd := transporttest.RingAnswerFD(t, g.conn.(*net.UnixConn))
			mem, err := unix.Mmap(memfd, 0, transport.RingHeaderBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			unix.Close(memfd)
			if err != nil {
				t.Fatal(err)
			}
			atomic.StoreUint64((*uint64)(unsafe.Pointer(&mem[transport.RingUpHead])), ^uint64(0))
			unix.Munmap(mem)
			g.conn.Write([]byte{transport.RingDoorbell})
			var cf *channelFault
			if err, _ := finish(); !errors.As(err, &cf) {
				t.Fatalf("serve = %v, want a channelFault", err)
			}
		},
	}
	for name, run := range cases {
		t.Run(name, run)
		if m, f := transporttest.RingResources(t); m != baseMaps || f != baseFDs {
			t.Errorf("after %s: %d mappings and %d descriptors of the ring's file, want %d and %d", name, m, f, baseMaps, baseFDs)
		}
	}
}

// TestRedteamRingDecodesACopyNotTheRing: the program publishes a call
// holding a blob, waits until the host's read position says it took the
// bytes, and at once overwrites them in the ring. The host echoes the
// blob after routing it; an answer holding the overwritten bytes would
// mean the decoder's values still point into shared memory (a zero-copy
// bin, or take handing out the ring itself).
func TestRedteamRingDecodesACopyNotTheRing(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	g, finish := testChannel(t, func(ctx context.Context, cap string, args map[string]any) (any, error) {
		<-release // answered only once the ring was overwritten
		return args, nil
	})
	r := askRing(t, g)
	for i, size := range []int{100, 40 << 10, 200 << 10} {
		blob := bytes.Repeat([]byte{0x5a}, size)
		start := r.Up
		r.Send(call(uint64(i+1), "echo", map[string]any{"blob": blob}))
		transporttest.WaitWord(t, r, transport.RingUpTail, func(v uint64) bool { return v == r.Up })
		for pos := start; pos < r.Up; pos++ {
			r.UpData()[pos%transport.RingBytes] = 0xa5
		}
		release <- struct{}{}
		f := r.ReadFrame()
		ok, _ := f.Body.(map[string]any)["ok"].(map[string]any)
		got, _ := ok["blob"].([]byte)
		if f.ID != uint64(i+1) || !bytes.Equal(got, blob) {
			t.Fatalf("call %d of %d bytes came back as id %d, %d bytes, equal %v", i+1, size, f.ID, len(got), bytes.Equal(got, blob))
		}
	}
	r.Conn.CloseWrite()
	if err, _ := finish(); err != nil {
		t.Fatalf("serve = %v", err)
	}
}

// TestRedteamRingSurvivesBytesFlippedWhileItCopies: a second goroutine
// of the program flips every byte of its ring, over and over, while the
// program publishes calls; the host copies torn frames. It must neither
// panic nor hang: serve returns (nil or a channelFault) once the program
// closes its end.
func TestRedteamRingSurvivesBytesFlippedWhileItCopies(t *testing.T) {
	t.Parallel()
	g, finish := testChannel(t, blobRoute)
	r := askRing(t, g)
	var stop atomic.Bool
	flipped := make(chan struct{})
	go func() {
		defer close(flipped)
		data := r.UpData()
		for !stop.Load() {
			for i := 0; i < len(data); i += 61 {
				data[i] ^= 0xff
			}
		}
	}()
	var frame bytes.Buffer
	wire.AppendFrame(&frame, call(1, "echo", map[string]any{"s": "hello", "n": 7, "b": []byte("xyz")}))
	until := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(until) {
		if r.Up-r.Load(transport.RingUpTail) > transport.RingBytes-uint64(frame.Len()) {
			if r.Load(transport.RingUpTail) > r.Up { // the host faulted? it never moves past us
				break
			}
			time.Sleep(100 * time.Microsecond)
			continue
		}
		for j, b := range frame.Bytes() {
			r.UpData()[(r.Up+uint64(j))%transport.RingBytes] = b
		}
		r.Up += uint64(frame.Len())
		r.Publish(r.Up)
	}
	stop.Store(true)
	<-flipped
	r.Conn.CloseWrite()
	err, _ := finish()
	var cf *channelFault
	if err != nil && !errors.As(err, &cf) {
		t.Fatalf("serve = %v, want nil or a channelFault", err)
	}
	t.Logf("serve = %v", err)
}
