package packed

import (
	"bytes"
	"compress/flate"
	"errors"
	"strings"
	"testing"

	"github.com/agentloom/loom/history"
	"pgregory.net/rapid"
)

// TestRoundTrip: every text Pack compresses unpacks to itself, and Pack
// only answers bytes that save at least an eighth.
func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := rapid.OneOf(rapid.String(), rapid.StringMatching(`(ab|cd|ef ){0,400}`)).Draw(t, "text")
		p := Pack(text)
		if p == nil {
			return
		}
		if len(text) < MinBytes || len(p) > len(text)-len(text)/8 {
			t.Fatalf("Pack answered %d bytes for %d of text", len(p), len(text))
		}
		got, err := Unpack(p)
		if err != nil || got != text {
			t.Fatalf("Unpack: %q, %v; want %q", got, err, text)
		}
	})
}

// TestUnpackBounds: a stored text that inflates to exactly the longest
// entry text unpacks; one byte more is refused ErrTooLong (a DEFLATE
// bomb does not allocate what it would inflate to); bytes that are no
// DEFLATE stream are an error.
func TestUnpackBounds(t *testing.T) {
	deflate := func(n int) []byte {
		var buf bytes.Buffer
		w, _ := flate.NewWriter(&buf, flate.BestSpeed)
		chunk := bytes.Repeat([]byte("a"), 64<<10)
		for ; n > 0; n -= len(chunk) {
			w.Write(chunk[:min(n, len(chunk))])
		}
		w.Close()
		return buf.Bytes()
	}
	if got, err := Unpack(deflate(history.MaxEntryTextBytes)); err != nil || len(got) != history.MaxEntryTextBytes {
		t.Fatalf("at the bound: %d bytes, %v", len(got), err)
	}
	if _, err := Unpack(deflate(history.MaxEntryTextBytes + 1)); !errors.Is(err, ErrTooLong) {
		t.Fatalf("one past the bound: %v, want ErrTooLong", err)
	}
	if _, err := Unpack(deflate(64 << 20)); !errors.Is(err, ErrTooLong) {
		t.Fatalf("a bomb: %v, want ErrTooLong", err)
	}
	if _, err := Unpack([]byte(strings.Repeat("\xff", 64))); err == nil {
		t.Fatal("garbage unpacked")
	}
	if got := Text([]byte(strings.Repeat("\xff", 64))); got != Damaged {
		t.Fatalf("Text of garbage: %q, want Damaged", got)
	}
	if got := Text(deflate(history.MaxEntryTextBytes + 1)); got != Damaged {
		t.Fatalf("Text past the bound: %d bytes, want Damaged", len(got))
	}
	if got := Text(Pack(strings.Repeat("readable ", 40))); got != strings.Repeat("readable ", 40) {
		t.Fatalf("Text of a packed text: %q", got)
	}
}

// FuzzUnpack: whatever a stored text holds, Unpack answers a text of at
// most history.MaxEntryTextBytes or an error, never a panic; what Pack
// made (the seeds) unpacks.
func FuzzUnpack(f *testing.F) {
	f.Add(Pack(strings.Repeat("a stored text ", 20)))
	f.Add([]byte{})
	f.Add([]byte("\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, stored []byte) {
		text, err := Unpack(stored)
		if err == nil && len(text) > history.MaxEntryTextBytes {
			t.Fatalf("Unpack answered %d bytes", len(text))
		}
	})
}

// TestEach: fill runs exactly once for every index below n, whether n is
// below or above the parallel threshold (run under -race).
func TestEach(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 300).Draw(t, "n")
		counts := make([]int, n)
		Each(n, func(i int) { counts[i]++ })
		for i, c := range counts {
			if c != 1 {
				t.Fatalf("index %d filled %d times", i, c)
			}
		}
	})
}
