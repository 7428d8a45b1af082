package search

import (
	"encoding/base64"
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxJSONDepth bounds how deeply the event scanner nests into values it
// skips (the same bound encoding/json keeps).
const maxJSONDepth = 10000

// errJSON is the scanner's one failure: the line is not the JSON it
// claims to be, or a field the collector uses has the wrong type.
var errJSON = errors.New("malformed JSON")

// rgFields are the fields of one event that the collector uses.
type rgFields struct {
	typ          []byte
	path, lines  rgText
	lineNumber   int
	hasLine      bool
	binaryOffset bool
}

// rgText is ripgrep's arbitrary-data object: {"text": "..."} for UTF-8,
// {"bytes": "<base64>"} otherwise.
type rgText struct {
	text, bytes []byte
	hasText     bool
	hasBytes    bool
}

func (t rgText) decode() ([]byte, bool, error) {
	switch {
	case t.hasText:
		return t.text, true, nil
	case t.hasBytes:
		b := make([]byte, base64.StdEncoding.DecodedLen(len(t.bytes)))
		n, err := base64.StdEncoding.Decode(b, t.bytes)
		return b[:n], true, err
	}
	return nil, false, nil
}

// scanEvent reads one ripgrep --json event. It is a strict JSON reader
// for the fields the collector uses and a validating skipper for the
// rest: the line must be one JSON value (an object, or null) and nothing
// else; keys match exactly; the last of duplicate keys wins; a used
// field of the wrong type fails the scan. It allocates only for strings
// with escapes and base64 payloads.
func scanEvent(line []byte) (rgFields, error) {
	s := jsonScanner{b: line}
	var f rgFields
	s.space()
	if !s.literal("null") {
		err := s.object(func(key []byte) error {
			switch string(key) {
			case "type":
				v, null, err := s.stringOrNull()
				if !null {
					f.typ = v
				}
				return err
			case "data":
				return s.objectOrNull(func(key []byte) error { return f.dataField(&s, key) })
			}
			return s.skip(1)
		})
		if err != nil {
			return f, err
		}
	}
	s.space()
	if s.i != len(s.b) {
		return f, errJSON
	}
	return f, nil
}

// dataField reads one field of an event's data object.
func (f *rgFields) dataField(s *jsonScanner, key []byte) error {
	switch string(key) {
	case "path":
		return s.text(&f.path)
	case "lines":
		return s.text(&f.lines)
	case "line_number":
		n, null, err := s.intOrNull()
		f.lineNumber, f.hasLine = n, !null
		return err
	case "binary_offset":
		_, null, err := s.intOrNull()
		f.binaryOffset = !null
		return err
	}
	return s.skip(2)
}

// jsonScanner walks one line of JSON.
type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// literal consumes word (true, false, null) if it comes next.
func (s *jsonScanner) literal(word string) bool {
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return true
	}
	return false
}

// object reads {"key": value, ...}, calling field for each key with the
// scanner positioned at its value; field must consume the value.
func (s *jsonScanner) object(field func(key []byte) error) error {
	return s.sequence('{', '}', func() error {
		key, err := s.string()
		if err != nil {
			return err
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return errJSON
		}
		s.i++
		s.space()
		return field(key)
	})
}

// sequence reads open, then elements separated by commas, then close
// (an object's members or an array's values), calling elem at each
// element's start; elem must consume the element.
func (s *jsonScanner) sequence(open, close byte, elem func() error) error {
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != open {
		return errJSON
	}
	s.i++
	s.space()
	if s.i < len(s.b) && s.b[s.i] == close {
		s.i++
		return nil
	}
	for {
		s.space()
		if err := elem(); err != nil {
			return err
		}
		s.space()
		if s.i >= len(s.b) {
			return errJSON
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case close:
			s.i++
			return nil
		default:
			return errJSON
		}
	}
}

// objectOrNull reads an object, or null (which sets nothing).
func (s *jsonScanner) objectOrNull(field func(key []byte) error) error {
	if s.literal("null") {
		return nil
	}
	return s.object(field)
}

// text reads a ripgrep arbitrary-data object into t, or null.
func (s *jsonScanner) text(t *rgText) error {
	return s.objectOrNull(func(key []byte) error {
		switch string(key) {
		case "text":
			v, null, err := s.stringOrNull()
			t.text, t.hasText = v, !null
			return err
		case "bytes":
			v, null, err := s.stringOrNull()
			t.bytes, t.hasBytes = v, !null
			return err
		}
		return s.skip(3)
	})
}

// stringOrNull reads a string, or null.
func (s *jsonScanner) stringOrNull() (v []byte, null bool, err error) {
	if s.literal("null") {
		return nil, true, nil
	}
	v, err = s.string()
	return v, false, err
}

// intOrNull reads an integer that fits an int, or null. Fractions and
// exponents fail, as they do for encoding/json decoding into an int.
func (s *jsonScanner) intOrNull() (n int, null bool, err error) {
	if s.literal("null") {
		return 0, true, nil
	}
	start := s.i
	if err := s.number(); err != nil {
		return 0, false, err
	}
	n, perr := strconv.Atoi(string(s.b[start:s.i]))
	if perr != nil {
		return 0, false, errJSON
	}
	return n, false, nil
}

// string reads a JSON string and returns its contents, unescaped. The
// result aliases the line when the string has no escapes.
func (s *jsonScanner) string() ([]byte, error) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, errJSON
	}
	s.i++
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			v := s.b[start:s.i]
			s.i++
			return v, nil
		case c == '\\':
			return s.escapedString(start)
		case c < 0x20:
			return nil, errJSON
		default:
			s.i++
		}
	}
	return nil, errJSON
}

// escapedString finishes a string whose contents start at start and
// whose first escape is at s.i.
func (s *jsonScanner) escapedString(start int) ([]byte, error) {
	out := append([]byte(nil), s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return out, nil
		case c < 0x20:
			return nil, errJSON
		case c != '\\':
			out = append(out, c)
			s.i++
			continue
		}
		if s.i+1 >= len(s.b) {
			return nil, errJSON
		}
		e := s.b[s.i+1]
		s.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return nil, errJSON
			}
			if utf16.IsSurrogate(r) {
				// A valid pair makes one rune; anything else is U+FFFD,
				// as encoding/json decodes it.
				r2 := utf8.RuneError
				if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
					save := s.i
					s.i += 2
					if lo, ok := s.hex4(); ok {
						if d := utf16.DecodeRune(r, lo); d != utf8.RuneError {
							r2 = d
						} else {
							s.i = save // the second escape stands alone
						}
					} else {
						return nil, errJSON
					}
				}
				r = r2
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, errJSON
		}
	}
	return nil, errJSON
}

// hex4 reads the four hex digits of a \u escape.
func (s *jsonScanner) hex4() (rune, bool) {
	if s.i+4 > len(s.b) {
		return 0, false
	}
	var r rune
	for _, c := range s.b[s.i : s.i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	s.i += 4
	return r, true
}

// number reads a JSON number.
func (s *jsonScanner) number() error {
	b := s.b
	if s.i < len(b) && b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(b) && b[s.i] == '0':
		s.i++
	case s.i < len(b) && '1' <= b[s.i] && b[s.i] <= '9':
		s.digits()
	default:
		return errJSON
	}
	if s.i < len(b) && b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return errJSON
		}
	}
	if s.i < len(b) && (b[s.i] == 'e' || b[s.i] == 'E') {
		s.i++
		if s.i < len(b) && (b[s.i] == '+' || b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return errJSON
		}
	}
	return nil
}

func (s *jsonScanner) digits() int {
	n := 0
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

// skip reads and discards one value at nesting depth.
func (s *jsonScanner) skip(depth int) error {
	if depth > maxJSONDepth {
		return errJSON
	}
	if s.i >= len(s.b) {
		return errJSON
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return s.skipString()
	case c == '{':
		return s.object(func([]byte) error { return s.skip(depth + 1) })
	case c == '[':
		return s.sequence('[', ']', func() error { return s.skip(depth + 1) })
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	case s.literal("true"), s.literal("false"), s.literal("null"):
		return nil
	}
	return errJSON
}

// skipString validates and passes over a string without unescaping it.
func (s *jsonScanner) skipString() error {
	s.i++ // the opening quote
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return nil
		case c < 0x20:
			return errJSON
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return errJSON
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				s.i += 2
				if _, ok := s.hex4(); !ok {
					return errJSON
				}
			default:
				return errJSON
			}
		default:
			s.i++
		}
	}
	return errJSON
}
