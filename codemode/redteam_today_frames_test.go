package codemode

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/agentloom/loom/codemode/internal/wire"
)

// denseArgs is a call's arguments holding as many values as one frame
// may (MaxFrameValues, less the envelope's and the call's own), each a
// one-entry map: a few bytes on the wire apiece, well over a hundred
// decoded.
func denseArgs() map[string]any {
	const perElem = 3 // the map, its key, its nil
	elems := make([]any, (wire.MaxFrameValues-16)/perElem)
	for i := range elems {
		elems[i] = map[string]any{"k": nil}
	}
	return map[string]any{"x": elems}
}

// decodedBytes is what ReadFrame allocates decoding in.
func decodedBytes(t *testing.T, in []byte) uint64 {
	t.Helper()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := wire.ReadFrame(bytes.NewReader(in))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	return after.TotalAlloc - before.TotalAlloc
}

// TestRedteamTodayInFlightBoundCountsDecodedArguments: maxInFlightBytes
// promised to bound what unanswered calls' arguments hold in the host's
// memory, but it counted their frames' bytes, and a frame of small values
// decodes into some hundred times its size (a 340 KiB frame of one-entry
// maps into about 36 MiB). A program that keeps such calls unanswered
// (each waiting on a maxHeavyCalls slot, or on a slow capability) held
// 256 of them, some 9 GiB of the host's memory, inside a 64 MiB bound.
// Four are enough to pass it. Not parallel: it reads the process's
// allocation count.
func TestRedteamTodayInFlightBoundCountsDecodedArguments(t *testing.T) {
	release := make(chan struct{})
	var admitted atomic.Int64
	route := func(ctx context.Context, cap string, args map[string]any) (any, error) {
		if cap == "block" {
			admitted.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return map[string]any{}, nil
	}
	args := denseArgs()
	var one bytes.Buffer
	if err := wire.AppendFrame(&one, call(1, "block", args)); err != nil {
		t.Fatal(err)
	}
	cost := decodedBytes(t, one.Bytes())
	if cost < 16*uint64(one.Len()) {
		t.Fatalf("control: the frame of %d bytes decodes in %d, not the amplification this test is about", one.Len(), cost)
	}
	g, finish := testChannel(t, route)
	const calls = 4
	for i := range uint64(calls) {
		g.send(t, call(i+1, "block", args))
	}
	g.send(t, call(calls+1, "ping", nil))
	refused := 0
	for {
		f, err := wire.ReadFrame(g.conn)
		if err != nil {
			t.Fatal(err)
		}
		if f.ID == calls+1 {
			break
		}
		if e, _ := f.Body.(map[string]any)["err"].(map[string]any); e["code"] == string(codeTooManyCalls) {
			refused++
		}
	}
	held := uint64(calls-refused) * cost
	close(release)
	g.conn.Close()
	finish()
	if held > maxInFlightBytes {
		t.Errorf("%d calls of %d frame bytes each were admitted at once, holding about %d MiB of decoded arguments, past maxInFlightBytes (%d MiB)", calls-refused, one.Len(), held>>20, maxInFlightBytes>>20)
	}
	if refused == calls {
		t.Errorf("every call was refused: the bound must still admit one")
	}
}

// TestRedteamTodayDecodedValueCostBound: no value form the channel admits
// decodes in more than wire.DecodedValueBytes each, the cost the in-flight
// bound charges per value. Not parallel: it reads the process's
// allocation count.
func TestRedteamTodayDecodedValueCostBound(t *testing.T) {
	for _, tc := range []struct {
		name  string
		elem  any
		count int // values per element
	}{
		{"one-entry map", map[string]any{"k": nil}, 3},
		{"one-entry map of map", map[string]any{"k": map[string]any{}}, 3},
		{"empty map", map[string]any{}, 1},
		{"empty array", []any{}, 1},
		{"array of nil", []any{nil}, 2},
		{"empty bin", []byte{}, 1},
		{"short string", "zq", 1},
		{"nil", nil, 1},
	} {
		elems := make([]any, (wire.MaxFrameValues-16)/tc.count)
		for i := range elems {
			elems[i] = tc.elem
		}
		var in bytes.Buffer
		if err := wire.AppendFrame(&in, call(1, "x", map[string]any{"x": elems})); err != nil {
			t.Fatal(err)
		}
		values := len(elems)*tc.count + 8
		got := decodedBytes(t, in.Bytes())
		t.Logf("%s: %.1f a value", tc.name, float64(got-uint64(in.Len()))/float64(values))
		if got > uint64(in.Len())+uint64(values)*wire.DecodedValueBytes {
			t.Errorf("%s: %d values in %d bytes decoded in %d, past %d a value", tc.name, values, in.Len(), got, wire.DecodedValueBytes)
		}
	}
}

// TestRedteamTodayLargestCallFitsAlone: a call at both frame bounds is
// charged less than maxInFlightBytes, so the in-flight bound refuses it
// only while other calls are unanswered, never forever.
func TestRedteamTodayLargestCallFitsAlone(t *testing.T) {
	t.Parallel()
	if worst := int64(4+wire.MaxFrameBytes) + int64(wire.MaxFrameValues)*wire.DecodedValueBytes; worst > maxInFlightBytes {
		t.Fatalf("a call of MaxFrameBytes holding MaxFrameValues values is charged %d bytes, past maxInFlightBytes (%d): it could never be served", worst, maxInFlightBytes)
	}
}

// TestRedteamTodayProgramClosingMidFrameEndsServe: a program that closes
// its end part way through a frame (in its length, in a small frame, in
// a large one the host reads as it arrives) ends the serve loop at once
// with a channelFault: the host never waits on the rest.
func TestRedteamTodayProgramClosingMidFrameEndsServe(t *testing.T) {
	t.Parallel()
	for name, part := range map[string][]byte{
		"in the length": {0, 0},
		"small frame":   {0, 0, 0, 40, 0x84, 0xa1, 'v', 1},
		"large frame":   append([]byte{0, 0x10, 0, 0, 0x84}, make([]byte, 1<<10)...),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g, finish := testChannel(t, echoRoute)
			if _, err := g.conn.Write(part); err != nil {
				t.Fatal(err)
			}
			g.conn.Close()
			err, _ := finish()
			var cf *channelFault
			if !errors.As(err, &cf) {
				t.Fatalf("serve = %v, want a channelFault for a frame cut short", err)
			}
		})
	}
}
