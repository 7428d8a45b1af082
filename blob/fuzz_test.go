package blob_test

import (
	"encoding/hex"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentloom/loom/blob"
)

// FuzzParseRef holds ParseRef to an independent oracle: accepted exactly
// when the input is 64 characters that hex-decode and are already
// lowercase, returned unchanged, and refused with CodeInvalidRef otherwise.
func FuzzParseRef(f *testing.F) {
	for _, seed := range []string{
		"", "0", strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 65),
		strings.Repeat("A", 64), string(blob.Sum(nil)), "sha256:" + string(blob.Sum(nil))[7:],
		strings.Repeat("é", 32), strings.Repeat("g", 64),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := blob.ParseRef(s)
		_, hexErr := hex.DecodeString(s)
		want := len(s) == blob.RefLen && hexErr == nil && strings.ToLower(s) == s
		if want {
			if err != nil || string(r) != s {
				t.Fatalf("ParseRef(%q) = %q, %v; want it back", s, r, err)
			}
			return
		}
		if err == nil || r != "" {
			t.Fatalf("ParseRef(%q) = %q, nil; want refusal", s, r)
		}
		wantCode(t, err, blob.CodeInvalidRef)
	})
}

// FuzzExcerpts checks Excerpts against the forward UTF-8 segmentation of
// the whole input: each excerpt is an exact prefix or suffix, at most n
// bytes, cut on a unit boundary, and as long as it can be.
func FuzzExcerpts(f *testing.F) {
	f.Add([]byte("hello, world"), 5)
	f.Add([]byte("aé€\U0001F600z"), 4)
	f.Add([]byte("\xff\xe2\x82\xac\x80\xf0\x9f"), 3)
	f.Add([]byte{}, 0)
	f.Add([]byte("abc"), -2)
	f.Fuzz(func(t *testing.T, data []byte, n int) {
		n = n%(len(data)+8) - 2 // keep n near the data, including <= 0
		head, tail := blob.Excerpts(data, n)
		// Unit boundaries of the whole input, decoding forwards.
		boundary := map[int]bool{0: true}
		var units []int // unit start offsets
		for i := 0; i < len(data); {
			units = append(units, i)
			_, size := utf8.DecodeRune(data[i:])
			i += size
			boundary[i] = true
		}
		limit := max(n, 0)
		if len(head) > limit || len(tail) > limit {
			t.Fatalf("excerpts %d and %d bytes exceed n=%d", len(head), len(tail), n)
		}
		if string(data[:len(head)]) != head {
			t.Fatalf("head %q is not a prefix of %q", head, data)
		}
		if string(data[len(data)-len(tail):]) != tail {
			t.Fatalf("tail %q is not a suffix of %q", tail, data)
		}
		if !boundary[len(head)] {
			t.Fatalf("head of %q cut at %d splits a rune", data, len(head))
		}
		if !boundary[len(data)-len(tail)] {
			t.Fatalf("tail of %q cut at %d splits a rune", data, len(data)-len(tail))
		}
		// Maximal: the next unit would not have fitted.
		if len(head) < len(data) {
			_, size := utf8.DecodeRune(data[len(head):])
			if len(head)+size <= limit {
				t.Fatalf("head of %q stops at %d though the next unit fits n=%d", data, len(head), n)
			}
		}
		if start := len(data) - len(tail); start > 0 {
			prev := units[0]
			for _, u := range units {
				if u >= start {
					break
				}
				prev = u
			}
			if len(data)-prev <= limit {
				t.Fatalf("tail of %q starts at %d though the unit at %d fits n=%d", data, start, prev, n)
			}
		}
		// Well-formed input gives well-formed excerpts.
		if utf8.Valid(data) && (!utf8.ValidString(head) || !utf8.ValidString(tail)) {
			t.Fatalf("valid input %q gave invalid excerpts %q, %q", data, head, tail)
		}
	})
}
