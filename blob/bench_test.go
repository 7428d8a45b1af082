package blob_test

import (
	"encoding/binary"
	"testing"

	"github.com/agentloom/loom/blob"
)

// unbounded is a budget no benchmark reaches, so it measures the
// bookkeeping of a bounded store without its refusals.
var unbounded = blob.Options{MaxBytes: 1 << 50, SessionBytes: 1 << 50}

// BenchmarkPut1MiB stores a new 1 MiB blob per iteration: hash, stage,
// fsync, chmod, rename, and the session's hold and the usage record.
func BenchmarkPut1MiB(b *testing.B) {
	s := openWith(b, unbounded)
	data := patterned(1 << 20)
	b.SetBytes(int64(len(data)))
	var i uint64
	for b.Loop() {
		i++
		binary.LittleEndian.PutUint64(data, i) // new content each time
		if _, err := s.Put(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPut1MiBExisting stores the same 1 MiB again: the hash and a
// stat, no write.
func BenchmarkPut1MiBExisting(b *testing.B) {
	s := openStore(b)
	data := patterned(1 << 20)
	if _, err := s.Put(data); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := s.Put(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSpool streams 8 MiB through a Spool in writes of the given
// size and commits the spilled blob.
func BenchmarkSpool(b *testing.B) {
	for _, bc := range []struct {
		name  string
		chunk int
	}{{"write=512B", 512}, {"write=32KiB", 32 << 10}} {
		b.Run(bc.name, func(b *testing.B) {
			const total = 8 << 20
			s := openWith(b, unbounded)
			chunk := patterned(bc.chunk)
			b.SetBytes(total)
			var i uint64
			for b.Loop() {
				i++
				sp := s.NewSpool()
				binary.LittleEndian.PutUint64(chunk, i)
				for written := 0; written < total; written += len(chunk) {
					if _, err := sp.Write(chunk); err != nil {
						b.Fatal(err)
					}
				}
				if _, _, err := sp.Finish(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBoundInline is the common case: output under the threshold.
func BenchmarkBoundInline(b *testing.B) {
	s := openStore(b)
	data := patterned(blob.OverflowThreshold)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, o, err := s.Bound(data); err != nil || o != nil {
			b.Fatal(o, err)
		}
	}
}

// BenchmarkPut4KiB stores a new 4 KiB blob per iteration: the fixed cost
// of a Put (stage, fsync, rename, and the store's bookkeeping) dominates.
func BenchmarkPut4KiB(b *testing.B) {
	s := openWith(b, unbounded)
	data := patterned(4 << 10)
	b.SetBytes(int64(len(data)))
	var i uint64
	for b.Loop() {
		i++
		binary.LittleEndian.PutUint64(data, i)
		if _, err := s.Put(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPut4KiBExisting stores the same 4 KiB again: the hash, the
// presence check and the recency touch.
func BenchmarkPut4KiBExisting(b *testing.B) {
	s := openStore(b)
	data := patterned(4 << 10)
	if _, err := s.Put(data); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := s.Put(data); err != nil {
			b.Fatal(err)
		}
	}
}
