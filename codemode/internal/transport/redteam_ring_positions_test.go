package transport

import (
	"bytes"
	"sync/atomic"
	"testing"
)

// TestRedteamRingPositionsWrapAtTwoToTheSixtyFour: the host's positions
// are free-running uint64s; near 2^64 they wrap, and the program's may
// have wrapped already. Differences, not comparisons, must decide: a
// head 8 bytes past a host position 5 short of 2^64 is honest (and its
// bytes sit at the end and start of the ring), a full ring exactly a
// ring ahead is honest, one byte more or one behind is a fault; the
// same for the host's writing side. A host comparing positions directly
// (head < up) fails here.
func TestRedteamRingPositionsWrapAtTwoToTheSixtyFour(t *testing.T) {
	t.Parallel()
	r := mappedRing(t)
	up := r.upData()
	for i := range up {
		up[i] = byte(i * 13)
	}
	word := func(off int) uint64 { return atomic.LoadUint64(r.word(off)) }
	set := func(off int, v uint64) { atomic.StoreUint64(r.word(off), v) }

	// Taking: the host 5 bytes short of 2^64, the program 3 past it.
	r.up = ^uint64(0) - 4
	set(RingUpHead, 3)
	p := make([]byte, 16)
	if n, err := r.take(p); n != 8 || err != nil {
		t.Fatalf("take across 2^64: %d, %v; want 8, nil", n, err)
	}
	want := append(append([]byte{}, up[RingBytes-5:]...), up[:3]...)
	if !bytes.Equal(p[:8], want) || r.up != 3 || word(RingUpTail) != 3 {
		t.Fatalf("take across 2^64 read %v, host at %d, tail word %d; want %v at 3", p[:8], r.up, word(RingUpTail), want)
	}
	// Exactly a ring ahead, from a position that wraps on the way.
	r.up = ^uint64(0) - 100
	set(RingUpHead, r.up+RingBytes)
	big := make([]byte, RingBytes+64)
	if n, err := r.take(big); n != RingBytes || err != nil {
		t.Fatalf("take of a full ring across 2^64: %d, %v", n, err)
	}
	for _, head := range []uint64{r.up + RingBytes + 1, r.up - 1, r.up - RingBytes} {
		set(RingUpHead, head)
		before := r.up
		if n, err := r.take(p); n != 0 || !isFault(err) || r.up != before {
			t.Errorf("take with head %d (host at %d): %d, %v, host moved to %d", head, before, n, err, r.up)
		}
	}

	// Putting: the host 2 bytes short of 2^64, the program caught up.
	r.down = ^uint64(0) - 1
	set(RingDownTail, r.down)
	msg := []byte("abcdef")
	if n, err := r.put(msg); n != len(msg) || err != nil {
		t.Fatalf("put across 2^64: %d, %v", n, err)
	}
	down := r.downData()
	if got := append(append([]byte{}, down[RingBytes-2:]...), down[:4]...); !bytes.Equal(got, msg) || r.down != 4 || word(RingDownHead) != 4 {
		t.Fatalf("put across 2^64 wrote %q, host at %d, head word %d", got, r.down, word(RingDownHead))
	}
	// The program exactly a ring behind: full, nothing put, no fault.
	set(RingDownTail, r.down-RingBytes)
	if n, err := r.put(msg); n != 0 || err != nil {
		t.Fatalf("put into a full ring: %d, %v; want 0, nil", n, err)
	}
	for _, tail := range []uint64{r.down - RingBytes - 1, r.down + 1, r.down + 1<<63} {
		set(RingDownTail, tail)
		before := r.down
		if n, err := r.put(msg); n != 0 || !isFault(err) || r.down != before {
			t.Errorf("put with tail %d (host at %d): %d, %v, host moved to %d", tail, before, n, err, r.down)
		}
	}
}
