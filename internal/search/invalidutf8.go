package search

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"slices"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Go's regexp reads a byte that is not valid UTF-8 as U+FFFD, so "." and
// a negated class such as [^\x00-\x7F] match it; ripgrep's engine never
// matches a pattern onto (or across) an invalid byte, and the Go engine
// keeps ripgrep's meaning. A line holding an invalid byte is matched
// with each such byte replaced by a stand-in code point the line does
// not hold, against the pattern rewritten so that nothing in it matches
// the stand-in: no match can then touch the bytes, while a real U+FFFD
// (valid UTF-8) still matches as ripgrep matches it. The stand-in is, as
// the invalid byte is to ripgrep's ASCII word boundaries, not a word
// character, and it is no line terminator, so anchors see what ripgrep
// sees.

// maxStandInTries bounds the code points tried as a line's stand-in; a
// line holding every one of them (megabytes of distinct code points)
// gets the last one tried.
const maxStandInTries = 1 << 16

// invalidMatcher matches lines holding invalid UTF-8 with ripgrep's
// meaning, compiling one rewritten pattern per stand-in it needs (almost
// always U+FFFD only). It is safe for concurrent use.
type invalidMatcher struct {
	tree *syntax.Regexp // the pattern as Compile parses it

	mu sync.Mutex
	re map[rune]*regexp.Regexp
}

func newInvalidMatcher(o Options) *invalidMatcher {
	flags := "(?m)"
	if o.CaseInsensitive {
		flags = "(?mi)"
	}
	tree, err := syntax.Parse(flags+o.Pattern, syntax.Perl)
	if err != nil {
		return nil // Compile refused it first
	}
	return &invalidMatcher{tree: tree, re: map[rune]*regexp.Regexp{}}
}

// match reports whether line (which holds invalid UTF-8) matches.
func (m *invalidMatcher) match(line []byte) bool {
	z := standIn(line)
	re := m.compiled(z)
	if re == nil {
		return false
	}
	var b []byte
	for i := 0; i < len(line); {
		r, n := utf8.DecodeRune(line[i:])
		if r == utf8.RuneError && n == 1 {
			b = utf8.AppendRune(b, z)
		} else {
			b = append(b, line[i:i+n]...)
		}
		i += n
	}
	return re.Match(b)
}

// standIn returns a code point line does not hold and that has no other
// case form: U+FFFD when the line holds no real one, else the first free
// noncharacter or private-use code point.
func standIn(line []byte) rune {
	z := utf8.RuneError
	next := func(r rune) rune {
		switch {
		case r == utf8.RuneError:
			return 0xFDD0 // the noncharacters U+FDD0..U+FDEF
		case r == 0xFDEF:
			return 0xF0000 // then plane 15's private use area
		}
		return r + 1
	}
	var buf [utf8.UTFMax]byte
	for range maxStandInTries {
		n := utf8.EncodeRune(buf[:], z)
		if !bytes.Contains(line, buf[:n]) && unicode.SimpleFold(z) == z {
			return z
		}
		z = next(z)
	}
	return z
}

// compiled returns the pattern rewritten so nothing in it matches z.
func (m *invalidMatcher) compiled(z rune) *regexp.Regexp {
	m.mu.Lock()
	defer m.mu.Unlock()
	if re, ok := m.re[z]; ok {
		return re
	}
	re, err := regexp.Compile(without(m.tree, z).String())
	if err != nil {
		re = nil
	}
	m.re[z] = re
	return re
}

// without returns a copy of re in which no rune-matching node matches
// z: "." and character classes leave it out, and a literal holding it
// (which the line, not holding z, cannot contain) matches nothing.
func without(re *syntax.Regexp, z rune) *syntax.Regexp {
	out := *re
	out.Sub = nil
	for _, s := range re.Sub {
		out.Sub = append(out.Sub, without(s, z))
	}
	out.Sub0 = [1]*syntax.Regexp{}
	switch re.Op {
	case syntax.OpAnyCharNotNL:
		out.Op = syntax.OpCharClass
		out.Rune = minus([]rune{0, '\n' - 1, '\n' + 1, unicode.MaxRune}, z)
	case syntax.OpAnyChar:
		out.Op = syntax.OpCharClass
		out.Rune = minus([]rune{0, unicode.MaxRune}, z)
	case syntax.OpCharClass:
		out.Rune = minus(re.Rune, z)
		if len(out.Rune) == 0 {
			out.Op = syntax.OpNoMatch
		}
	case syntax.OpLiteral:
		if slices.Contains(re.Rune, z) {
			out.Op, out.Rune = syntax.OpNoMatch, nil
		} else {
			out.Rune = slices.Clone(re.Rune)
		}
	}
	return &out
}

// minus removes z from the ranges of a character class (pairs lo, hi).
func minus(ranges []rune, z rune) []rune {
	var out []rune
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		if z < lo || z > hi {
			out = append(out, lo, hi)
			continue
		}
		if lo < z {
			out = append(out, lo, z-1)
		}
		if z < hi {
			out = append(out, z+1, hi)
		}
	}
	return out
}
