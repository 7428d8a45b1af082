package gitguard

import (
	"errors"
	"fmt"
	"strings"
)

// errGitConfigSyntax is returned (wrapped) by neutraliseGitConfig for a
// file git itself would refuse to parse; the guard moves such a file
// aside whole rather than guess what git would make of it.
var errGitConfigSyntax = errors.New("git config syntax error")

// gitConfigItem is one "key [= value]" entry of a git config file with
// the byte span it occupies: from the key's first byte to the newline
// (or end of file) that ends its value, continuation lines included.
type gitConfigItem struct {
	section, subsection, key string
	// hasSub: the header named a subsection, perhaps an empty one
	// (`[core ""]` and `[core.]` make "core..bare", which is not
	// "core.bare").
	hasSub  bool
	value   string
	boolean bool // a key without "=": git reads it as true
	// start and end are the entry's byte span in the file.
	start, end int
}

// name is the entry's canonical dotted name, as `git config --list`
// prints it (section and key lower-cased, subsection as written).
func (it gitConfigItem) name() string {
	if it.section == "" && !it.hasSub { // git reads a key before any header under its bare name
		return it.key
	}
	if it.hasSub {
		return it.section + "." + it.subsection + "." + it.key
	}
	return it.section + "." + it.key
}

// scanGitConfig parses data as git's own config reader does (config.c:
// a UTF-8 byte order mark, CRLF line ends, comments, "[section]",
// `[section "sub"]` and the old "[section.sub]" headers, entries after a
// header on its line, quoted values, escapes and backslash-newline
// continuations) and returns every entry. Any input git would reject is
// errGitConfigSyntax, never a best guess.
func scanGitConfig(data []byte) ([]gitConfigItem, error) {
	s := &cfgScanner{b: data}
	if len(data) >= 3 && data[0] == 0xef && data[1] == 0xbb && data[2] == 0xbf {
		s.i = 3
	}
	var out []gitConfigItem
	section, sub, hasSub := "", "", false
	comment := false
	for {
		at := s.i
		c := s.next()
		if c == '\n' {
			if s.atEnd() {
				return out, nil
			}
			comment = false
			continue
		}
		if comment {
			continue
		}
		switch {
		case isCSpace(c):
			continue
		case c == '#' || c == ';':
			comment = true
			continue
		case c == '[':
			var err error
			if section, sub, hasSub, err = s.header(); err != nil {
				return nil, err
			}
			continue
		case !isAlpha(c):
			return nil, fmt.Errorf("%w: unexpected byte %q at offset %d", errGitConfigSyntax, c, at)
		}
		it, err := s.entry(c, at)
		if err != nil {
			return nil, err
		}
		it.section, it.subsection, it.hasSub = section, sub, hasSub
		out = append(out, it)
	}
}

type cfgScanner struct {
	b []byte
	i int
}

// next returns the next byte, reading CRLF as "\n"; at the end of the
// data it returns '\n' (and atEnd turns true), every time, as git does:
// a last line without a newline ends like any other.
func (s *cfgScanner) next() byte {
	if s.i >= len(s.b) {
		s.i = len(s.b) + 1
		return '\n'
	}
	c := s.b[s.i]
	s.i++
	if c == '\r' && s.i < len(s.b) && s.b[s.i] == '\n' {
		s.i++
		return '\n'
	}
	return c
}

// atEnd reports whether the data is used up.
func (s *cfgScanner) atEnd() bool { return s.i > len(s.b) }

func (s *cfgScanner) header() (section, sub string, hasSub bool, err error) {
	var name strings.Builder
	for {
		c := s.next()
		if s.atEnd() {
			return "", "", false, fmt.Errorf("%w: unterminated section header", errGitConfigSyntax)
		}
		if isCSpace(c) {
			sub, err := s.subsection()
			if err != nil {
				return "", "", false, err
			}
			if name.Len() == 0 {
				return "", "", false, fmt.Errorf("%w: empty section name", errGitConfigSyntax)
			}
			return name.String(), sub, true, nil
		}
		if c == ']' {
			if name.Len() == 0 {
				return "", "", false, fmt.Errorf("%w: empty section name", errGitConfigSyntax)
			}
			n := name.String()
			// "[a.b]" is the old form: section a, subsection b, all
			// lower case ("[.b]": no section, subsection b).
			sec, rest, ok := strings.Cut(n, ".")
			return sec, rest, ok, nil
		}
		if !isKeyChar(c) && c != '.' {
			return "", "", false, fmt.Errorf("%w: bad byte %q in section name", errGitConfigSyntax, c)
		}
		name.WriteByte(lower(c))
	}
}

// subsection reads ` "sub"]` after a section name and a blank.
func (s *cfgScanner) subsection() (string, error) {
	c := s.next()
	for c == ' ' || c == '\t' {
		c = s.next()
	}
	if c != '"' {
		return "", fmt.Errorf("%w: subsection must be quoted", errGitConfigSyntax)
	}
	var b strings.Builder
	for {
		c := s.next()
		if c == '\n' {
			return "", fmt.Errorf("%w: unterminated subsection", errGitConfigSyntax)
		}
		if c == '"' {
			break
		}
		if c == '\\' {
			if c = s.next(); c == '\n' {
				return "", fmt.Errorf("%w: unterminated subsection", errGitConfigSyntax)
			}
		}
		b.WriteByte(c)
	}
	if s.next() != ']' {
		return "", fmt.Errorf("%w: subsection not followed by ]", errGitConfigSyntax)
	}
	return b.String(), nil
}

// entry reads a key (whose first byte, c at offset at, was read) and its
// value.
func (s *cfgScanner) entry(c byte, at int) (gitConfigItem, error) {
	it := gitConfigItem{start: at}
	var key strings.Builder
	key.WriteByte(lower(c))
	for {
		c = s.next()
		if s.atEnd() || !isKeyChar(c) {
			break
		}
		key.WriteByte(lower(c))
	}
	it.key = key.String()
	for c == ' ' || c == '\t' {
		c = s.next()
	}
	if c == '\n' {
		it.boolean = true
		it.end = s.lineEnd()
		return it, nil
	}
	if c != '=' {
		return it, fmt.Errorf("%w: key %q not followed by '='", errGitConfigSyntax, it.key)
	}
	v, err := s.value()
	if err != nil {
		return it, fmt.Errorf("%w in the value of %q", err, it.key)
	}
	it.value = v
	it.end = s.lineEnd()
	return it, nil
}

// lineEnd is the offset of the newline just read (so a span ends before
// it, and a removed entry leaves its line's end in place).
func (s *cfgScanner) lineEnd() int {
	end := s.i - 1
	if end >= len(s.b) {
		return len(s.b)
	}
	if end > 0 && s.b[end] == '\n' && s.b[end-1] == '\r' {
		end--
	}
	return end
}

func (s *cfgScanner) value() (string, error) {
	var b strings.Builder
	quote, comment := false, false
	spaces := 0
	for {
		c := s.next()
		if c == '\n' {
			if quote {
				return "", fmt.Errorf("%w: unterminated quote", errGitConfigSyntax)
			}
			return b.String(), nil
		}
		if comment {
			continue
		}
		if isCSpace(c) && !quote {
			if b.Len() > 0 {
				spaces++
			}
			continue
		}
		if !quote && (c == ';' || c == '#') {
			comment = true
			continue
		}
		for ; spaces > 0; spaces-- {
			b.WriteByte(' ')
		}
		switch c {
		case '\\':
			c = s.next()
			switch {
			case c == '\n':
				continue
			case c == 't':
				c = '\t'
			case c == 'b':
				c = '\b'
			case c == 'n':
				c = '\n'
			case c == '\\' || c == '"':
			default:
				return "", fmt.Errorf("%w: bad escape", errGitConfigSyntax)
			}
			b.WriteByte(c)
		case '"':
			quote = !quote
		default:
			b.WriteByte(c)
		}
	}
}

// isCSpace reports whether c is a blank to git's config reader: its
// isspace (sane_ctype's GIT_SPACE) is space, tab, LF and CR only; \v
// and \f are value bytes to it, and must be to the guard too.
func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}
func isAlpha(c byte) bool   { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isKeyChar(c byte) bool { return isAlpha(c) || c >= '0' && c <= '9' || c == '-' }
func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// neutraliseGitConfig returns data without every entry the allowlist
// does not keep (gitAllowedEntry; worktree judges core.worktree values,
// nil: none is kept) and the names of the entries it removed, in file
// order; out is data itself when nothing was removed. Everything else
// (comments, headers, kept entries) stays byte for byte. A file git
// would refuse is errGitConfigSyntax; the result is parsed again and
// must hold only allowed entries, or the call fails rather than return
// it.
func neutraliseGitConfig(data []byte, worktree func(string) bool) (out []byte, removed []string, err error) {
	items, err := scanGitConfig(data)
	if err != nil {
		return nil, nil, err
	}
	var cut [][2]int
	for _, it := range items {
		if !gitAllowedEntry(it, worktree) {
			removed = append(removed, it.name())
			cut = append(cut, [2]int{it.start, it.end})
		}
	}
	if len(cut) == 0 {
		return data, nil, nil
	}
	out = make([]byte, 0, len(data))
	prev := 0
	for _, c := range cut {
		out = append(out, data[prev:c[0]]...)
		prev = c[1]
	}
	out = append(out, data[prev:]...)
	again, err := scanGitConfig(out)
	if err != nil {
		return nil, nil, fmt.Errorf("rewritten config does not parse: %w", err)
	}
	for _, it := range again {
		if !gitAllowedEntry(it, worktree) {
			return nil, nil, fmt.Errorf("%w: %s survived the rewrite", errGitConfigSyntax, it.name())
		}
	}
	return out, removed, nil
}
