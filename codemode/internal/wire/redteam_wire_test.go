package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"
)

// nestedClaims is a frame of exactly MaxFrameBytes whose body opens
// levels containers one inside the other, each (map32 or array32)
// claiming as many entries as the bytes left in the frame could hold,
// then breaks off: a frame the decoder must refuse having allocated
// about what the frame holds, not what its headers claim at every level.
func nestedClaims(t *testing.T, levels int, asMaps bool) []byte {
	t.Helper()
	head := mp(t, raw{0x84}, "v", 1, "id", 1, "kind", "cap_call", "body")
	b := append([]byte{}, head...)
	for range levels {
		left := MaxFrameBytes - len(b) - 5
		if asMaps {
			b = append(b, 0xdf)
			b = binary.BigEndian.AppendUint32(b, uint32(left/2-8))
			b = append(b, 0xa1, 'k')
		} else {
			b = append(b, 0xdd)
			b = binary.BigEndian.AppendUint32(b, uint32(left-8))
		}
	}
	b = append(b, 0xc1) // a msgpack code outside the channel's subset
	b = append(b, make([]byte, MaxFrameBytes-len(b))...)
	return framed(b)
}

// TestRedteamNestedLengthClaimsAllocateWhatTheFrameHolds: the decoder
// preallocated every array and map at the length its header claimed
// (bounded only by the bytes left in the frame), so one 16 MiB frame
// nesting MaxFrameDepth map32 headers made the host allocate (and, for
// maps, touch) about 270 MiB per level, some 8 GiB in all, before the
// frame was refused. Three levels are enough to show it. Not parallel:
// it reads the process's allocation count.
func TestRedteamNestedLengthClaimsAllocateWhatTheFrameHolds(t *testing.T) {
	const levels = 3
	allocated := func(in []byte) uint64 {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ReadFrame(bytes.NewReader(in))
		runtime.ReadMemStats(&after)
		var fe *FrameError
		if !errors.As(err, &fe) {
			t.Fatalf("%v, want a FrameError", err)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	// The control: the same frame with no nested claim costs what reading
	// 16 MiB costs; the claims may add at most one frame's worth.
	base := allocated(nestedClaims(t, 0, false))
	for _, asMaps := range []bool{false, true} {
		if grew := allocated(nestedClaims(t, levels, asMaps)); grew > base+MaxFrameBytes {
			t.Errorf("maps %v: %d nested claims allocated %d MiB for a %d MiB frame (reading it alone: %d MiB)", asMaps, levels, grew>>20, MaxFrameBytes>>20, base>>20)
		}
	}
}
