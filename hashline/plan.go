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
	lines  int      // line count of the planned content
	hunks  []placed // sorted by position
}

// placed is one hunk located in the planned content. Positions are gaps: gap
// g lies between line g and line g+1 (gap 0 before line 1, gap n after line
// n). A hunk removes every line between gap lo and gap hi (none when lo ==
// hi) and writes its lines there.
type placed struct {
	index  int // position in the caller's hunk list
	lo, hi int
	lines  []string
}

// Region is the range of post-image lines one hunk wrote: Start..End, 1-based
// and inclusive. A hunk that wrote no lines (a pure deletion) has an empty
// region at the place the lines were removed: End == Start-1, where Start is
// the number the line after the deletion now has.
type Region struct {
	Start, End int
}

// Applied is the result of a successful Apply.
type Applied struct {
	// Content is the post-image.
	Content []byte
	// Digest is Digest(Content), the digest the next plan binds to.
	Digest string
	// Lines is Annotate(Content), computed once; slice it rather than
	// annotating again.
	Lines []Line
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
	_, spans := split(content)
	n := len(spans)
	ps := make([]placed, len(hunks))
	for i, h := range hunks {
		p := placed{index: i, lines: pieces(h.Lines)}
		switch h.Op {
		case OpReplace:
			end := h.Start.Line
			if h.End != nil {
				end = h.End.Line
			}
			p.lo, p.hi = h.Start.Line-1, end
		case OpInsertBefore:
			p.lo, p.hi = h.Start.Line-1, h.Start.Line-1
		case OpInsertAfter:
			p.lo, p.hi = h.Start.Line, h.Start.Line
		case OpAppend:
			p.lo, p.hi = n, n
		}
		ps[i] = p
	}
	slices.SortStableFunc(ps, func(a, b placed) int {
		if c := cmp.Compare(a.lo, b.lo); c != 0 {
			return c
		}
		return cmp.Compare(a.hi, b.hi)
	})
	for k := 1; k < len(ps); k++ {
		a, b := ps[k-1], ps[k]
		sameGap := a.lo == a.hi && b.lo == b.hi && a.lo == b.lo
		if b.lo < a.hi || sameGap {
			first, second := min(a.index, b.index), max(a.index, b.index)
			return nil, &HunkError{Kind: CodeOverlap, Index: second,
				Detail: fmt.Sprintf("overlaps hunk %d; hunks must not touch the same lines or insert at the same place: merge them into one hunk", first)}
		}
	}
	if err := staleRefs(content, spans, hunks); err != nil {
		return nil, err
	}
	return &Plan{digest: Digest(content), lines: n, hunks: ps}, nil
}

// staleRefs returns a *StaleError listing every ref of hunks that does not
// match content, or nil.
func staleRefs(content []byte, spans []span, hunks []Hunk) error {
	var stale []StaleRef
	seen := make(map[Ref]bool)
	check := func(r *Ref) {
		if r == nil || seen[*r] {
			return
		}
		seen[*r] = true
		if r.Line > len(spans) {
			stale = append(stale, StaleRef{Ref: *r})
			return
		}
		sp := spans[r.Line-1]
		text := content[sp.start:sp.textEnd]
		h := sum64(text)
		var a [AnchorLen]byte
		putAnchor(a[:], h)
		if string(a[:]) == r.Anchor {
			return
		}
		stale = append(stale, StaleRef{Ref: *r, Current: &Line{Number: r.Line, Anchor: string(a[:]), Text: string(text)}})
	}
	for _, h := range hunks {
		check(h.Start)
		check(h.End)
	}
	if stale == nil {
		return nil
	}
	return &StaleError{Kind: CodeStaleAnchor, Current: Digest(content), Lines: len(spans), Stale: stale}
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
		_, spans := split(content)
		return &StaleError{Kind: CodeStaleDigest, Want: want, Current: d, Lines: len(spans)}
	}
	return nil
}

// Apply applies p to content, which must be the content p was made from:
// any other content (a different digest) is refused with a *StaleError of
// code CodeStaleDigest, so applying a plan to its own result never applies it
// twice. Apply runs in time linear in the size of content plus the size of
// the hunks.
//
// Bytes are preserved exactly: lines no hunk removed keep their bytes and
// their own line break (LF or CRLF), a byte-order mark stays, and written
// lines take the content's dominant line break. When content does not end
// with a line break, neither does the result; the single exception is a
// result whose last line is empty, which needs its line break to exist (and a
// last line ending in "\r" that gets lines written after it, whose "\r" then
// joins the new line break).
func (p *Plan) Apply(content []byte) (Applied, error) {
	if err := CheckDigest(content, p.digest); err != nil {
		return Applied{}, err
	}
	bomLen, spans := split(content)
	n := len(spans)
	if n != p.lines { // unreachable unless FNV-64 and length both collide
		return Applied{}, &StaleError{Kind: CodeStaleDigest, Want: p.digest, Current: p.digest, Lines: n}
	}
	eol := dominantBreak(spans)
	noFinalBreak := n > 0 && spans[n-1].end == spans[n-1].textEnd

	size := len(content) + len(eol)
	for _, h := range p.hunks {
		for _, l := range h.lines {
			size += len(l) + len(eol)
		}
	}
	w := writer{out: make([]byte, 0, size), content: content, spans: spans, eol: eol, noFinalBreak: noFinalBreak}
	w.out = append(w.out, content[:bomLen]...)
	w.bomLen = bomLen
	regions := make([]Region, len(p.hunks))
	gap := 0
	for _, h := range p.hunks {
		w.copyLines(gap, h.lo)
		start := w.lines + 1
		for _, l := range h.lines {
			w.writeLine(l)
		}
		regions[h.index] = Region{Start: start, End: w.lines}
		gap = h.hi
	}
	w.copyLines(gap, n)
	out := w.finish()
	return Applied{Content: out, Digest: Digest(out), Lines: Annotate(out), Regions: regions}, nil
}

// dominantBreak is the line break written lines get: CRLF when more lines end
// in CRLF than in LF, otherwise LF (also when no line has a break).
func dominantBreak(spans []span) string {
	crlf, lf := 0, 0
	for _, sp := range spans {
		switch sp.end - sp.textEnd {
		case 2:
			crlf++
		case 1:
			lf++
		}
	}
	if crlf > lf {
		return "\r\n"
	}
	return "\n"
}

// writer builds a post-image. Every line it emits ends with a line break;
// finish removes the last one when the pre-image had none.
type writer struct {
	out          []byte
	content      []byte
	spans        []span
	eol          string
	noFinalBreak bool
	bomLen       int
	lines        int  // lines emitted so far
	lastBreak    int  // byte length of the last emitted line's break
	lastEmpty    bool // whether the last emitted line's text is empty
}

// copyLines copies pre-image lines gap a+1 .. gap b unchanged, supplying the
// dominant break after a last line that has none.
func (w *writer) copyLines(a, b int) {
	if b <= a {
		return
	}
	from := w.bomLen
	if a > 0 {
		from = w.spans[a-1].end
	}
	last := w.spans[b-1]
	w.out = append(w.out, w.content[from:last.end]...)
	w.lastBreak = last.end - last.textEnd
	if w.lastBreak == 0 {
		w.out = append(w.out, w.eol...)
		w.lastBreak = len(w.eol)
	}
	w.lastEmpty = last.textEnd == last.start
	w.lines += b - a
}

func (w *writer) writeLine(text string) {
	w.out = append(w.out, text...)
	w.out = append(w.out, w.eol...)
	w.lastBreak = len(w.eol)
	w.lastEmpty = text == ""
	w.lines++
}

func (w *writer) finish() []byte {
	if w.noFinalBreak && w.lines > 0 && !w.lastEmpty {
		w.out = w.out[:len(w.out)-w.lastBreak]
	}
	return w.out
}
