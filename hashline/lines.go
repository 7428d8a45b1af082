package hashline

import (
	"bytes"
	"strconv"
	"strings"
)

// bom is the UTF-8 byte-order mark. When a content starts with it, it belongs
// to the file, not to line 1's text, and edits keep it.
const bom = "\xef\xbb\xbf"

// Line is one line of a content as a reader sees it.
type Line struct {
	// Number is the 1-based line number.
	Number int
	// Anchor is AnchorOf(Text).
	Anchor string
	// Text is the line without its terminator ("\n" or "\r\n") and, for
	// line 1, without a leading byte-order mark.
	Text string
}

// span locates one line inside a content: its text is content[start:textEnd]
// and its terminator content[textEnd:end] ("\n", "\r\n", or "" for a last
// line that has none).
type span struct{ start, textEnd, end int }

// split cuts content into lines. A line ends at each LF; a CR immediately
// before the LF belongs to the terminator. A final LF does not start another
// line, so empty content (or a lone byte-order mark) has no lines.
func split(content []byte) (bomLen int, spans []span) {
	if bytes.HasPrefix(content, []byte(bom)) {
		bomLen = len(bom)
	}
	rest := content[bomLen:]
	if len(rest) == 0 {
		return bomLen, nil
	}
	spans = make([]span, 0, bytes.Count(rest, []byte{'\n'})+1)
	pos := bomLen
	for pos < len(content) {
		i := bytes.IndexByte(content[pos:], '\n')
		if i < 0 {
			spans = append(spans, span{pos, len(content), len(content)})
			break
		}
		end := pos + i + 1
		textEnd := pos + i
		if textEnd > pos && content[textEnd-1] == '\r' {
			textEnd--
		}
		spans = append(spans, span{pos, textEnd, end})
		pos = end
	}
	return bomLen, spans
}

// Annotate returns every line of content, numbered from 1 and anchored. A
// trailing newline does not create an extra empty line, and empty content has
// no lines. Texts share one copy of content, so annotating costs one copy plus
// the Line slice, whatever the number of lines.
func Annotate(content []byte) []Line {
	_, spans := split(content)
	if len(spans) == 0 {
		return nil
	}
	s := string(content)
	anchors := make([]byte, AnchorLen*len(spans))
	for i, sp := range spans {
		putAnchor(anchors[AnchorLen*i:], sum64(s[sp.start:sp.textEnd]))
	}
	as := string(anchors)
	lines := make([]Line, len(spans))
	for i, sp := range spans {
		lines[i] = Line{
			Number: i + 1,
			Anchor: as[AnchorLen*i : AnchorLen*(i+1)],
			Text:   s[sp.start:sp.textEnd],
		}
	}
	return lines
}

// renderedLen is len(RenderLine(l)).
func renderedLen(l Line) int {
	return decimalLen(l.Number) + 1 + len(l.Anchor) + 1 + len(l.Text)
}

func decimalLen(n int) int {
	if n < 0 {
		return 1 + decimalLen(-n)
	}
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}

// RenderLine renders l in display form "N:anchor|text", with no terminator.
// HasDisplayPrefix reports true for every rendering of a well-formed Line.
func RenderLine(l Line) string {
	var b strings.Builder
	b.Grow(renderedLen(l))
	writeLine(&b, l)
	return b.String()
}

func writeLine(b *strings.Builder, l Line) {
	var num [20]byte
	b.Write(strconv.AppendInt(num[:0], int64(l.Number), 10))
	b.WriteByte(':')
	b.WriteString(l.Anchor)
	b.WriteByte('|')
	b.WriteString(l.Text)
}

// RenderLines renders each line with RenderLine followed by "\n", in order.
// It is the one renderer for whole files, windows and fresh-anchor regions,
// so all three are byte-identical for the same line.
func RenderLines(lines []Line) string {
	n := 0
	for _, l := range lines {
		n += renderedLen(l) + 1
	}
	var b strings.Builder
	b.Grow(n)
	for _, l := range lines {
		writeLine(&b, l)
		b.WriteByte('\n')
	}
	return b.String()
}

// Window selects the lines a windowed read shows. offset is the 1-based number
// of the first line; an offset below 1 is read as 1. limit is the most lines
// to return; limit <= 0 means every line from offset on. The total is
// len(lines).
//
// win is a subslice of lines (never a copy). more reports whether lines remain
// after the window, and next is then the offset that continues the read
// (the number of the line after the window); next is 0 when more is false.
// An offset past the last line yields an empty window with more false.
func Window(lines []Line, offset, limit int) (win []Line, next int, more bool) {
	if offset < 1 {
		offset = 1
	}
	total := len(lines)
	if offset > total {
		return lines[total:], 0, false
	}
	end := total
	if limit > 0 && limit < total-offset+1 {
		end = offset - 1 + limit
	}
	win = lines[offset-1 : end]
	if end < total {
		return win, end + 1, true
	}
	return win, 0, false
}

// HasDisplayPrefix reports whether s begins with the display prefix
// RenderLine writes: one or more ASCII digits, a colon, exactly eight
// lowercase hex digits, and a pipe ("12:ab12cd34|"). A bare eight-hex token
// ("deadbeef = 1") is not a prefix, since real lines begin with hex constants.
func HasDisplayPrefix(s string) bool {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || i >= len(s) || s[i] != ':' {
		return false
	}
	i++
	if len(s)-i < AnchorLen+1 {
		return false
	}
	if !isAnchor(s[i : i+AnchorLen]) {
		return false
	}
	return s[i+AnchorLen] == '|'
}

// isAnchor reports whether s is exactly AnchorLen lowercase hex digits.
func isAnchor(s string) bool {
	if len(s) != AnchorLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
