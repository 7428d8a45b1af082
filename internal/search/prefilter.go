package search

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"regexp/syntax"
	"unicode"
	"unicode/utf8"
)

// maxNeedles bounds how many alternative needles a prefilter looks for
// at once; a pattern needing more gets no prefilter.
const maxNeedles = 8

// maxAnchorBytes bounds the bytes a needle's anchor position may hold:
// each is looked for with its own bytes.IndexByte.
const maxAnchorBytes = 2

// byteSet is a set of bytes.
type byteSet [4]uint64

func (s *byteSet) add(c byte)      { s[c>>6] |= 1 << (c & 63) }
func (s *byteSet) has(c byte) bool { return s[c>>6]&(1<<(c&63)) != 0 }
func (s *byteSet) size() int {
	return bits.OnesCount64(s[0]) + bits.OnesCount64(s[1]) + bits.OnesCount64(s[2]) + bits.OnesCount64(s[3])
}
func singleton(c byte) (s byteSet) { s.add(c); return s }
func (s *byteSet) members() (out []byte) {
	for c := 0; c < 256; c++ {
		if s.has(byte(c)) {
			out = append(out, byte(c))
		}
	}
	return out
}

// seq is a run of byte sets every match of the pattern passes through
// in order, one byte each: a literal (a singleton per byte), a letter
// of a case-insensitive literal ({a, A}), an ASCII class ([0-9]).
type seq []byteSet

// selectivity is how much a seq narrows candidates: the bits of
// information its positions carry (8 for a byte, 7 for a letter either
// case, about 4.7 for a digit), in hundredths.
func (q seq) selectivity() int {
	n := 0
	for i := range q {
		n += 800 - int(100*log2(q[i].size()))
	}
	return n
}

func log2(n int) float64 {
	f := 0.0
	for ; n > 1; n >>= 1 {
		f++
	}
	return f
}

// searchable reports whether q has a position a byte search can anchor
// on.
func (q seq) searchable() bool {
	for i := range q {
		if q[i].size() <= maxAnchorBytes {
			return true
		}
	}
	return false
}

// needle is one seq a prefilter looks for.
type needle struct {
	q     seq
	exact []byte // q's bytes when every position is a singleton
	// anchor is the position looked for first: the one with the fewest
	// bytes, the rarest by byteRank among those; its bytes are in
	// anchorBytes.
	anchor      int
	anchorBytes []byte
}

// prefilter finds the positions where a match may lie: every match of
// the pattern contains one of its needles, so a line holding none of
// them cannot match.
type prefilter struct {
	needles []needle
}

// newPrefilter derives a prefilter from the parsed pattern, or returns
// nil when no searchable run is required of every match.
func newPrefilter(re *syntax.Regexp) *prefilter {
	qs := required(re.Simplify())
	if len(qs) == 0 {
		return nil
	}
	p := &prefilter{}
	for _, q := range qs {
		p.needles = append(p.needles, newNeedle(q))
	}
	return p
}

// required returns seqs at least one of which every match of re passes
// through, or nil when it knows none.
func required(re *syntax.Regexp) []seq {
	switch re.Op {
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpLiteral, syntax.OpCharClass, syntax.OpConcat:
		// The runs of fixed-width sets the node passes through, best first.
		var best []seq
		var cur seq
		flush := func() {
			if cur.searchable() && better([]seq{cur}, best) {
				best = []seq{cur}
			}
			cur = nil
		}
		subs := re.Sub
		if re.Op != syntax.OpConcat {
			subs = []*syntax.Regexp{re}
		}
		for _, sub := range subs {
			if sub.Op == syntax.OpLiteral {
				// Rune by rune: a rune folded outside ASCII ends a run.
				for _, r := range sub.Rune {
					q, ok := runeSets(r, sub.Flags&syntax.FoldCase != 0)
					if !ok {
						flush()
						continue
					}
					cur = append(cur, q...)
				}
				continue
			}
			if q, fixed := sets(sub); fixed {
				cur = append(cur, q...)
				continue
			}
			// A node of varying width: the run goes on through the sets
			// it always begins with, then ends; the node may require a
			// run of its own.
			if m, ok := minSets(sub); ok {
				cur = append(cur, m...)
			}
			flush()
			if sub.Op != syntax.OpCharClass {
				if qs := required(sub); qs != nil && better(qs, best) {
					best = qs
				}
			}
		}
		flush()
		return best
	case syntax.OpAlternate:
		var all []seq
		for _, sub := range re.Sub {
			qs := required(sub)
			if qs == nil {
				return nil
			}
			all = append(all, qs...)
		}
		if len(all) > maxNeedles {
			return nil
		}
		return all
	}
	return nil
}

// sets returns the byte sets of a node that always matches the same
// number of bytes, each from a set: fixed is false for any other node
// (of varying width, or whose bytes no set sequence describes, such as
// a non-ASCII class or a letter folded outside ASCII). A zero-width
// assertion is fixed with no sets.
func sets(re *syntax.Regexp) (q seq, fixed bool) {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return nil, true
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			s, ok := runeSets(r, re.Flags&syntax.FoldCase != 0)
			if !ok {
				return nil, false
			}
			q = append(q, s...)
		}
		return q, true
	case syntax.OpCharClass:
		var s byteSet
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i+1] >= utf8.RuneSelf {
				return nil, false
			}
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				s.add(byte(r))
			}
		}
		return seq{s}, true
	case syntax.OpCapture:
		return sets(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min != re.Max {
			return nil, false
		}
		sub, ok := sets(re.Sub[0])
		if !ok {
			return nil, false
		}
		for range re.Min {
			q = append(q, sub...)
		}
		return q, true
	case syntax.OpConcat:
		for _, s := range re.Sub {
			sub, ok := sets(s)
			if !ok {
				return nil, false
			}
			q = append(q, sub...)
		}
		return q, true
	}
	return nil, false
}

// minSets returns the sets a node of varying width always begins with:
// its least count of a fixed child (x+ and x{2,} begin with x, x{2,5}
// with xx).
func minSets(re *syntax.Regexp) (seq, bool) {
	switch re.Op {
	case syntax.OpPlus:
		return sets(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min < 1 {
			return nil, false
		}
		sub, ok := sets(re.Sub[0])
		if !ok {
			return nil, false
		}
		var q seq
		for range re.Min {
			q = append(q, sub...)
		}
		return q, true
	}
	return nil, false
}

// runeSets returns the byte sets a literal rune matches: its UTF-8
// bytes when case matters or it has no other case form, {lower, upper}
// for a folded ASCII letter whose forms are all ASCII (every letter but
// k and s, which fold to the Kelvin sign and the long s); ok is false
// otherwise.
func runeSets(r rune, fold bool) (seq, bool) {
	if !fold || unicode.SimpleFold(r) == r {
		var q seq
		for _, c := range utf8.AppendRune(nil, r) {
			q = append(q, singleton(c))
		}
		return q, true
	}
	var s byteSet
	for g := r; ; g = unicode.SimpleFold(g) {
		if g >= utf8.RuneSelf {
			return nil, false
		}
		s.add(byte(g))
		if unicode.SimpleFold(g) == r {
			break
		}
	}
	return seq{s}, true
}

// better reports whether the seq set a narrows candidates more than b:
// its least selective seq carries more, or as much with fewer seqs.
func better(a, b []seq) bool {
	if b == nil {
		return true
	}
	la, lb := least(a), least(b)
	return la > lb || la == lb && len(a) < len(b)
}

func least(qs []seq) int {
	n := -1
	for _, q := range qs {
		if s := q.selectivity(); n < 0 || s < n {
			n = s
		}
	}
	return n
}

// byteRank orders bytes by how common they are in source and text,
// lowest first being rarest: a needle anchors on its rarest position,
// so the fewest candidate positions need checking.
func byteRank(c byte) int {
	const common = " etaoinsrlcdhupmfgbyw_.,()vk;=x\"/:-*'0123456789\tj\n{}zq[]>"
	if 'A' <= c && c <= 'Z' {
		c += 'a' - 'A'
	}
	if i := bytes.IndexByte([]byte(common), c); i >= 0 {
		return len(common) - i
	}
	return 0
}

func newNeedle(q seq) needle {
	n := needle{q: q, anchor: -1}
	exact := true
	for i := range q {
		if q[i].size() != 1 {
			exact = false
		}
	}
	if exact {
		for i := range q {
			n.exact = append(n.exact, q[i].members()[0])
		}
		return n
	}
	cost := func(i int) (int, int) {
		rank := 0
		for _, c := range q[i].members() {
			rank += byteRank(c)
		}
		return q[i].size(), rank
	}
	for i := range q {
		if q[i].size() > maxAnchorBytes {
			continue
		}
		if n.anchor < 0 {
			n.anchor = i
			continue
		}
		si, ri := cost(i)
		sa, ra := cost(n.anchor)
		if si < sa || si == sa && ri < ra {
			n.anchor = i
		}
	}
	n.anchorBytes = q[n.anchor].members()
	return n
}

// index returns the first position at or after from where the needle
// occurs in data, or -1.
func (n *needle) index(data []byte, from int) int {
	if n.exact != nil {
		if i := bytes.Index(data[from:], n.exact); i >= 0 {
			return from + i
		}
		return -1
	}
	// Look for the anchor's bytes, then check the other positions.
	var next [maxAnchorBytes]int
	for i := range next {
		next[i] = -2 // not looked for yet; -1: none left
	}
	for q := from + n.anchor; q < len(data); {
		a := -1
		for i, c := range n.anchorBytes {
			if next[i] != -1 && next[i] < q {
				next[i] = indexFrom(data, q, c)
			}
			if next[i] >= 0 && (a < 0 || next[i] < a) {
				a = next[i]
			}
		}
		if a < 0 {
			return -1
		}
		start := a - n.anchor
		if start+len(n.q) <= len(data) && n.at(data[start:]) {
			return start
		}
		q = a + 1
	}
	return -1
}

// at reports whether b begins with the needle.
func (n *needle) at(b []byte) bool {
	for i := range n.q {
		if !n.q[i].has(b[i]) {
			return false
		}
	}
	return true
}

// indexFrom is bytes.IndexByte from position from, or -1.
func indexFrom(data []byte, from int, c byte) int {
	if i := bytes.IndexByte(data[from:], c); i >= 0 {
		return from + i
	}
	return -1
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

// needsNonASCII reports whether every match of re (as Compile parses
// it) holds a byte outside ASCII: a non-ASCII literal rune with no ASCII
// case form, or a class of non-ASCII code points only, that every match
// passes through. A line of ASCII bytes alone then never matches, and a
// line holding invalid UTF-8 always holds such a byte, so searching for
// bytes at or above 0x80 finds every line that can match.
func needsNonASCII(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpNoMatch:
		return true
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if nonASCIIRune(r, re.Flags&syntax.FoldCase != 0) {
				return true
			}
		}
	case syntax.OpCharClass:
		// The ranges are sorted, and case folding is already in them.
		return len(re.Rune) == 0 || re.Rune[0] >= utf8.RuneSelf
	case syntax.OpCapture, syntax.OpPlus:
		return needsNonASCII(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min >= 1 && needsNonASCII(re.Sub[0])
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if needsNonASCII(sub) {
				return true
			}
		}
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			if !needsNonASCII(sub) {
				return false
			}
		}
		return true
	}
	return false
}

// nonASCIIRune reports whether a literal rune (with its case forms
// when fold is set) matches only non-ASCII text.
func nonASCIIRune(r rune, fold bool) bool {
	if r < utf8.RuneSelf {
		return false
	}
	if fold {
		for g := unicode.SimpleFold(r); g != r; g = unicode.SimpleFold(g) {
			if g < utf8.RuneSelf {
				return false
			}
		}
	}
	return true
}

// indexNonASCII returns the position of the first byte at or after from
// that is 0x80 or above, or -1. It reads eight bytes at a time.
func indexNonASCII(data []byte, from int) int {
	const high = 0x8080808080808080
	i := from
	for ; i+32 <= len(data); i += 32 {
		a := binary.LittleEndian.Uint64(data[i:])
		b := binary.LittleEndian.Uint64(data[i+8:])
		c := binary.LittleEndian.Uint64(data[i+16:])
		d := binary.LittleEndian.Uint64(data[i+24:])
		if (a|b|c|d)&high != 0 {
			break
		}
	}
	for ; i+8 <= len(data); i += 8 {
		if w := binary.LittleEndian.Uint64(data[i:]) & high; w != 0 {
			return i + bits.TrailingZeros64(w)/8
		}
	}
	for ; i < len(data); i++ {
		if data[i] >= utf8.RuneSelf {
			return i
		}
	}
	return -1
}
