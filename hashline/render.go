package hashline

import "strconv"

// renderedLen is len(RenderLine(l)).
func renderedLen(l Line) int {
	return decimalLen(l.Number) + 1 + len(l.Anchor) + 1 + len(l.Text)
}

// decimalLen is the number of bytes strconv writes for n.
func decimalLen(n int) int {
	if n < 0 {
		var buf [20]byte
		return len(strconv.AppendInt(buf[:0], int64(n), 10))
	}
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}

// RenderLine renders l in display form "N:anchor|text", with no terminator.
// HasDisplayPrefix reports true for every rendering of a well-formed Line.
func RenderLine(l Line) string {
	return string(appendLine(make([]byte, 0, renderedLen(l)), l))
}

// appendLine appends RenderLine(l) to out.
func appendLine(out []byte, l Line) []byte {
	out = strconv.AppendInt(out, int64(l.Number), 10)
	out = append(out, ':')
	out = append(out, l.Anchor...)
	out = append(out, '|')
	return append(out, l.Text...)
}

// linesLen is len(RenderLines(lines)).
func linesLen(lines []Line) int {
	n := 0
	for _, l := range lines {
		n += renderedLen(l) + 1
	}
	return n
}

// appendLines appends RenderLines(lines) to out.
func appendLines(out []byte, lines []Line) []byte {
	for _, l := range lines {
		out = append(appendLine(out, l), '\n')
	}
	return out
}

// RenderLines renders each line with RenderLine followed by "\n", in order.
// It is the one renderer for whole files, windows and fresh-anchor regions,
// so all three are byte-identical for the same line.
func RenderLines(lines []Line) string {
	return string(appendLines(make([]byte, 0, linesLen(lines)), lines))
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
