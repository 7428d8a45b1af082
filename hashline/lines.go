package hashline

import (
	"bytes"
	"slices"
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

// lineBounds finds the end of the line starting at pos in s, given lf, the
// index of the first LF in s[pos:] (-1 when there is none). The line's text
// ends at textEnd and the line, with its terminator, at end. A CR just before
// the LF belongs to the terminator; a last line without LF keeps every byte,
// CR included, as text.
func lineBounds[T ~string | ~[]byte](s T, pos, lf int) (textEnd, end int) {
	if lf < 0 {
		return len(s), len(s)
	}
	textEnd, end = pos+lf, pos+lf+1
	if textEnd > pos && s[textEnd-1] == '\r' {
		textEnd--
	}
	return textEnd, end
}

// bomLen is the length of the byte-order mark content starts with, or 0.
func bomLen(content []byte) int {
	if bytes.HasPrefix(content, []byte(bom)) {
		return len(bom)
	}
	return 0
}

// lineIndex is what a plan needs of a content's lines: how many there
// are, how they break, and the spans of the lines its hunks name and of
// the last line, never one span per line.
type lineIndex struct {
	skip   int    // the byte-order mark's length
	n      int    // lines (a final LF does not start another)
	crlf   int    // lines ending in CRLF
	lf     int    // lines ending in a lone LF
	last   span   // line n's span, when n > 0
	wanted []int  // the named line numbers, ascending, unique
	spans  []span // spans[i] is line wanted[i]'s, when it exists
	digest uint64 // the content's hash (sum64)
}

// span returns line i's span (1-based); ok is false when there is no
// line i or it was neither named nor the last.
func (x *lineIndex) span(i int) (span, bool) {
	if i == x.n && i > 0 {
		return x.last, true
	}
	k, found := slices.BinarySearch(x.wanted, i)
	if !found || k >= len(x.spans) {
		return span{}, false
	}
	return x.spans[k], true
}

// scan cuts content into lines (see lineBounds), keeping the spans of
// the lines wanted names (ascending, unique), and computes its digest
// hash. A final LF does not start another line, so empty content (or a
// lone byte-order mark) has no lines. The hash is a serial chain of
// multiplies, the cutting a vectorised search: for a content of at least
// parallelHashBytes the hash runs on a goroutine of its own meanwhile.
func scan(content []byte, wanted []int) *lineIndex {
	x := &lineIndex{skip: bomLen(content), wanted: wanted, spans: make([]span, 0, len(wanted))}
	var hashed chan uint64
	if len(content) >= parallelHashBytes {
		hashed = make(chan uint64, 1)
		go func() { hashed <- sum64(content) }()
	} else {
		x.digest = sum64(content)
	}
	next := 0 // wanted[next] is the next line to keep
	for pos := x.skip; pos < len(content); {
		textEnd, end := lineBounds(content, pos, bytes.IndexByte(content[pos:], '\n'))
		x.n++
		switch end - textEnd {
		case 2:
			x.crlf++
		case 1:
			x.lf++
		}
		x.last = span{pos, textEnd, end}
		if next < len(wanted) && wanted[next] == x.n {
			x.spans = append(x.spans, x.last)
			next++
		}
		pos = end
	}
	if hashed != nil {
		x.digest = <-hashed
	}
	return x
}

// parallelHashBytes is the size from which scan hashes a content on a
// goroutine of its own while it cuts the lines.
const parallelHashBytes = 256 << 10

// countLines is len(Annotate(content)), computed without annotating.
func countLines(content []byte) int {
	rest := content[bomLen(content):]
	if len(rest) == 0 {
		return 0
	}
	n := bytes.Count(rest, []byte{'\n'})
	if rest[len(rest)-1] != '\n' {
		n++
	}
	return n
}

// Annotate returns every line of content, numbered from 1 and anchored. A
// trailing newline does not create an extra empty line, and empty content has
// no lines. Texts share one copy of content, so annotating costs one copy plus
// the Line slice, whatever the number of lines.
func Annotate(content []byte) []Line {
	lines, _ := annotate(content)
	return lines
}

// annotate is Annotate that also returns the digest hash of content,
// computed in the same pass: the whole-content hash and each line's hash are
// independent multiply chains, so the second costs little. Line ends are
// found in that pass too (the rules of lineBounds).
func annotate(content []byte) ([]Line, uint64) {
	skip := bomLen(content)
	digest := sum64(content[:skip])
	n := countLines(content)
	if n == 0 {
		return nil, digest
	}
	s := string(content)
	lines := make([]Line, n)
	anchors := make([]byte, AnchorLen*n)
	pos := skip
	for i := range lines {
		h := uint64(fnvOffset64)
		j := pos
		for ; j < len(s); j++ {
			c := s[j]
			if c == '\n' || (c == '\r' && j+1 < len(s) && s[j+1] == '\n') {
				break
			}
			h = (h ^ uint64(c)) * fnvPrime64
			digest = (digest ^ uint64(c)) * fnvPrime64
		}
		lines[i].Number = i + 1
		lines[i].Text = s[pos:j]
		putAnchor(anchors[AnchorLen*i:], h)
		if j < len(s) && s[j] == '\r' {
			digest = (digest ^ '\r') * fnvPrime64
			j++
		}
		if j < len(s) {
			digest = (digest ^ '\n') * fnvPrime64
			j++
		}
		pos = j
	}
	as := string(anchors)
	for i := range lines {
		lines[i].Anchor = as[AnchorLen*i : AnchorLen*(i+1)]
	}
	return lines, digest
}
