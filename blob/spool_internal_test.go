package blob

import (
	"bytes"
	"path/filepath"
	"testing"

	"pgregory.net/rapid"
)

// retainedBound is the most memory a Spool may hold however much is
// written: the pre-spill buffer, or after the spill the two excerpt
// windows (the tail one double-buffered) and the Writer's buffer.
const retainedBound = OverflowThreshold + 3*excerptWindow + writeBufferBytes

// TestSpoolMemoryBounded streams 50 MiB through a Spool in chunks of
// several sizes and checks after every write that the buffers it retains
// stay within retainedBound.
func TestSpoolMemoryBounded(t *testing.T) {
	const total = 50 << 20
	s, err := Open(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	sp := s.NewSpool()
	defer sp.Abort()
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i*7 + i>>9)
	}
	peak, written := 0, 0
	// Fill the pre-spill buffer to the threshold exactly, then spill.
	for written < OverflowThreshold {
		n := min(1000, OverflowThreshold-written)
		if _, err := sp.Write(chunk[:n]); err != nil {
			t.Fatal(err)
		}
		written += n
		peak = max(peak, sp.retainedBytes())
	}
	sizes := []int{1, 3, 100, 4093, 65536, 65537, 1 << 20}
	for i := 0; written < total; i++ {
		n := min(sizes[i%len(sizes)], total-written)
		if _, err := sp.Write(chunk[:n]); err != nil {
			t.Fatal(err)
		}
		written += n
		peak = max(peak, sp.retainedBytes())
	}
	t.Logf("peak retained %d bytes over %d MiB written (bound %d)", peak, written>>20, retainedBound)
	if peak > retainedBound {
		t.Fatalf("Spool retained %d bytes after %d written; bound %d", peak, written, retainedBound)
	}
	if peak < OverflowThreshold {
		t.Fatalf("peak %d below the threshold: the measurement is not seeing the buffer", peak)
	}
	_, o, err := sp.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if o.Size != total {
		t.Fatalf("Size = %d, want %d", o.Size, total)
	}
	if r := sp.retainedBytes(); r != 0 {
		t.Fatalf("a finished Spool retains %d bytes", r)
	}
}

// TestTailRing checks the ring against the obvious model: the last n
// bytes of everything written.
func TestTailRing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 64).Draw(t, "n")
		ring := newTailRing(n)
		var all []byte
		for _, p := range rapid.SliceOf(rapid.SliceOfN(rapid.Byte(), 0, 3*n)).Draw(t, "writes") {
			ring.write(p)
			all = append(all, p...)
			want := all[max(len(all)-n, 0):]
			if got := ring.bytes(); !bytes.Equal(got, want) {
				t.Fatalf("ring holds %x, want %x", got, want)
			}
			if cap(ring.b) != 2*n {
				t.Fatalf("ring grew to %d, want %d", cap(ring.b), 2*n)
			}
		}
	})
}
