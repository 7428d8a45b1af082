package hashline

import (
	"bytes"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// genViewText draws a line's text for views: short or long, with multi-byte
// runes (2, 3 and 4 bytes), lone CRs, pipes and invalid bytes, so that cuts
// land inside UTF-8 sequences and next to CRs.
var genViewText = rapid.OneOf(
	genText,
	rapid.StringOfN(rapid.SampledFrom([]rune("ab:|\r é€😀")), 0, 40, -1),
	rapid.Custom(func(t *rapid.T) string {
		return string(rapid.SliceOfN(rapid.SampledFrom([]byte("a\r\xff\xc3\xa9\xe2")), 0, 30).Draw(t, "bytes"))
	}),
)

// genViewContent draws a content as genContent does, from genViewText.
var genViewContent = rapid.Custom(func(t *rapid.T) []byte {
	var b bytes.Buffer
	if rapid.Bool().Draw(t, "bom") {
		b.WriteString(bom)
	}
	n := rapid.IntRange(0, 20).Draw(t, "lines")
	final := rapid.Bool().Draw(t, "final break")
	for i := 0; i < n; i++ {
		b.WriteString(genViewText.Draw(t, "text"))
		if i < n-1 || final {
			b.WriteString(rapid.SampledFrom([]string{"\n", "\r\n"}).Draw(t, "break"))
		}
	}
	return b.Bytes()
})

// TestViewOfUnboundedIsWindowOfAnnotate: with no byte bound, ViewOf is the
// whole-file annotation sliced by Window, and renders as RenderLines of it.
func TestViewOfUnboundedIsWindowOfAnnotate(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		content := genViewContent.Draw(t, "content")
		lines := Annotate(content)
		offset := rapid.IntRange(-2, len(lines)+2).Draw(t, "offset")
		limit := rapid.IntRange(-2, len(lines)+2).Draw(t, "limit")
		maxBytes := rapid.IntRange(-2, 0).Draw(t, "maxBytes")
		win, next, more := Window(lines, offset, limit)
		v := ViewOf(content, offset, limit, maxBytes)
		if v.Total != len(lines) || v.Next != next || v.More != more || v.Long != nil {
			t.Fatalf("view total %d next %d more %v long %+v; want %d, %d, %v, nil", v.Total, v.Next, v.More, v.Long, len(lines), next, more)
		}
		if !slices.Equal(win, v.Lines) {
			t.Fatalf("lines (-Window +ViewOf):\n%s", cmp.Diff(win, v.Lines))
		}
		if got, want := v.Render(), RenderLines(win); got != want {
			t.Fatalf("Render = %q, want %q", got, want)
		}
		if LineCount(content) != len(lines) {
			t.Fatalf("LineCount = %d, want %d", LineCount(content), len(lines))
		}
	})
}

// TestViewOfBoundedIsWindowOfAnnotateCut: with a byte bound, ViewOf is the
// longest prefix of the whole-file window whose rendering fits, or, when not
// even the first line fits, that line cut: a prefix of its rendering, its
// whole-line anchor, and the offset of the rest in the content.
func TestViewOfBoundedIsWindowOfAnnotateCut(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		content := genViewContent.Draw(t, "content")
		lines := Annotate(content)
		offset := rapid.IntRange(-1, len(lines)+1).Draw(t, "offset")
		limit := rapid.IntRange(-1, len(lines)+1).Draw(t, "limit")
		maxBytes := rapid.IntRange(1, 120).Draw(t, "maxBytes")
		win, _, _ := Window(lines, offset, limit)
		v := ViewOf(content, offset, limit, maxBytes)
		if v.Total != len(lines) {
			t.Fatalf("total %d, want %d", v.Total, len(lines))
		}
		k := 0
		for k < len(win) && len(RenderLines(win[:k+1])) <= maxBytes {
			k++
		}
		shownLast := 0
		switch {
		case len(win) == 0:
			if v.Long != nil || len(v.Lines) != 0 {
				t.Fatalf("empty window gave %+v", v)
			}
		case k > 0:
			if v.Long != nil || !slices.Equal(v.Lines, win[:k]) {
				t.Fatalf("lines %+v, want the first %d of %+v", v.Lines, k, win)
			}
			if got, want := v.Render(), RenderLines(win[:k]); got != want {
				t.Fatalf("Render = %q, want %q", got, want)
			}
			shownLast = win[k-1].Number
		default:
			whole := win[0]
			if v.Long == nil || len(v.Lines) != 0 {
				t.Fatalf("first line %q over %d bytes not cut: %+v", RenderLine(whole), maxBytes, v)
			}
			checkCut(t, content, whole, v, maxBytes)
			shownLast = whole.Number
		}
		wantMore := shownLast > 0 && shownLast < len(lines)
		if v.More != wantMore || (wantMore && v.Next != shownLast+1) || (!wantMore && v.Next != 0) {
			t.Fatalf("more %v next %d after line %d of %d", v.More, v.Next, shownLast, len(lines))
		}
	})
}

// checkCut checks that v shows the line whole cut to maxBytes: its number,
// whole-line anchor and length, the location of its text in content, a head
// that is the longest rune-aligned start that fits, and a rendering that is
// the start of the whole line's.
func checkCut(t fataler, content []byte, whole Line, v View, maxBytes int) {
	t.Helper()
	l := v.Long
	if l.Number != whole.Number || l.Anchor != whole.Anchor || l.Len != len(whole.Text) {
		t.Fatalf("cut line %+v, whole line %+v", l, whole)
	}
	if l.Start < 0 || l.Start+l.Len > len(content) || string(content[l.Start:l.Start+l.Len]) != whole.Text {
		t.Fatalf("Start %d, Len %d do not locate %q in the content", l.Start, l.Len, whole.Text)
	}
	prefix := len(RenderLine(Line{Number: whole.Number, Anchor: whole.Anchor}))
	// Only a bound under the display prefix leaves nothing to cut.
	if !strings.HasPrefix(whole.Text, l.Head) || (len(l.Head) >= len(whole.Text) && maxBytes > prefix) {
		t.Fatalf("head %q is not a proper prefix of %q", l.Head, whole.Text)
	}
	budget := max(0, maxBytes-prefix-1)
	if len(l.Head) > budget || budget-len(l.Head) > utf8.UTFMax-1 {
		t.Fatalf("head of %d bytes for a budget of %d", len(l.Head), budget)
	}
	if utf8.ValidString(whole.Text) && !utf8.ValidString(l.Head) {
		t.Fatalf("head %q of valid text ends inside a UTF-8 sequence", l.Head)
	}
	if utf8.ValidString(whole.Text) && len(l.Head) < len(whole.Text) {
		_, size := utf8.DecodeRuneInString(whole.Text[len(l.Head):])
		if len(l.Head)+size <= budget {
			t.Fatalf("head %q stops short of a rune that fits the budget %d", l.Head, budget)
		}
	}
	want := RenderLine(whole)[:prefix+len(l.Head)] + "\n"
	if got := v.Render(); got != want {
		t.Fatalf("Render = %q, want %q", got, want)
	}
	if maxBytes >= prefix+1 && len(want) > maxBytes {
		t.Fatalf("cut rendering of %d bytes over the bound %d", len(want), maxBytes)
	}
}

// TestViewOfCutsAnOverlongFirstLine: whenever the window's first line alone
// renders past the bound, it is cut as checkCut says, and the read continues
// at the next line.
func TestViewOfCutsAnOverlongFirstLine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		before := rapid.SliceOfN(genText, 0, 3).Draw(t, "before")
		long := rapid.OneOf(
			rapid.StringOfN(rapid.SampledFrom([]rune("aé€😀")), 1, 60, -1),
			genViewText,
		).Draw(t, "long")
		after := rapid.SliceOfN(genText, 0, 3).Draw(t, "after")
		content := []byte(strings.Join(slices.Concat(before, []string{long}, after), "\n") + "\n")
		number := len(before) + 1
		whole := Annotate(content)[number-1]
		maxBytes := rapid.IntRange(1, len(RenderLine(whole))).Draw(t, "maxBytes")
		v := ViewOf(content, number, rapid.IntRange(0, 3).Draw(t, "limit"), maxBytes)
		if v.Long == nil || len(v.Lines) != 0 {
			t.Fatalf("line %q over %d bytes not cut: %+v", RenderLine(whole), maxBytes, v)
		}
		checkCut(t, content, whole, v, maxBytes)
		if wantMore := len(after) > 0; v.More != wantMore || (wantMore && v.Next != number+1) {
			t.Fatalf("more %v next %d after line %d with %d lines after", v.More, v.Next, number, len(after))
		}
	})
}

func TestViewOfCases(t *testing.T) {
	long := strings.Repeat("é", 20) // 40 bytes
	tests := []struct {
		name                    string
		content                 string
		offset, limit, maxBytes int
		want                    string
		next                    int
	}{
		{"empty", "", 1, 0, 0, "", 0},
		{"bom only", bom, 1, 0, 0, "", 0},
		{"past the end", "a\nb\n", 3, 0, 0, "", 0},
		{"bom stripped", bom + "a\nb", 1, 1, 0, "1:" + AnchorOf("a") + "|a\n", 2},
		{"crlf", "a\r\nb\r\n", 2, 0, 0, "2:" + AnchorOf("b") + "|b\n", 0},
		{"final cr is text", "a\nb\r", 2, 0, 0, "2:" + AnchorOf("b\r") + "|b\r\n", 0},
		{"bound stops before the crossing line", "a\nb\n", 1, 0, 12 + 13, "1:" + AnchorOf("a") + "|a\n", 2},
		{"exactly the bound fits", "a\nb\n", 1, 0, 13 + 13, "1:" + AnchorOf("a") + "|a\n2:" + AnchorOf("b") + "|b\n", 0},
		{"long line cut off a rune start", "x\n" + long + "\ny\n", 2, 0, 11 + 5 + 1, "2:" + AnchorOf(long) + "|éé\n", 3},
		{"long line cut on a rune start", "x\n" + long + "\ny\n", 2, 0, 11 + 6 + 1, "2:" + AnchorOf(long) + "|ééé\n", 3},
		{"bound under the prefix", long, 1, 0, 3, "1:" + AnchorOf(long) + "|\n", 0},
		{"deep offset in a newline file", strings.Repeat("\n", 3*skipChunkBytes+7), 2*skipChunkBytes + 5, 2, 0,
			"131077:" + AnchorOf("") + "|\n131078:" + AnchorOf("") + "|\n", 131079},
		{"offset at a chunk edge", strings.Repeat("\n", skipChunkBytes) + "z", skipChunkBytes + 1, 0, 0, "65537:" + AnchorOf("z") + "|z\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := ViewOf([]byte(tt.content), tt.offset, tt.limit, tt.maxBytes)
			if got := v.Render(); got != tt.want {
				t.Errorf("Render = %q, want %q", got, tt.want)
			}
			if v.Next != tt.next || v.More != (tt.next != 0) {
				t.Errorf("next %d more %v, want %d", v.Next, v.More, tt.next)
			}
			lines := Annotate([]byte(tt.content))
			win, _, _ := Window(lines, tt.offset, tt.limit)
			if tt.maxBytes == 0 && RenderLines(win) != tt.want {
				t.Errorf("the expectation disagrees with Window(Annotate): %q", RenderLines(win))
			}
		})
	}
}

// newlineBomb is content made only of line breaks: the most lines per byte.
func newlineBomb(size int) []byte { return bytes.Repeat([]byte{'\n'}, size) }

// TestViewOfAllocatesForTheWindowOnly: a one-line view of an 8 MiB file of
// line breaks allocates a constant few objects and bytes, where annotating
// it allocates ~48 bytes per line (about 400 MB).
func TestViewOfAllocatesForTheWindowOnly(t *testing.T) {
	content := newlineBomb(8 << 20)
	// A Line, its text, its anchor: the window's own allocations.
	const maxAllocs = 4
	for _, offset := range []int{1, len(content) / 2, len(content)} {
		allocs := testing.AllocsPerRun(3, func() { ViewOf(content, offset, 1, 256<<10) })
		if allocs > maxAllocs {
			t.Errorf("ViewOf(offset %d, limit 1): %.0f allocations, want at most %d", offset, allocs, maxAllocs)
		}
	}
	// TotalAlloc counts every goroutine of the process, so one reading
	// can include another's allocations (a busy host shifts when they
	// run): the least of several readings is the view's own.
	var v View
	got := uint64(1 << 62)
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		v = ViewOf(content, len(content)/2, 1, 256<<10)
		runtime.ReadMemStats(&after)
		got = min(got, after.TotalAlloc-before.TotalAlloc)
	}
	// 1 KiB: one Line (40 bytes) and an 8-byte anchor, with room for the
	// allocator's rounding; the content is 8 MiB.
	const maxBytes = 1 << 10
	if got > maxBytes {
		t.Errorf("a one-line view of %d bytes allocated %d bytes, want at most %d", len(content), got, maxBytes)
	}
	if len(v.Lines) != 1 || v.Lines[0].Number != len(content)/2 || v.Total != len(content) {
		t.Errorf("view %+v", v)
	}
}

// FuzzViewOf: for any content and window, ViewOf never panics, agrees with
// the whole-file annotation when unbounded, shows a prefix of it when
// bounded, and cuts only a first line that alone is over the bound.
func FuzzViewOf(f *testing.F) {
	f.Add([]byte("a\nb\r\nc"), 1, 0, 0)
	f.Add([]byte(bom+"\n\n\n"), 2, 1, 5)
	f.Add([]byte("x\n"+strings.Repeat("€", 30)+"\n"), 2, 1, 20)
	f.Add([]byte("\xff\xc3\r\n\xe2\x82"), 1, 2, 13)
	f.Fuzz(func(t *testing.T, content []byte, offset, limit, maxBytes int) {
		lines := Annotate(content)
		win, next, more := Window(lines, offset, limit)
		v := ViewOf(content, offset, limit, maxBytes)
		if v.Total != len(lines) {
			t.Fatalf("total %d, want %d", v.Total, len(lines))
		}
		if maxBytes <= 0 {
			if !slices.Equal(v.Lines, win) || v.Next != next || v.More != more || v.Long != nil {
				t.Fatalf("unbounded view %+v, want %+v, %d, %v", v, win, next, more)
			}
			return
		}
		if v.Long != nil {
			if len(win) == 0 || len(RenderLine(win[0]))+1 <= maxBytes {
				t.Fatalf("cut a line that fits: %+v", v.Long)
			}
			checkCut(t, content, win[0], v, maxBytes)
			return
		}
		if len(v.Lines) > len(win) || !slices.Equal(v.Lines, win[:len(v.Lines)]) || len(v.Render()) > maxBytes {
			t.Fatalf("bounded view %+v is not a prefix of %+v within %d bytes", v.Lines, win, maxBytes)
		}
		if len(v.Lines) < len(win) && len(v.Render())+len(RenderLine(win[len(v.Lines)]))+1 <= maxBytes {
			t.Fatalf("bounded view stopped before line %d, which fits", win[len(v.Lines)].Number)
		}
	})
}
