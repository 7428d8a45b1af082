package hashline

import (
	"cmp"
	"fmt"
	"slices"
)

// Plan is a validated set of hunks bound to the digest of the content it was
// made from. It holds no reference to that content and is immutable, so it is
// safe to share. Apply accepts that content and refuses every other, which is
// what makes a replayed edit unable to apply twice.
type Plan struct {
	digest string
	hash   uint64   // the digest's hash
	size   int      // and length
	hunks  []placed // sorted by position
	first  gap      // gap 0: just after the byte-order mark, if any
	last   gap      // gap n: the end of the content
	eol    string   // the break written lines get
	// noFinalBreak: the content's last line has no break.
	noFinalBreak bool
}

// gap is a position between lines of the planned content: gap g lies between
// line g and line g+1 (gap 0 before line 1, gap n after line n). Because a
// plan only ever applies to the exact content it was made from, the byte
// offsets it records are valid in Apply.
type gap struct {
	line      int  // g
	off       int  // byte offset: where line g+1 starts
	prevBreak int  // byte length of line g's break (0: none)
	prevEmpty bool // whether line g's text is empty
}

// placed is one hunk located in the planned content: it removes every line
// between gaps lo and hi (none when they are equal) and writes lines there.
type placed struct {
	index  int // position in the caller's hunk list
	lo, hi gap
	lines  []string
}

// Region is the range of post-image lines one hunk wrote: Start..End, 1-based
// and inclusive. A hunk that wrote no lines (a pure deletion) has an empty
// region at the place the lines were removed: End == Start-1, where Start is
// the number the line after the deletion now has.
type Region struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Applied is the result of a successful Apply.
type Applied struct {
	// Content is the post-image.
	Content []byte
	// Digest is Digest(Content), the digest the next plan binds to.
	Digest string
	// LineCount is the number of lines of Content: LineCount(Content).
	// Apply annotates nothing; RenderRegionsOf renders the lines around
	// Regions from Content, annotating only those.
	LineCount int
	// Regions[i] is where hunk i (in the order given to NewPlan) landed.
	Regions []Region
}

// NewPlan validates hunks against content and returns a plan bound to
// content's digest.
//
// It checks, in order: ValidateHunks (a *HunkError); that no two hunks remove
// the same line, that no insertion falls strictly inside a replaced range and
// that no two insertions share a place (a *HunkError with code CodeOverlap;
// a replace and an insertion at either edge of it are fine: insert_before
// lands before the replacement, insert_after after it); and that every ref
// names a line that exists and has the given anchor (a *StaleError with code
// CodeStaleAnchor listing every stale ref with the line now at that number).
// Hunks may be given in any order.
func NewPlan(content []byte, hunks []Hunk) (*Plan, error) {
	if err := ValidateHunks(hunks); err != nil {
		return nil, err
	}
	x := scan(content, namedLines(hunks))
	n := x.n
	ps := make([]placed, len(hunks))
	// One backing array holds every hunk's lines.
	total := 0
	for _, h := range hunks {
		total += countPieces(h.Lines)
	}
	all := make([]string, 0, total)
	for i, h := range hunks {
		from := len(all)
		all = appendPieces(all, h.Lines)
		p := placed{index: i, lines: all[from:len(all):len(all)]}
		switch h.Op {
		case OpReplace:
			end := h.Start.Line
			if h.End != nil {
				end = h.End.Line
			}
			p.lo.line, p.hi.line = h.Start.Line-1, end
		case OpInsertBefore:
			p.lo.line, p.hi.line = h.Start.Line-1, h.Start.Line-1
		case OpInsertAfter:
			p.lo.line, p.hi.line = h.Start.Line, h.Start.Line
		case OpAppend:
			p.lo.line, p.hi.line = n, n
		}
		ps[i] = p
	}
	slices.SortStableFunc(ps, func(a, b placed) int {
		if c := cmp.Compare(a.lo.line, b.lo.line); c != 0 {
			return c
		}
		return cmp.Compare(a.hi.line, b.hi.line)
	})
	for k := 1; k < len(ps); k++ {
		a, b := ps[k-1], ps[k]
		sameGap := a.lo.line == a.hi.line && b.lo.line == b.hi.line && a.lo.line == b.lo.line
		if b.lo.line < a.hi.line || sameGap {
			first, second := min(a.index, b.index), max(a.index, b.index)
			return nil, &HunkError{Code: CodeOverlap, Index: second,
				Detail: fmt.Sprintf("overlaps hunk %d; hunks must not touch the same lines or insert at the same place: merge them into one hunk", first)}
		}
	}
	if err := staleRefs(content, x, hunks); err != nil {
		return nil, err
	}
	gapAt := func(g int) gap {
		if g == 0 {
			return gap{off: x.skip}
		}
		// g is a named line (a start's, the one before it, an end's) or
		// n, and staleRefs refused every ref past n: line g is kept.
		sp, _ := x.span(g)
		return gap{line: g, off: sp.end, prevBreak: sp.end - sp.textEnd, prevEmpty: sp.textEnd == sp.start}
	}
	for k := range ps {
		ps[k].lo, ps[k].hi = gapAt(ps[k].lo.line), gapAt(ps[k].hi.line)
	}
	return &Plan{
		digest:       formatDigest(x.digest, len(content)),
		hash:         x.digest,
		size:         len(content),
		hunks:        ps,
		first:        gapAt(0),
		last:         gapAt(n),
		eol:          dominantBreak(x.crlf, x.lf),
		noFinalBreak: n > 0 && x.last.end == x.last.textEnd,
	}, nil
}

// namedLines returns the line numbers NewPlan reads of the content,
// ascending and unique: each ref's line, and the line before each
// hunk's start, whose end is where the hunk's place begins.
func namedLines(hunks []Hunk) []int {
	lines := make([]int, 0, 3*len(hunks))
	for _, h := range hunks {
		if h.Start != nil {
			lines = append(lines, h.Start.Line-1, h.Start.Line)
		}
		if h.End != nil {
			lines = append(lines, h.End.Line)
		}
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	for len(lines) > 0 && lines[0] < 1 {
		lines = lines[1:]
	}
	return lines
}

// staleRefs returns a *StaleError listing every ref of hunks that does not
// match content, or nil.
func staleRefs(content []byte, x *lineIndex, hunks []Hunk) error {
	var stale []StaleRef
	var seen map[Ref]bool // the stale refs listed, made at the first
	check := func(r *Ref) {
		if r == nil || seen[*r] {
			return
		}
		var cur *Line
		if sp, ok := x.span(r.Line); ok {
			text := content[sp.start:sp.textEnd]
			var a [AnchorLen]byte
			putAnchor(a[:], sum64(text))
			if string(a[:]) == r.Anchor {
				return
			}
			cur = &Line{Number: r.Line, Anchor: string(a[:]), Text: string(text)}
		}
		if seen == nil {
			seen = make(map[Ref]bool)
		}
		seen[*r] = true
		stale = append(stale, StaleRef{Ref: *r, Current: cur})
	}
	for _, h := range hunks {
		check(h.Start)
		check(h.End)
	}
	if stale == nil {
		return nil
	}
	return &StaleError{Code: CodeStaleAnchor, Current: formatDigest(x.digest, len(content)), Lines: x.n, Stale: stale}
}

// Digest returns the digest of the content p was made from; Apply accepts
// only content with this digest.
func (p *Plan) Digest() string { return p.digest }

// CheckDigest returns nil when content's digest is want, and otherwise a
// *StaleError with code CodeStaleDigest carrying the current digest. A caller
// holding the digest a reader was shown uses it to refuse an edit planned
// against an older read, even when every anchor still matches.
func CheckDigest(content []byte, want string) error {
	if d := Digest(content); d != want {
		return &StaleError{Code: CodeStaleDigest, Want: want, Current: d, Lines: countLines(content)}
	}
	return nil
}

// Apply applies p to content, which must be the content p was made from:
// any other content (a different digest) is refused with a *StaleError of
// code CodeStaleDigest, so applying a plan to its own result never applies it
// twice. Apply runs in time linear in the size of content plus the size of
// the hunks: one pass hashes content and the post-image together.
//
// Bytes are preserved exactly: lines no hunk removed keep their bytes and
// their own line break (LF or CRLF), a byte-order mark stays, and written
// lines take the content's dominant line break. When content does not end
// with a line break, neither does the result, unless the result's last line
// is empty: such a line exists only with its break. One edge follows from
// the line rules: a last line ending in "\r" without a break that gets lines
// written after it reads afterwards as a CRLF line without that "\r".
func (p *Plan) Apply(content []byte) (Applied, error) {
	if len(content) != p.size {
		// Another length is another digest.
		return Applied{}, CheckDigest(content, p.digest)
	}
	// Equal lengths put every offset the plan recorded inside content, so
	// the post-image is built first and content is hashed beside it, in
	// one pass; a content with another hash is refused all the same.
	size := len(content) + len(p.eol)
	for _, h := range p.hunks {
		for _, l := range h.lines {
			size += len(l) + len(p.eol)
		}
	}
	w := writer{out: make([]byte, 0, size), content: content, eol: p.eol}
	w.out = append(w.out, content[:p.first.off]...)
	regions := make([]Region, len(p.hunks))
	at := p.first
	for _, h := range p.hunks {
		w.copyLines(at, h.lo)
		start := w.lines + 1
		for _, l := range h.lines {
			w.writeLine(l)
		}
		regions[h.index] = Region{Start: start, End: w.lines}
		at = h.hi
	}
	w.copyLines(at, p.last)
	if p.noFinalBreak && w.lines > 0 && !w.lastEmpty {
		w.out = w.out[:len(w.out)-w.lastBreak]
	}
	in, out := sum64Pair(content, w.out)
	if in != p.hash {
		return Applied{}, &StaleError{Code: CodeStaleDigest, Want: p.digest, Current: formatDigest(in, len(content)), Lines: countLines(content)}
	}
	return Applied{Content: w.out, Digest: formatDigest(out, len(w.out)), LineCount: countLines(w.out), Regions: regions}, nil
}

// dominantBreak is the line break written lines get: CRLF when more lines end
// in CRLF (crlf) than in LF (lf), otherwise LF (also when no line has a break).
func dominantBreak(crlf, lf int) string {
	if crlf > lf {
		return "\r\n"
	}
	return "\n"
}

// writer builds a post-image. Every line it emits ends with a line break;
// Apply removes the last one when the pre-image had none.
type writer struct {
	out       []byte
	content   []byte
	eol       string
	lines     int  // lines emitted so far
	lastBreak int  // byte length of the last emitted line's break
	lastEmpty bool // whether the last emitted line's text is empty
}

// copyLines copies the pre-image lines between gaps a and b unchanged,
// supplying the written break after a last line that has none.
func (w *writer) copyLines(a, b gap) {
	if b.line <= a.line {
		return
	}
	w.out = append(w.out, w.content[a.off:b.off]...)
	w.lastBreak = b.prevBreak
	if w.lastBreak == 0 {
		w.out = append(w.out, w.eol...)
		w.lastBreak = len(w.eol)
	}
	w.lastEmpty = b.prevEmpty
	w.lines += b.line - a.line
}

func (w *writer) writeLine(text string) {
	w.out = append(w.out, text...)
	w.out = append(w.out, w.eol...)
	w.lastBreak = len(w.eol)
	w.lastEmpty = text == ""
	w.lines++
}
