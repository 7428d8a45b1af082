package search

import (
	"bytes"
	"context"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

// prefilterAtoms build the patterns the prefilter properties draw:
// literals (k and s among them, whose case forms leave ASCII), classes,
// repeats of fixed and varying width, alternations, assertions.
var prefilterAtoms = []string{"a", "b", "ab", "k", "s", "é", "Z", "-", "[a-c]", "[0-9]", `\d`, `\w`, ".", "x+", "(a|bc)", "b{2}", "c{1,3}", "(?i:ab)", "^", "$", `\b`, "ſ", "\u212a", "a*", "(?:ab)+", "[^a]", "é+", "(k|s)"}

// prefilterAlphabet is what the lines are made of.
var prefilterAlphabet = []string{"a", "b", "c", "A", "B", "k", "K", "\u212a", "s", "S", "ſ", "é", "É", "x", "z", "Z", "-", "0", "7", " ", "ab", "bc"}

func drawPattern(t *rapid.T) string {
	p := strings.Join(rapid.SliceOfN(rapid.SampledFrom(prefilterAtoms), 1, 5).Draw(t, "atoms"), "")
	if rapid.Bool().Draw(t, "alternate") {
		p += "|" + strings.Join(rapid.SliceOfN(rapid.SampledFrom(prefilterAtoms), 1, 3).Draw(t, "alt"), "")
	}
	return p
}

// TestPrefilterNeverSkipsAMatchingLine: whatever the pattern and case,
// a line the pattern matches holds one of the prefilter's needles, so
// the Go engine never skips it. Control: the property is not vacuous,
// for prefilters exist and lines without their needles do not match.
func TestPrefilterNeverSkipsAMatchingLine(t *testing.T) {
	t.Parallel()
	withPrefilter := 0
	rapid.Check(t, func(t *rapid.T) {
		o := Options{Pattern: drawPattern(t), CaseInsensitive: rapid.Bool().Draw(t, "ci")}
		re, err := Compile(o)
		if err != nil {
			t.Skip("not a pattern")
		}
		pre := newPrefilter(newInvalidMatcher(o).tree)
		if pre == nil {
			return
		}
		withPrefilter++
		for range 20 {
			line := []byte(strings.Join(rapid.SliceOfN(rapid.SampledFrom(prefilterAlphabet), 0, 10).Draw(t, "line"), ""))
			cache := make([]int, len(pre.needles))
			for i := range cache {
				cache[i] = -2
			}
			if re.Match(line) && pre.next(line, 0, cache) < 0 {
				t.Fatalf("pattern %q (case-insensitive %v) matches %q, which holds none of its needles %v", o.Pattern, o.CaseInsensitive, line, pre.needles)
			}
		}
	})
	if withPrefilter == 0 {
		t.Fatal("no drawn pattern had a prefilter: the property tested nothing")
	}
}

// TestNeedleIndexFindsTheFirstOccurrence: a needle's index from any
// position is the first position at or after it where the needle's
// sets all hold, as a plain scan finds it.
func TestNeedleIndexFindsTheFirstOccurrence(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		o := Options{Pattern: drawPattern(t), CaseInsensitive: rapid.Bool().Draw(t, "ci")}
		tree, err := syntax.Parse(o.Pattern, syntax.Perl)
		if err != nil {
			t.Skip("not a pattern")
		}
		if o.CaseInsensitive {
			tree, _ = syntax.Parse("(?i)"+o.Pattern, syntax.Perl)
		}
		pre := newPrefilter(tree)
		if pre == nil {
			t.Skip("no prefilter")
		}
		data := []byte(strings.Join(rapid.SliceOfN(rapid.SampledFrom(prefilterAlphabet), 0, 30).Draw(t, "data"), ""))
		for _, n := range pre.needles {
			for from := 0; from <= len(data); from++ {
				want := -1
				for i := from; i+len(n.q) <= len(data); i++ {
					if n.at(data[i:]) {
						want = i
						break
					}
				}
				if got := n.index(data, from); got != want {
					t.Fatalf("pattern %q: needle %v in %q from %d: index %d, want %d", o.Pattern, n.q, data, from, got, want)
				}
			}
		}
	})
}

// TestPrefilterPicksSelectiveRuns: the needles chosen for patterns the
// benchmark and the differential test use.
func TestPrefilterPicksSelectiveRuns(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		o    Options
		want []string // each needle's sets, one per position, as their bytes
	}{
		{Options{Pattern: "Deprecated:"}, []string{"Deprecated:"}},
		{Options{Pattern: "deprecated", CaseInsensitive: true}, []string{"Dd Ee Pp Rr Ee Cc Aa Tt Ee Dd"}},
		{Options{Pattern: "kelvin", CaseInsensitive: true}, []string{"Ee Ll Vv Ii Nn"}},
		{Options{Pattern: `\d{4}-\d{2}-\d{2}`}, []string{"0123456789 0123456789 0123456789 0123456789 - 0123456789 0123456789 - 0123456789 0123456789"}},
		{Options{Pattern: `TODO|FIXME`}, []string{"TODO", "FIXME"}},
		{Options{Pattern: `func \(\w+ \*\w+\) Close`}, []string{") Close"}},
		{Options{Pattern: `a+bc`}, []string{"bc"}},
		{Options{Pattern: `ab+c`}, []string{"ab"}},
		{Options{Pattern: `.`}, nil},
		{Options{Pattern: `[^\x00-\x7F]{4}`}, nil},
		{Options{Pattern: `foo|.`}, nil},
	} {
		pre := newPrefilter(newInvalidMatcher(tt.o).tree)
		var got []string
		if pre != nil {
			for _, n := range pre.needles {
				if n.exact != nil {
					got = append(got, string(n.exact))
					continue
				}
				var parts []string
				for i := range n.q {
					parts = append(parts, string(n.q[i].members()))
				}
				got = append(got, strings.Join(parts, " "))
			}
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%q (case-insensitive %v): needles %q, want %q", tt.o.Pattern, tt.o.CaseInsensitive, got, tt.want)
		}
	}
}

// TestAnchoredNeedleIndex draws needles of byte sets over a small
// alphabet directly (so positions repeat and anchors recur), and holds
// index to a plain scan.
func TestAnchoredNeedleIndex(t *testing.T) {
	t.Parallel()
	alphabet := []byte("abAB-")
	set := rapid.Custom(func(t *rapid.T) byteSet {
		var s byteSet
		for _, c := range rapid.SliceOfN(rapid.SampledFrom(alphabet), 1, 3).Draw(t, "set") {
			s.add(c)
		}
		return s
	})
	rapid.Check(t, func(t *rapid.T) {
		q := seq(rapid.SliceOfN(set, 1, 4).Draw(t, "seq"))
		if !q.searchable() {
			t.Skip("no anchor")
		}
		n := newNeedle(q)
		data := []byte(rapid.StringOfN(rapid.SampledFrom([]rune(string(alphabet))), 0, 40, -1).Draw(t, "data"))
		for from := 0; from <= len(data); from++ {
			want := -1
			for i := from; i+len(q) <= len(data); i++ {
				if n.at(data[i:]) {
					want = i
					break
				}
			}
			if got := n.index(data, from); got != want {
				t.Fatalf("needle %v in %q from %d: index %d, want %d", q, data, from, got, want)
			}
		}
	})
}

// nonASCIIAtoms build the patterns the non-ASCII scan properties draw:
// classes and literals outside ASCII (some with ASCII case forms: the
// Kelvin sign and the long s), and ASCII atoms around them.
var nonASCIIAtoms = []string{`[^\x00-\x7F]`, `[^\x00-\x7F]{2}`, `[^\x00-\x7F]+`, "é", "(?i:é)", "\u212a", "(?i:\u212a)", "ſ", `\p{Greek}`, `[é-ü]`, "(é|ü)", "(é|a)", "a", "[ab]", ".", `\w`, "a*", "x?", "^", "$", `\b`, `[^a]`, `\x{FFFD}`, "é*"}

// nonASCIIAlphabet is what the contents are made of: ASCII, valid
// non-ASCII text, a real U+FFFD, invalid bytes, line ends.
var nonASCIIAlphabet = []string{"a", "b", "x", " ", "é", "É", "ü", "α", "k", "K", "\u212a", "s", "ſ", "\uFFFD", "\xff", "\xc3", "\x80", "\n", "\r\n", "ab"}

// TestNonASCIIScanAgreesWithLines: for every pattern needsNonASCII
// holds of, the Go engine's scan, which matches only the lines holding a
// byte at or above 0x80, finds exactly the lines that matching every
// line on its own finds. Control: such patterns were drawn, and lines
// matched.
func TestNonASCIIScanAgreesWithLines(t *testing.T) {
	t.Parallel()
	fast, matched := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		p := strings.Join(rapid.SliceOfN(rapid.SampledFrom(nonASCIIAtoms), 1, 4).Draw(t, "atoms"), "")
		if rapid.Bool().Draw(t, "alternate") {
			p += "|" + strings.Join(rapid.SliceOfN(rapid.SampledFrom(nonASCIIAtoms), 1, 3).Draw(t, "alt"), "")
		}
		o := Options{Pattern: p, CaseInsensitive: rapid.Bool().Draw(t, "ci")}
		re, err := Compile(o)
		if err != nil {
			t.Skip("not a pattern")
		}
		s := &goSearch{re: re, o: o, ctx: context.Background(), invalid: newInvalidMatcher(o)}
		if s.nonASCII = needsNonASCII(s.invalid.tree); !s.nonASCII {
			return
		}
		fast++
		data := []byte(strings.Join(rapid.SliceOfN(rapid.SampledFrom(nonASCIIAlphabet), 0, 40).Draw(t, "content"), ""))
		var want []int
		for i, line := range bytes.Split(data, []byte("\n")) {
			if i == bytes.Count(data, []byte("\n")) && len(line) == 0 {
				break // past the final newline: not a line
			}
			if !bytes.ContainsFunc(line, func(r rune) bool { return r >= utf8.RuneSelf }) && re.Match(line) {
				t.Fatalf("pattern %q (case-insensitive %v) matches the ASCII line %q", o.Pattern, o.CaseInsensitive, line)
			}
			if s.lineMatch(line) {
				want = append(want, i+1)
			}
		}
		var got []int
		for _, h := range s.scan("f", data) {
			if h.Match {
				got = append(got, h.Line)
			}
		}
		matched += len(got)
		if !slices.Equal(got, want) {
			t.Fatalf("pattern %q (case-insensitive %v) over %q: scan found lines %v, line by line %v", o.Pattern, o.CaseInsensitive, data, got, want)
		}
	})
	if fast == 0 || matched == 0 {
		t.Fatalf("%d patterns took the non-ASCII scan, finding %d lines: the property tested nothing", fast, matched)
	}
}

// TestIndexNonASCII: indexNonASCII finds the first byte at or above
// 0x80 from any position, as a byte-by-byte search does, across the
// boundaries of the words it reads.
func TestIndexNonASCII(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		data := rapid.SliceOfN(rapid.SampledFrom([]byte{'a', '\n', 0x7f, 0x80, 0xc3, 0xff}), 0, 100).Draw(t, "data")
		// Mostly ASCII, so the word loops run.
		for i := range data {
			if rapid.IntRange(0, 9).Draw(t, "ascii") > 0 {
				data[i] = 'a'
			}
		}
		from := rapid.IntRange(0, len(data)).Draw(t, "from")
		want := -1
		for i := from; i < len(data); i++ {
			if data[i] >= 0x80 {
				want = i
				break
			}
		}
		if got := indexNonASCII(data, from); got != want {
			t.Fatalf("indexNonASCII(%q, %d) = %d, want %d", data, from, got, want)
		}
	})
}
