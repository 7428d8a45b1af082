package hashline

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// genText draws a line of text: no line breaks, often one of a few common
// lines so that identical lines (equal anchors) are frequent.
var genText = rapid.OneOf(
	rapid.SampledFrom([]string{"", "a", "}", "return nil", "\tx := 1"}),
	rapid.StringOfN(rapid.RuneFrom([]rune("ab1:|{} \té")), 0, 10, -1),
)

// genContent draws a text file: an optional byte-order mark, lines with LF
// or CRLF breaks, and an optional missing final break.
var genContent = rapid.Custom(func(t *rapid.T) []byte {
	var b bytes.Buffer
	if rapid.Bool().Draw(t, "bom") {
		b.WriteString(bom)
	}
	n := rapid.IntRange(0, 12).Draw(t, "lines")
	final := rapid.Bool().Draw(t, "final break")
	for i := 0; i < n; i++ {
		b.WriteString(genText.Draw(t, "text"))
		if i < n-1 || final {
			b.WriteString(rapid.SampledFrom([]string{"\n", "\r\n"}).Draw(t, "break"))
		}
	}
	return b.Bytes()
})

// scenario is a content, non-overlapping hunks over it in random order, and
// what applying them must produce, computed without the code under test.
type scenario struct {
	content   []byte
	hunks     []Hunk
	pieces    [][]string // pieces[i]: the lines hunk i must write
	wantTexts []string   // post-image texts
	kept      [][2]int   // (pre index, post index) of lines no hunk touched
}

// drawPieces draws the lines a hunk writes and packs them into Lines
// elements, sometimes several per element joined by a break.
func drawPieces(t *rapid.T, min int) (want, elems []string) {
	want = rapid.SliceOfN(genText, min, 4).Draw(t, "pieces")
	for i := 0; i < len(want); {
		k := rapid.IntRange(1, len(want)-i).Draw(t, "per element")
		sep := rapid.SampledFrom([]string{"\n", "\r\n"}).Draw(t, "joiner")
		e := strings.Join(want[i:i+k], sep)
		// A break ending an element starts no further line, so an element
		// whose last line is empty needs one to keep that line.
		if (k > 1 && want[i+k-1] == "") || rapid.Bool().Draw(t, "trailing break") {
			e += sep
		}
		elems = append(elems, e)
		i += k
	}
	if elems == nil && rapid.Bool().Draw(t, "nil lines") {
		return want, nil
	}
	if elems == nil {
		elems = []string{}
	}
	return want, elems
}

var genScenario = rapid.Custom(func(t *rapid.T) scenario {
	content := genContent.Draw(t, "content")
	lines := Annotate(content)
	n := len(lines)
	ref := func(line int) *Ref { return &Ref{Line: line, Anchor: lines[line-1].Anchor} }
	var s scenario
	s.content = content
	insertedAt := -1
	for gap := 0; gap <= n; {
		switch rapid.IntRange(0, 2).Draw(t, "action") {
		case 0: // keep the next line
			if gap == n {
				gap++
				continue
			}
			s.kept = append(s.kept, [2]int{gap, len(s.wantTexts)})
			s.wantTexts = append(s.wantTexts, lines[gap].Text)
			gap++
		case 1: // insert at this gap
			if insertedAt == gap {
				continue
			}
			insertedAt = gap
			want, elems := drawPieces(t, 1)
			h := Hunk{Lines: elems}
			switch {
			case gap == n && (n == 0 || rapid.Bool().Draw(t, "append")):
				h.Op = OpAppend
			case gap == n || (gap > 0 && rapid.Bool().Draw(t, "after")):
				h.Op, h.Start = OpInsertAfter, ref(gap)
			default:
				h.Op, h.Start = OpInsertBefore, ref(gap+1)
			}
			s.hunks = append(s.hunks, h)
			s.pieces = append(s.pieces, want)
			s.wantTexts = append(s.wantTexts, want...)
		case 2: // replace the next lines
			if gap == n {
				continue
			}
			k := rapid.IntRange(1, min(3, n-gap)).Draw(t, "replaced")
			want, elems := drawPieces(t, 0)
			h := Hunk{Op: OpReplace, Start: ref(gap + 1), Lines: elems}
			if k > 1 || rapid.Bool().Draw(t, "explicit end") {
				h.End = ref(gap + k)
			}
			s.hunks = append(s.hunks, h)
			s.pieces = append(s.pieces, want)
			s.wantTexts = append(s.wantTexts, want...)
			gap += k
		}
	}
	if len(s.hunks) == 0 {
		s.hunks = []Hunk{{Op: OpAppend, Lines: []string{"tail"}}}
		s.pieces = [][]string{{"tail"}}
		s.wantTexts = append(s.wantTexts, "tail")
	}
	order := rapid.Permutation(indices(len(s.hunks))).Draw(t, "order")
	hs, ps := make([]Hunk, len(order)), make([][]string, len(order))
	for i, k := range order {
		hs[i], ps[i] = s.hunks[k], s.pieces[k]
	}
	s.hunks, s.pieces = hs, ps
	return s
})

func indices(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// mustApply plans and applies a scenario, which is valid by construction.
func mustApply(t *rapid.T, s scenario) (*Plan, Applied) {
	plan, err := NewPlan(s.content, s.hunks)
	if err != nil {
		t.Fatalf("NewPlan over %q: %v", s.content, err)
	}
	applied, err := plan.Apply(s.content)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return plan, applied
}

func TestPropAnnotateRejoins(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		content := rapid.OneOf(genContent, rapid.SliceOfN(rapid.SampledFrom([]byte("a\r\n\xef\xbb\xbf")), 0, 30)).Draw(rt, "content")
		if got := rejoin(rt, content); !bytes.Equal(got, content) {
			rt.Fatalf("rejoin = %q, want %q", got, content)
		}
	})
}

func TestPropAnchorsDependOnlyOnText(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		text := genText.Draw(rt, "text")
		before := genContent.Filter(func(c []byte) bool {
			return len(c) == 0 || c[len(c)-1] == '\n'
		}).Draw(rt, "before")
		after := genContent.Draw(rt, "after")
		brk := rapid.SampledFrom([]string{"\n", "\r\n"}).Draw(rt, "break")
		at := len(Annotate(before)) // the text's 0-based line index
		if len(before) == 0 || string(before) == bom {
			before = nil // a lone BOM would make the text line 1 with it
		}
		doc := append(append(append([]byte{}, before...), text+brk...), after...)
		lines := Annotate(doc)
		if lines[at].Text != text || lines[at].Anchor != AnchorOf(text) {
			rt.Fatalf("line %d is %+v, want text %q anchor %q", at+1, lines[at], text, AnchorOf(text))
		}
		byText := map[string]string{}
		for _, l := range lines {
			if a, ok := byText[l.Text]; ok && a != l.Anchor {
				rt.Fatalf("text %q has anchors %q and %q", l.Text, a, l.Anchor)
			}
			byText[l.Text] = l.Anchor
		}
	})
}

func TestPropPlanAppliesOnlyToItsContent(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := genScenario.Draw(rt, "scenario")
		plan, _ := mustApply(rt, s)
		others := [][]byte{
			genContent.Draw(rt, "other"),
			append(append([]byte{}, s.content...), rapid.Byte().Draw(rt, "extra")),
		}
		if len(s.content) > 0 {
			flipped := append([]byte{}, s.content...)
			i := rapid.IntRange(0, len(flipped)-1).Draw(rt, "flip at")
			flipped[i] ^= byte(rapid.IntRange(1, 255).Draw(rt, "flip"))
			others = append(others, flipped, s.content[:len(s.content)-1])
		}
		for _, other := range others {
			if bytes.Equal(other, s.content) {
				continue
			}
			_, err := plan.Apply(other)
			var se *StaleError
			if !errors.As(err, &se) || se.Code != CodeStaleDigest || se.Current != Digest(other) || se.Want != plan.Digest() {
				rt.Fatalf("Apply over other content %q: %v", other, err)
			}
		}
	})
}

func TestPropNeverDoubleApplies(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := genScenario.Draw(rt, "scenario")
		plan, applied := mustApply(rt, s)
		again, err := plan.Apply(applied.Content)
		if bytes.Equal(applied.Content, s.content) {
			if err != nil || !bytes.Equal(again.Content, applied.Content) {
				rt.Fatalf("no-op edit re-applied: %q, %v", again.Content, err)
			}
			return
		}
		if !isCode(err, CodeStaleDigest) {
			rt.Fatalf("re-apply on the post-image: %v", err)
		}
	})
}

func TestPropRenderParseRoundTrip(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		text := rapid.String().Draw(rt, "text")
		l := Line{Number: rapid.IntRange(1, 1<<40).Draw(rt, "number"), Text: text, Anchor: AnchorOf(text)}
		r := RenderLine(l)
		if !HasDisplayPrefix(r) {
			rt.Fatalf("rendering %q lacks the display prefix", r)
		}
		back, ok := parseRendered(r)
		if !ok || back != l {
			rt.Fatalf("parse(RenderLine(%+v)) = %+v, %v", l, back, ok)
		}
		ref := Ref{Line: l.Number, Anchor: l.Anchor}
		if got, err := ParseRef(ref.String()); err != nil || got != ref {
			rt.Fatalf("ParseRef(%q) = %+v, %v", ref.String(), got, err)
		}
		// ParseRef is total, and whatever it accepts renders back to a ref it accepts.
		if got, err := ParseRef(text); err == nil {
			if again, err := ParseRef(got.String()); err != nil || again != got {
				rt.Fatalf("ParseRef(%q) = %+v, re-parse %+v, %v", text, got, again, err)
			}
		}
	})
}

func TestPropFreshAnchorsMatchAFreshRead(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := genScenario.Draw(rt, "scenario")
		_, applied := mustApply(rt, s)
		fresh := Annotate(applied.Content)
		if applied.LineCount != len(fresh) {
			rt.Fatalf("Applied.LineCount %d, a fresh Annotate has %d lines", applied.LineCount, len(fresh))
		}
		if got := texts(fresh); !slices.Equal(got, s.wantTexts) {
			rt.Fatalf("post-image texts %q, want %q", got, s.wantTexts)
		}
		for i, r := range applied.Regions {
			if got := texts(fresh[r.Start-1 : r.End]); !slices.Equal(got, s.pieces[i]) {
				rt.Fatalf("region %d %+v holds %q, want %q", i, r, got, s.pieces[i])
			}
		}
		ctx := rapid.IntRange(0, 3).Draw(rt, "context")
		text, complete, _ := RenderRegions(fresh, applied.Regions, ctx, 0)
		if !complete {
			rt.Fatal("uncapped rendering incomplete")
		}
		for _, row := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			if row == "" || row+"\n" == RegionSeparator {
				continue
			}
			l, ok := parseRendered(row)
			if !ok || l.Number < 1 || l.Number > len(fresh) || l != fresh[l.Number-1] {
				rt.Fatalf("rendered %q does not match fresh line %+v", row, l)
			}
		}
	})
}

func TestPropUntouchedLinesKeepTheirBytes(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := genScenario.Draw(rt, "scenario")
		_, applied := mustApply(rt, s)
		pre, post := s.content, applied.Content
		preX, postX := scanAll(pre), scanAll(post)
		preBOM, preSpans := preX.skip, preX.spans
		postBOM, postSpans := postX.skip, postX.spans
		if !bytes.Equal(pre[:preBOM], post[:postBOM]) {
			rt.Fatalf("byte-order mark changed: %q -> %q", pre[:preBOM], post[:postBOM])
		}
		n, m := len(preSpans), len(postSpans)
		preNoFinal := n > 0 && preSpans[n-1].end == preSpans[n-1].textEnd
		brk := func(c []byte, sp span) string { return string(c[sp.textEnd:sp.end]) }
		for _, k := range s.kept {
			a, b := preSpans[k[0]], postSpans[k[1]]
			if string(pre[a.start:a.textEnd]) != string(post[b.start:b.textEnd]) {
				rt.Fatalf("kept line %d -> %d changed text", k[0]+1, k[1]+1)
			}
			boundary := preNoFinal && (k[0] == n-1 || k[1] == m-1)
			if !boundary && brk(pre, a) != brk(post, b) {
				rt.Fatalf("kept line %d -> %d break %q -> %q", k[0]+1, k[1]+1, brk(pre, a), brk(post, b))
			}
		}
		if m > 0 {
			last := postSpans[m-1]
			postNoFinal := last.end == last.textEnd
			wantNoFinal := preNoFinal && last.textEnd > last.start
			if postNoFinal != wantNoFinal {
				rt.Fatalf("final break missing=%v, want %v (pre %q post %q)", postNoFinal, wantNoFinal, pre, post)
			}
		}
		eol := dominantBreak(preX.crlf, preX.lf)
		for i, r := range applied.Regions {
			for line := r.Start; line <= r.End; line++ {
				sp := postSpans[line-1]
				if got := brk(post, sp); got != eol && !(line == m && got == "") {
					rt.Fatalf("hunk %d line %d break %q, want %q", i, line, got, eol)
				}
			}
		}
	})
}

// TestPropScanKeepsTheNamedLines: scan keeps exactly the spans of the
// named lines that exist, as a scan keeping every line finds them, and
// counts the lines and their breaks the same whatever it keeps.
func TestPropScanKeepsTheNamedLines(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		content := []byte(rapid.StringOfN(rapid.SampledFrom([]rune{'a', 'b', '\r', '\n', '\uFEFF'}), 0, 60, -1).Draw(rt, "content"))
		named := rapid.SliceOfDistinct(rapid.IntRange(1, 70), rapid.ID[int]).Draw(rt, "named")
		slices.Sort(named)
		all, x := scanAll(content), scan(content, named)
		if x.n != all.n || x.crlf != all.crlf || x.lf != all.lf || x.skip != all.skip || x.digest != all.digest {
			rt.Fatalf("scan of named lines %+v, of all %+v", x, all)
		}
		for _, i := range named {
			sp, ok := x.span(i)
			if ok != (i <= all.n) || ok && sp != all.spans[i-1] {
				rt.Fatalf("line %d: %+v, %v; all lines: %d", i, sp, ok, all.n)
			}
		}
		if all.n > 0 {
			if sp, ok := x.span(all.n); !ok || sp != all.spans[all.n-1] {
				rt.Fatalf("the last line %d: %+v, %v", all.n, sp, ok)
			}
		}
	})
}
