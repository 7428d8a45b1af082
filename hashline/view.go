package hashline

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"
)

// skipChunkBytes is how much content lineStart counts line breaks over at a
// time (with bytes.Count, which is vectorised) before it walks break by break
// inside the chunk that holds the line it looks for.
const skipChunkBytes = 64 << 10

// View is one window of a content's anchored lines, as a windowed read shows
// it. ViewOf finds it without annotating, hashing or copying any line outside
// the window, so its cost in memory is the window's bytes plus a constant
// per shown line, whatever the size or line count of the content.
type View struct {
	// Total is the number of lines of the content: len(Annotate(content)).
	Total int
	// Lines are the window's lines exactly as Annotate gives them (numbered
	// from the window's offset, whole text, whole-line anchor). They are a
	// prefix of Window(Annotate(content), offset, limit): all of it unless
	// the byte bound stopped the window early. Lines is empty when Long is
	// set.
	Lines []Line
	// Long is set when the window's first line alone renders past the byte
	// bound: that line is then the only one shown, cut. nil otherwise.
	Long *LongLine
	// Next is the offset that continues the read (the number of the line
	// after the last line shown) when More is true, and 0 otherwise.
	Next int
	// More reports whether lines remain after the last line shown.
	More bool
}

// LongLine is a line shown cut because its rendering alone is over a view's
// byte bound.
type LongLine struct {
	// Number is the line's 1-based number.
	Number int
	// Anchor is the anchor of the whole line, AnchorOf of its full text, so
	// the ref Number:Anchor addresses the whole line (a replace of it
	// replaces all of it, not the part shown).
	Anchor string
	// Head is the longest start of the line's text whose rendering, with its
	// line break, fits the bound, shortened by at most utf8.UTFMax-1 bytes so
	// that it does not end inside a UTF-8 sequence. It is shorter than the
	// text, unless the bound is shorter than the line's display prefix.
	Head string
	// Len is the byte length of the line's whole text.
	Len int
	// Start is the byte offset of the line's text in the content: the part
	// not shown is content[Start+len(Head) : Start+Len].
	Start int
}

// ViewOf returns the window of content's lines that
// Window(Annotate(content), offset, limit) selects (an offset below 1 reads
// as 1, a limit <= 0 means every line from offset on), bounded in bytes:
// lines are taken while RenderLines of them stays within maxBytes (text of
// exactly maxBytes fits), and when even the first line does not fit it is
// returned as a LongLine, cut. maxBytes <= 0 means no bound. An offset past
// the last line gives an empty view with More false.
//
// With no bound, v.Lines equals Window(Annotate(content), offset, limit) and
// v.Render() equals RenderLines of it. Time is one vectorised count of the
// content's line breaks plus a walk to the window; memory is the window's
// text, copied once, and one Line per shown line.
func ViewOf(content []byte, offset, limit, maxBytes int) View {
	total := countLines(content)
	offset = max(offset, 1)
	if offset > total {
		return View{Total: total}
	}
	first := lineStart(content, bomLen(content), offset)
	budget := -1
	if maxBytes > 0 {
		budget = maxBytes
	}
	m := measure(content, first, offset, limit, budget)
	if m.lines == 0 {
		return longView(content, total, offset, first, m.overTextEnd, maxBytes)
	}
	lines := annotateRange(content, first, m.textEnd, offset, m.lines)
	n := m.lines
	v := View{Total: total, Lines: lines}
	if last := offset + n - 1; last < total {
		v.More, v.Next = true, last+1
	}
	return v
}

// measured is how much of a content measure found fits.
type measured struct {
	lines   int // how many lines fit
	size    int // len(RenderLines) of those lines
	textEnd int // where the last fitting line's text ends (its start when none fits)
	next    int // where the line after the last fitting one starts
	// over reports that a line was left out because it did not fit the
	// budget; overTextEnd is where that line's text ends.
	over        bool
	overTextEnd int
}

// measure walks at most limit lines (limit <= 0: every line) of content from
// pos, where line number starts, and counts those whose rendering, added up,
// stays within budget bytes (budget < 0: no bound). It allocates nothing.
func measure(content []byte, pos, number, limit, budget int) measured {
	m := measured{textEnd: pos, next: pos}
	for m.next < len(content) && (limit <= 0 || m.lines < limit) {
		te, end := lineBounds(content, m.next, bytes.IndexByte(content[m.next:], '\n'))
		r := decimalLen(number+m.lines) + 1 + AnchorLen + 1 + (te - m.next) + 1
		if budget >= 0 && m.size+r > budget {
			m.over, m.overTextEnd = true, te
			return m
		}
		m.size += r
		m.lines++
		m.textEnd, m.next = te, end
	}
	return m
}

// annotateRange annotates the n lines of content whose texts run from first
// to textEnd, numbered from number, as Annotate would: one copy of those
// bytes, one string of anchors.
func annotateRange(content []byte, first, textEnd, number, n int) []Line {
	s := string(content[first:textEnd])
	lines := make([]Line, n)
	anchors := make([]byte, AnchorLen*n)
	for i, pos := 0, 0; i < n; i++ {
		te, end := lineBounds(s, pos, strings.IndexByte(s[pos:], '\n'))
		lines[i].Number = number + i
		lines[i].Text = s[pos:te]
		putAnchor(anchors[AnchorLen*i:], sum64(lines[i].Text))
		pos = end
	}
	as := string(anchors)
	for i := range lines {
		lines[i].Anchor = as[AnchorLen*i : AnchorLen*(i+1)]
	}
	return lines
}

// appendRange appends to out what appendLines(out, annotateRange(content,
// first, textEnd, number, n)) appends, annotating nothing.
func appendRange(out, content []byte, first, textEnd, number, n int) []byte {
	s := content[first:textEnd]
	var anchor [AnchorLen]byte
	for i, pos := 0, 0; i < n; i++ {
		te, end := lineBounds(s, pos, bytes.IndexByte(s[pos:], '\n'))
		putAnchor(anchor[:], sum64(s[pos:te]))
		out = strconv.AppendInt(out, int64(number+i), 10)
		out = append(out, ':')
		out = append(out, anchor[:]...)
		out = append(out, '|')
		out = append(out, s[pos:te]...)
		out = append(out, '\n')
		pos = end
	}
	return out
}

// longView is the view of line number whose text is content[start:textEnd]
// when its rendering alone is over maxBytes: the line, cut.
func longView(content []byte, total, number, start, textEnd, maxBytes int) View {
	text := content[start:textEnd]
	keep := max(0, maxBytes-(decimalLen(number)+1+AnchorLen+1+1))
	// keep < len(text), since the whole rendering does not fit. Step back
	// off a UTF-8 continuation byte, at most as far as a sequence reaches.
	for back := 0; keep > 0 && back < utf8.UTFMax-1 && !utf8.RuneStart(text[keep]); back++ {
		keep--
	}
	var anchor [AnchorLen]byte
	putAnchor(anchor[:], sum64(text))
	v := View{Total: total, Long: &LongLine{
		Number: number,
		Anchor: string(anchor[:]),
		Head:   string(text[:keep]),
		Len:    len(text),
		Start:  start,
	}}
	if number < total {
		v.More, v.Next = true, number+1
	}
	return v
}

// lineStart returns the byte offset at which line n (1-based) of content
// starts, where line 1 starts at skip (just after any byte-order mark). A
// line past the last starts at len(content).
func lineStart(content []byte, skip, n int) int {
	pos, need := skip, n-1 // need: line breaks still to pass
	for need > 0 && pos < len(content) {
		chunk := content[pos:min(len(content), pos+skipChunkBytes)]
		if c := bytes.Count(chunk, []byte{'\n'}); c < need {
			need -= c
			pos += len(chunk)
			continue
		}
		for ; need > 0; need-- {
			pos += bytes.IndexByte(content[pos:], '\n') + 1
		}
	}
	return min(pos, len(content))
}

// Render renders the view in display form: RenderLines(v.Lines), or, for a
// cut line, "N:anchor|Head" and a line break, which is the start of the whole
// line's rendering. The result is at most the view's byte bound, unless the
// bound is shorter than a cut line's display prefix.
func (v View) Render() string {
	if l := v.Long; l != nil {
		out := make([]byte, 0, decimalLen(l.Number)+1+AnchorLen+1+len(l.Head)+1)
		out = appendLine(out, Line{Number: l.Number, Anchor: l.Anchor, Text: l.Head})
		return string(append(out, '\n'))
	}
	return RenderLines(v.Lines)
}

// LineCount is len(Annotate(content)), counted without annotating: one
// vectorised count of line breaks, no allocation.
func LineCount(content []byte) int { return countLines(content) }
