package hashline

import (
	"unicode/utf8"
)

// decodePlain decodes data (trimmed of surrounding space) as DecodeHunks
// does, when it is in the plain form json.Marshal and models write: an
// array of objects whose keys are exactly op, start, end and lines, each
// at most once, op a string naming an op, start and end a ref string or
// null, lines an array of strings, and strings without \u escapes
// holding valid UTF-8. Every string lands in one allocation, every ref in
// another. ok is false for anything else, valid or not, and nothing is
// decided then: DecodeHunks takes the general path, which gives the same
// hunks or says what is wrong.
func decodePlain(data []byte) (hunks []Hunk, ok bool) {
	d := plainDecoder{data: data, text: make([]byte, 0, len(data))}
	if !d.array() || d.skipSpace() != len(d.data) {
		return nil, false
	}
	all := string(d.text)
	at := func(s textSpan) string { return all[s.from:s.to] }
	lines := make([]string, len(d.lines))
	for i, s := range d.lines {
		lines[i] = at(s)
	}
	refs := make([]Ref, 0, d.refs)
	ref := func(s textSpan) (*Ref, bool) {
		r, err := ParseRef(at(s))
		if err != nil {
			return nil, false
		}
		refs = append(refs, r) // within its capacity: no pointer moves
		return &refs[len(refs)-1], true
	}
	hunks = make([]Hunk, len(d.hunks))
	for i, r := range d.hunks {
		h := &hunks[i]
		h.Op, h.Lines = Op(at(r.op)), lines[r.linesFrom:r.linesTo:r.linesTo]
		if !h.Op.valid() {
			return nil, false
		}
		if r.hasStart {
			if h.Start, ok = ref(r.start); !ok {
				return nil, false
			}
		}
		if r.hasEnd {
			if h.End, ok = ref(r.end); !ok {
				return nil, false
			}
		}
	}
	return hunks, true
}

// textSpan is a decoded string: plainDecoder.text[from:to].
type textSpan struct{ from, to int }

// plainHunk is a hunk as plainDecoder reads it, its strings as spans.
type plainHunk struct {
	op                 textSpan
	start, end         textSpan
	hasStart, hasEnd   bool
	linesFrom, linesTo int // its lines: plainDecoder.lines[linesFrom:linesTo]
}

// plainDecoder reads the plain form decodePlain accepts. Each method
// reports false at anything outside it.
type plainDecoder struct {
	data  []byte
	pos   int
	text  []byte // every decoded string, back to back
	lines []textSpan
	hunks []plainHunk
	refs  int // refs set
}

// skipSpace skips JSON white space and returns the position reached.
func (d *plainDecoder) skipSpace() int {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return d.pos
		}
	}
	return d.pos
}

// next skips space and consumes c if it comes next.
func (d *plainDecoder) next(c byte) bool {
	if d.skipSpace() < len(d.data) && d.data[d.pos] == c {
		d.pos++
		return true
	}
	return false
}

func (d *plainDecoder) array() bool {
	if !d.next('[') {
		return false
	}
	if d.next(']') {
		return true
	}
	for {
		if !d.object() {
			return false
		}
		if d.next(']') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

func (d *plainDecoder) object() bool {
	if !d.next('{') {
		return false
	}
	var h plainHunk
	var seen [4]bool // op, start, end, lines
	for {
		key, ok := d.key()
		if !ok || seen[key] || !d.next(':') {
			return false
		}
		seen[key] = true
		switch key {
		case 0:
			if h.op, ok = d.str(); !ok {
				return false
			}
		case 1, 2:
			if d.null() {
				break
			}
			s, ok := d.str()
			if !ok {
				return false
			}
			d.refs++
			if key == 1 {
				h.start, h.hasStart = s, true
			} else {
				h.end, h.hasEnd = s, true
			}
		case 3:
			h.linesFrom = len(d.lines)
			if !d.stringArray() {
				return false
			}
			h.linesTo = len(d.lines)
		}
		if d.next('}') {
			break
		}
		if !d.next(',') {
			return false
		}
	}
	if !seen[0] || !seen[3] {
		return false
	}
	d.hunks = append(d.hunks, h)
	return true
}

// key reads an object key and returns which of op, start, end and lines
// it is (0 to 3).
func (d *plainDecoder) key() (int, bool) {
	if !d.next('"') {
		return 0, false
	}
	for i, k := range [...]string{"op", "start", "end", "lines"} {
		if end := d.pos + len(k); end < len(d.data) && string(d.data[d.pos:end]) == k && d.data[end] == '"' {
			d.pos = end + 1
			return i, true
		}
	}
	return 0, false
}

// null consumes a null if one comes next.
func (d *plainDecoder) null() bool {
	if d.skipSpace()+4 <= len(d.data) && string(d.data[d.pos:d.pos+4]) == "null" {
		d.pos += 4
		return true
	}
	return false
}

func (d *plainDecoder) stringArray() bool {
	if !d.next('[') {
		return false
	}
	if d.next(']') {
		return true
	}
	for {
		s, ok := d.str()
		if !ok {
			return false
		}
		d.lines = append(d.lines, s)
		if d.next(']') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

// str reads a string onto d.text, decoding the escapes of one character
// (\" \\ \/ \b \f \n \r \t); a \u escape, a control character or invalid
// UTF-8 is outside the plain form.
func (d *plainDecoder) str() (textSpan, bool) {
	if !d.next('"') {
		return textSpan{}, false
	}
	s := textSpan{from: len(d.text)}
	nonASCII := false
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			s.to = len(d.text)
			if nonASCII && !utf8.Valid(d.text[s.from:s.to]) {
				return textSpan{}, false
			}
			return s, true
		case c < 0x20:
			return textSpan{}, false
		case c == '\\':
			if d.pos+1 >= len(d.data) {
				return textSpan{}, false
			}
			var e byte
			switch d.data[d.pos+1] {
			case '"', '\\', '/':
				e = d.data[d.pos+1]
			case 'b':
				e = '\b'
			case 'f':
				e = '\f'
			case 'n':
				e = '\n'
			case 'r':
				e = '\r'
			case 't':
				e = '\t'
			default:
				return textSpan{}, false
			}
			d.text = append(d.text, e)
			d.pos += 2
		default:
			// A run of plain bytes at once.
			start := d.pos
			for d.pos < len(d.data) {
				c := d.data[d.pos]
				if c == '"' || c == '\\' || c < 0x20 {
					break
				}
				if c >= utf8.RuneSelf {
					nonASCII = true
				}
				d.pos++
			}
			d.text = append(d.text, d.data[start:d.pos]...)
		}
	}
	return textSpan{}, false
}
