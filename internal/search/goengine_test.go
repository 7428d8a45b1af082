package search

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestHitsAgreeWithSplitLines: the context windows hits renders from
// the matches' offsets are those of splitting the file into lines and
// taking each match's window, merged where windows meet or overlap,
// with every match marked, whatever the context and the line ends.
func TestHitsAgreeWithSplitLines(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		data := []byte(strings.Join(rapid.SliceOfN(rapid.SampledFrom([]string{"a", "b", "\n", "\r\n", "\n\n", "é"}), 0, 30).Draw(t, "data"), ""))
		lines := appendLines(nil, data, len(data)+1)
		if len(lines) == 0 {
			return
		}
		var matched []lineSpan
		off := 0
		for i, l := range lines {
			if rapid.IntRange(0, 3).Draw(t, "match") == 0 {
				matched = append(matched, lineSpan{line: i, start: off})
			}
			off += len(l) + 1
		}
		if len(matched) == 0 {
			return
		}
		c := rapid.IntRange(0, 4).Draw(t, "context")
		s := &goSearch{o: Options{Context: c}, ctx: context.Background()}
		var want []Hit
		next := 0
		for _, m := range matched {
			for l := max(m.line-c, next); l <= min(m.line+c, len(lines)-1); l++ {
				isMatch := slices.ContainsFunc(matched, func(x lineSpan) bool { return x.line == l })
				want = append(want, Hit{Path: "f", Line: l + 1, Text: lineText(lines[l]), Match: isMatch})
				next = l + 1
			}
		}
		if got := s.hits("f", data, matched); !slices.Equal(got, want) {
			t.Fatalf("context %d over %q, matches %v:\n got %v\nwant %v", c, data, matched, got, want)
		}
	})
}

// TestHitsSplitOnlyWhatTheyShow: a match near the end of a large file
// is rendered without splitting the lines before it.
func TestHitsSplitOnlyWhatTheyShow(t *testing.T) {
	data := bytes.Repeat([]byte("x\n"), 1<<16)
	data = append(data, "needle\n"...)
	s := &goSearch{o: Options{Context: 1}, ctx: context.Background()}
	m := []lineSpan{{line: 1 << 16, start: len(data) - len("needle\n")}}
	if allocs := testing.AllocsPerRun(10, func() { s.hits("f", data, m) }); allocs > 4 {
		t.Fatalf("hits allocated %v times for one match", allocs)
	}
}
