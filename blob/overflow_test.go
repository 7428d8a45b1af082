package blob_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentloom/loom/blob"
	"github.com/google/go-cmp/cmp"
)

func TestBoundAtThreshold(t *testing.T) {
	tests := []struct {
		name  string
		size  int
		spill bool
	}{
		{"empty", 0, false},
		{"one byte", 1, false},
		{"one byte under", blob.OverflowThreshold - 1, false},
		{"exactly the threshold", blob.OverflowThreshold, false},
		{"one byte over", blob.OverflowThreshold + 1, true},
		{"far over", 3 * blob.OverflowThreshold, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openStore(t)
			data := patterned(tt.size)
			inline, o, err := s.Bound(data)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.spill {
				if o != nil || inline != string(data) {
					t.Fatalf("Bound(%d bytes) spilled or altered the text", tt.size)
				}
				if n := len(files(t, s.Root())); n != 0 {
					t.Fatalf("inline output stored %d files", n)
				}
				return
			}
			if o == nil || inline != "" {
				t.Fatalf("Bound(%d bytes) = inline %d bytes, overflow %v; want a spill", tt.size, len(inline), o)
			}
			head, tail := blob.Excerpts(data, blob.ExcerptBytes)
			want := &blob.Overflow{Ref: blob.Sum(data), Path: s.Path(blob.Sum(data)), Size: int64(tt.size), HeadExcerpt: head, TailExcerpt: tail}
			if diff := cmp.Diff(want, o); diff != "" {
				t.Fatalf("Overflow (-want +got):\n%s", diff)
			}
			if len(o.HeadExcerpt) != blob.ExcerptBytes || len(o.TailExcerpt) != blob.ExcerptBytes {
				t.Fatalf("ASCII excerpts are %d and %d bytes, want %d", len(o.HeadExcerpt), len(o.TailExcerpt), blob.ExcerptBytes)
			}
			got, err := s.Read(o.Ref)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("spilled blob does not read back: %v", err)
			}
		})
	}
}

// patterned returns n bytes of printable ASCII that differ along their length.
func patterned(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
		if i%80 == 79 {
			b[i] = '\n'
		}
	}
	return b
}

func TestExcerpts(t *testing.T) {
	const euro = "\u20ac"      // 3 bytes: e2 82 ac
	const smile = "\U0001F600" // 4 bytes: f0 9f 98 80
	tests := []struct {
		name       string
		data       string
		n          int
		head, tail string
	}{
		{"empty", "", 4, "", ""},
		{"n zero", "abc", 0, "", ""},
		{"n negative", "abc", -1, "", ""},
		{"shorter than n", "abc", 10, "abc", "abc"},
		{"exactly n", "abcd", 4, "abcd", "abcd"},
		{"one past n", "abcde", 4, "abcd", "bcde"},
		{"two-byte rune straddles head cut", "aé" + "xyz", 2, "a", "yz"},
		{"two-byte rune ends at head cut", "aé" + "xyz", 3, "aé", "xyz"},
		{"three-byte rune straddles both cuts", euro + "-" + euro, 2, "", ""},
		{"three-byte rune fits exactly", euro + "-" + euro, 3, euro, euro},
		{"four-byte rune, n one short", smile + smile, 3, "", ""},
		{"four-byte rune, n exact", smile + smile, 4, smile, smile},
		{"four-byte rune, n one over", smile + "a" + smile, 5, smile + "a", "a" + smile},
		{"invalid byte is its own unit", "\xffabc\xfe", 2, "\xffa", "c\xfe"},
		{"truncated sequence at end", "ab\xe2\x82", 3, "ab\xe2", "b\xe2\x82"},
		{"lone continuation bytes", "\x80\x80\x80", 2, "\x80\x80", "\x80\x80"},
		{"overlong encoding is invalid", "\xc0\xafz", 2, "\xc0\xaf", "\xafz"},
		{"surrogate encoding is invalid", "\xed\xa0\x80", 2, "\xed\xa0", "\xa0\x80"},
		{"valid rune after invalid lead", "\xe2" + euro, 3, "\xe2", euro},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			head, tail := blob.Excerpts([]byte(tt.data), tt.n)
			if head != tt.head || tail != tt.tail {
				t.Fatalf("Excerpts(%q, %d) = %q, %q; want %q, %q", tt.data, tt.n, head, tail, tt.head, tt.tail)
			}
		})
	}
}

func TestOverflowText(t *testing.T) {
	o := &blob.Overflow{
		Ref:         blob.Sum([]byte("x")),
		Path:        "/blobs/2d/" + string(blob.Sum([]byte("x"))),
		Size:        100_000,
		HeadExcerpt: "first line\nsecond",
		TailExcerpt: "last line\n",
	}
	text := o.Text("stdout")
	elided := 100_000 - len(o.HeadExcerpt) - len(o.TailExcerpt)
	for _, want := range []string{
		fmt.Sprintf("%d bytes of stdout elided", elided),
		fmt.Sprintf("%q", o.Path),
		"fs_read",
		string(o.Ref),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("Text lacks %q:\n%s", want, text)
		}
	}
	if !strings.HasPrefix(text, o.HeadExcerpt+"\n[") {
		t.Errorf("Text does not open with the head excerpt on its own lines:\n%s", text)
	}
	if !strings.HasSuffix(text, "]\n"+o.TailExcerpt) {
		t.Errorf("Text does not close with the tail excerpt:\n%s", text)
	}
	if strings.Count(text, "\n") != 4 {
		t.Errorf("Text has %d lines, want head (2), marker, tail:\n%s", strings.Count(text, "\n"), text)
	}
	if !strings.Contains(o.Text(""), "bytes of output elided") {
		t.Errorf("empty label does not read \"output\": %s", o.Text(""))
	}
	var nilO *blob.Overflow
	if nilO.Text("stdout") != "" {
		t.Errorf("nil Overflow renders non-empty")
	}
}

func TestOverflowJSONNames(t *testing.T) {
	b, err := json.Marshal(blob.Overflow{Ref: "r", Path: "p", Size: 7, HeadExcerpt: "h", TailExcerpt: "t"})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"ref":"r","path":"p","size":7,"head_excerpt":"h","tail_excerpt":"t"}`
	if string(b) != want {
		t.Fatalf("JSON %s, want %s", b, want)
	}
}
