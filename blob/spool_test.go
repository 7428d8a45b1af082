package blob_test

import (
	"bytes"
	"os"
	"slices"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/agentloom/loom/blob"
	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// fataler is what both *testing.T and *rapid.T offer.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// spoolAll writes data to a fresh Spool of s in the given chunks.
func spoolAll(t fataler, s *blob.Store, chunks [][]byte) (string, *blob.Overflow) {
	t.Helper()
	sp := s.NewSpool()
	defer sp.Abort()
	for _, c := range chunks {
		if n, err := sp.Write(c); err != nil || n != len(c) {
			t.Fatalf("Spool.Write = %d, %v", n, err)
		}
	}
	inline, o, err := sp.Finish()
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	return inline, o
}

func TestSpoolAtThreshold(t *testing.T) {
	for _, size := range []int{0, 1, blob.OverflowThreshold - 1, blob.OverflowThreshold, blob.OverflowThreshold + 1, 5 * blob.OverflowThreshold} {
		data := patterned(size)
		for _, chunk := range []int{1, 7, 4096, blob.OverflowThreshold, blob.OverflowThreshold + 1} {
			if chunk == 1 && size > 2*blob.OverflowThreshold {
				continue // covered by larger chunks; keeps the test quick
			}
			s := openStore(t)
			wantInline, wantO, err := s.Bound(data)
			if err != nil {
				t.Fatal(err)
			}
			inline, o := spoolAll(t, s, slices.Collect(slices.Chunk(data, chunk)))
			if inline != wantInline {
				t.Fatalf("size %d chunk %d: inline differs from Bound", size, chunk)
			}
			if diff := cmp.Diff(wantO, o); diff != "" {
				t.Fatalf("size %d chunk %d: Overflow (-Bound +Spool):\n%s", size, chunk, diff)
			}
			if (o != nil) != (size > blob.OverflowThreshold) {
				t.Fatalf("size %d: spilled=%v", size, o != nil)
			}
			if left := staged(t, s.Root()); len(left) != 0 {
				t.Fatalf("staged files left: %v", left)
			}
		}
	}
}

// TestSpoolChunkingProperty: however a stream is cut into writes, the
// Spool decides exactly what Bound decides for the whole of it.
func TestSpoolChunkingProperty(t *testing.T) {
	s := openStore(t)
	rapid.Check(t, func(t *rapid.T) {
		data := streamGen().Draw(t, "data")
		cuts := rapid.SliceOfN(rapid.IntRange(0, len(data)), 0, 24).Draw(t, "cuts")
		slices.Sort(cuts)
		var chunks [][]byte
		prev := 0
		for _, c := range append(cuts, len(data)) {
			chunks = append(chunks, data[prev:c]) // empty chunks included
			prev = c
		}
		wantInline, wantO, err := s.Bound(data)
		if err != nil {
			t.Fatal(err)
		}
		inline, o := spoolAll(t, s, chunks)
		if inline != wantInline {
			t.Fatalf("inline differs from Bound")
		}
		if diff := cmp.Diff(wantO, o); diff != "" {
			t.Fatalf("Overflow (-Bound +Spool):\n%s", diff)
		}
	})
}

// streamGen draws output around the interesting lengths (small, at the
// threshold, well past it) made of a repeated unit of arbitrary bytes or
// runes, with the bytes near both excerpt cuts drawn freely so multi-byte
// and malformed sequences straddle them.
func streamGen() *rapid.Generator[[]byte] {
	return rapid.Custom(func(t *rapid.T) []byte {
		n := rapid.OneOf(
			rapid.IntRange(0, 3*blob.ExcerptBytes),
			rapid.IntRange(blob.OverflowThreshold-8, blob.OverflowThreshold+8),
			rapid.IntRange(blob.OverflowThreshold, 4*blob.OverflowThreshold),
		).Draw(t, "len")
		unit := rapid.OneOf(
			rapid.SliceOfN(rapid.Byte(), 1, 16),
			rapid.Map(rapid.StringOfN(rapid.Rune(), 1, 8, -1), func(s string) []byte { return []byte(s) }),
		).Draw(t, "unit")
		data := make([]byte, n)
		for i := range data {
			data[i] = unit[i%len(unit)]
		}
		edge := []byte(rapid.StringOfN(rapid.Rune(), 0, 6, -1).Draw(t, "edge"))
		edge = append(edge, rapid.SliceOfN(rapid.Byte(), 0, 4).Draw(t, "raw")...)
		for _, at := range []int{blob.ExcerptBytes - 3, n - blob.ExcerptBytes - 3} {
			if at >= 0 && at+len(edge) <= n {
				copy(data[at:], edge)
			}
		}
		return data
	})
}

func TestSpoolClosed(t *testing.T) {
	s := openStore(t)
	sp := s.NewSpool()
	sp.Write([]byte("x"))
	if _, _, err := sp.Finish(); err != nil {
		t.Fatal(err)
	}
	_, err := sp.Write([]byte("y"))
	wantCode(t, err, blob.CodeClosed)
	_, _, err = sp.Finish()
	wantCode(t, err, blob.CodeClosed)
	if err := sp.Abort(); err != nil {
		t.Fatalf("Abort after Finish: %v", err)
	}
}

func TestSpoolAbortRemovesStaged(t *testing.T) {
	s := openStore(t)
	sp := s.NewSpool()
	data := patterned(2 * blob.OverflowThreshold)
	sp.Write(data)
	if len(staged(t, s.Root())) != 1 {
		t.Fatalf("a spilled Spool should have staged its blob")
	}
	if err := sp.Abort(); err != nil {
		t.Fatal(err)
	}
	if n := len(files(t, s.Root())); n != 0 {
		t.Fatalf("Abort left %d files", n)
	}
	if _, err := s.Read(blob.Sum(data)); blob.CodeOf(err) != blob.CodeNotFound {
		t.Fatalf("aborted spool readable: %v", err)
	}
}

// TestSpoolSpillFailureIsAnError: output that cannot be stored is refused,
// never clipped to its excerpts.
func TestSpoolSpillFailureIsAnError(t *testing.T) {
	s := openStore(t)
	sp := s.NewSpool()
	if _, err := sp.Write(patterned(blob.OverflowThreshold)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(s.Root()); err != nil {
		t.Fatal(err)
	}
	_, err := sp.Write([]byte("one byte too many"))
	wantCode(t, err, blob.CodeIO)
	_, err = sp.Write([]byte("more"))
	wantCode(t, err, blob.CodeIO)
	inline, o, err := sp.Finish()
	wantCode(t, err, blob.CodeIO)
	if inline != "" || o != nil {
		t.Fatalf("failed Finish returned output")
	}
}

func TestSpoolConcurrentWriters(t *testing.T) {
	s := openStore(t)
	sp := s.NewSpool()
	defer sp.Abort()
	const writers, lines = 8, 2000
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			line := bytes.Repeat([]byte{byte('a' + i)}, 63)
			line = append(line, '\n')
			for range lines {
				sp.Write(line)
			}
		})
	}
	wg.Wait()
	_, o, err := sp.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if o.Size != writers*lines*64 {
		t.Fatalf("Size = %d, want %d", o.Size, writers*lines*64)
	}
	got, err := s.Read(o.Ref)
	if err != nil {
		t.Fatal(err)
	}
	// Every write landed whole: each 64-byte line is one letter repeated.
	for line := range bytes.Lines(got) {
		if len(line) != 64 || bytes.Count(line, line[:1]) != 63 {
			t.Fatalf("torn line %q", line)
		}
	}
	if !utf8.Valid(got) {
		t.Fatal("content not valid UTF-8")
	}
}
