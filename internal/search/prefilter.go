package search

import (
	"bytes"
	"regexp/syntax"
	"unicode"
	"unicode/utf8"
)

// maxNeedles bounds how many alternative literals a prefilter looks for
// at once; a pattern needing more gets no prefilter.
const maxNeedles = 8

// needle is one literal a prefilter looks for: exact bytes, or (fold)
// ASCII letters matched in either case and every other byte exactly.
type needle struct {
	lit  []byte // lower-cased ASCII letters when fold
	fold bool
	// anchor is the index in lit of the byte searched for first (the
	// rarest by byteRank); lower and upper are its forms.
	anchor       int
	lower, upper byte
}

// prefilter finds the positions where a match may start its line: every
// match of the pattern contains one of its needles, so a line holding
// none of them cannot match.
type prefilter struct {
	needles []needle
}

// newPrefilter derives a prefilter from the parsed pattern, or returns
// nil when no literal is required of every match.
func newPrefilter(re *syntax.Regexp) *prefilter {
	lits := required(re.Simplify())
	if len(lits) == 0 {
		return nil
	}
	p := &prefilter{}
	for _, l := range lits {
		p.needles = append(p.needles, newNeedle(l))
	}
	return p
}

// lit is a required literal as required computes it.
type lit struct {
	b    []byte
	fold bool
}

// required returns literals at least one of which every match of re
// contains, or nil when it knows none.
func required(re *syntax.Regexp) []lit {
	switch re.Op {
	case syntax.OpLiteral:
		if l, ok := literalOf(re); ok {
			return []lit{l}
		}
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpConcat:
		var best []lit
		for _, sub := range re.Sub {
			if ls := required(sub); ls != nil && better(ls, best) {
				best = ls
			}
		}
		return best
	case syntax.OpAlternate:
		var all []lit
		for _, sub := range re.Sub {
			ls := required(sub)
			if ls == nil {
				return nil
			}
			all = append(all, ls...)
		}
		if len(all) > maxNeedles {
			return nil
		}
		return all
	}
	return nil
}

// better reports whether the literal set a narrows candidates more than
// b: its shortest literal is longer, or as long with fewer literals.
func better(a, b []lit) bool {
	if b == nil {
		return true
	}
	la, lb := shortest(a), shortest(b)
	return la > lb || la == lb && len(a) < len(b)
}

func shortest(ls []lit) int {
	n := -1
	for _, l := range ls {
		if n < 0 || len(l.b) < n {
			n = len(l.b)
		}
	}
	return n
}

// literalOf returns the longest run of re's literal that a byte search
// can look for: all of it when case matters; when it is folded, the
// longest run of runes whose case forms are all ASCII (every letter but
// k and s, which fold to the Kelvin sign and the long s) or which have
// no other case form. ok is false when no such run exists.
func literalOf(re *syntax.Regexp) (lit, bool) {
	if re.Flags&syntax.FoldCase == 0 {
		var b []byte
		for _, r := range re.Rune {
			b = utf8.AppendRune(b, r)
		}
		return lit{b: b}, len(b) > 0
	}
	var best, cur []byte
	for _, r := range re.Rune {
		if f, ok := foldByte(r); ok {
			cur = utf8.AppendRune(cur, f)
			if len(cur) > len(best) {
				best = cur
			}
			continue
		}
		cur = nil
	}
	return lit{b: best, fold: true}, len(best) > 0
}

// foldByte returns the form of r a folded needle holds (an ASCII letter
// lower-cased), and whether r's case forms are all ASCII or r has none
// but itself.
func foldByte(r rune) (rune, bool) {
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f >= utf8.RuneSelf || r >= utf8.RuneSelf {
			return 0, false
		}
	}
	return unicode.ToLower(r), true
}

// byteRank orders bytes by how common they are in source and text,
// lowest first being rarest: the anchor of a folded needle is its
// rarest byte, so the fewest candidate positions need checking.
func byteRank(c byte) int {
	const common = " etaoinsrlcdhupmfgbyw_.,()vk;=x\"/:-*'0123456789\tj\n{}zq[]>"
	if i := bytes.IndexByte([]byte(common), lowerASCII(c)); i >= 0 {
		return len(common) - i
	}
	return 0
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func newNeedle(l lit) needle {
	n := needle{lit: l.b, fold: l.fold}
	if !l.fold {
		return n
	}
	for i := range l.b {
		if byteRank(l.b[i]) < byteRank(l.b[n.anchor]) {
			n.anchor = i
		}
	}
	c := l.b[n.anchor]
	n.lower, n.upper = c, c
	if 'a' <= c && c <= 'z' {
		n.upper = c - 'a' + 'A'
	}
	return n
}

// index returns the first position at or after from where the needle
// occurs in data, or -1.
func (n *needle) index(data []byte, from int) int {
	if !n.fold {
		if i := bytes.Index(data[from:], n.lit); i >= 0 {
			return from + i
		}
		return -1
	}
	// Look for the anchor byte in either case, then compare the rest.
	lo, up := -2, -2 // next anchor positions of each form; -1: none left
	q := from + n.anchor
	for q < len(data) {
		if lo != -1 && lo < q {
			lo = indexFrom(data, q, n.lower)
		}
		if n.upper == n.lower {
			up = lo
		} else if up != -1 && up < q {
			up = indexFrom(data, q, n.upper)
		}
		a := lo
		if a < 0 || (up >= 0 && up < a) {
			a = up
		}
		if a < 0 {
			return -1
		}
		start := a - n.anchor
		if start+len(n.lit) <= len(data) && foldEqual(data[start:start+len(n.lit)], n.lit) {
			return start
		}
		q = a + 1
	}
	return -1
}

// indexFrom is bytes.IndexByte from position from, or -1.
func indexFrom(data []byte, from int, c byte) int {
	if i := bytes.IndexByte(data[from:], c); i >= 0 {
		return from + i
	}
	return -1
}

// foldEqual reports whether b equals lit (ASCII letters lower-cased)
// with ASCII letters of b in either case.
func foldEqual(b, lit []byte) bool {
	for i, c := range lit {
		if lowerASCII(b[i]) != c {
			return false
		}
	}
	return true
}

// next returns the first position at or after from where any needle
// occurs, or -1. cache holds each needle's last answer (-2 before the
// first), so a needle is looked for again only once from passes it.
func (p *prefilter) next(data []byte, from int, cache []int) int {
	best := -1
	for i := range p.needles {
		if cache[i] == -2 || (cache[i] >= 0 && cache[i] < from) {
			cache[i] = p.needles[i].index(data, from)
		}
		if c := cache[i]; c >= 0 && (best < 0 || c < best) {
			best = c
		}
	}
	return best
}
