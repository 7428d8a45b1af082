package blob

import (
	"sync"
	"unicode/utf8"
)

// excerptWindow is how many bytes of each end of a stream a Spool keeps
// once it has spilled: enough for Excerpts to find the same rune
// boundaries it would find in the whole stream, since deciding a cut at
// ExcerptBytes looks at most utf8.UTFMax bytes past it.
const excerptWindow = ExcerptBytes + utf8.UTFMax

// Spool applies the overflow decision to a stream whose length is not
// known in advance, in bounded memory. It buffers up to OverflowThreshold
// bytes; the write that takes the total past that streams the buffer and
// everything after it into a staged blob, keeping only the stream's first
// and last excerptWindow bytes. Its memory is therefore
// O(OverflowThreshold + ExcerptBytes + a Writer's 32 KiB buffer) whatever the
// volume written, and Finish returns exactly what Store.Bound returns for
// the concatenation of everything written.
//
// A spill is charged against the session's budget as it streams (see
// Writer). The write that would pass the budget is not an error of
// Write: the Spool removes what it staged, stops storing, and keeps
// counting and keeping the two ends, and Finish returns an Overflow with
// the excerpts that says the output was not kept (NotKept), together
// with the CodeSpillBudget error.
//
// A Spool is safe for concurrent use; concurrent writes are stored in
// some order, each whole. Finish or Abort it exactly once; Abort after
// Finish does nothing, so `defer sp.Abort()` is safe.
type Spool struct {
	store *Store

	mu      sync.Mutex
	buf     []byte  // everything so far, until the spill
	spilled bool    // past OverflowThreshold
	w       *Writer // the staged blob, once spilled, until refused
	refused error   // the session's budget refused the spill (CodeSpillBudget)
	head    []byte  // the first excerptWindow bytes, once spilled
	tail    tailRing
	size    int64
	err     error // sticky
	done    bool
}

// NewSpool returns an empty Spool that spills into s.
func (s *Store) NewSpool() *Spool {
	return &Spool{store: s}
}

// Write takes p. It returns len(p) and nil, or 0 and the error that
// stopped the spill (staging, writing); the error is sticky and Finish
// returns it too, because output past the threshold that cannot be stored
// must not be silently clipped.
func (sp *Spool) Write(p []byte) (int, error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.done {
		return 0, closedError("spool")
	}
	if sp.err != nil {
		return 0, sp.err
	}
	if !sp.spilled && len(sp.buf)+len(p) <= OverflowThreshold {
		sp.buffer(p)
		sp.size += int64(len(p))
		return len(p), nil
	}
	if !sp.spilled {
		if err := sp.spill(); err != nil {
			return 0, err
		}
	}
	if len(sp.head) < excerptWindow {
		sp.head = append(sp.head, p[:min(len(p), excerptWindow-len(sp.head))]...)
	}
	sp.tail.write(p)
	if err := sp.keep(p); err != nil {
		return 0, err
	}
	sp.size += int64(len(p))
	return len(p), nil
}

// keep writes p to the staged blob unless the spill was refused; a
// refusal for the session's budget removes what was staged and is kept
// for Finish, any other failure is sticky and returned.
func (sp *Spool) keep(p []byte) error {
	if sp.w == nil {
		return nil
	}
	_, err := sp.w.Write(p)
	switch {
	case err == nil:
		return nil
	case CodeOf(err) == CodeSpillBudget:
		sp.refused = err
		sp.w.Abort()
		sp.w = nil
		return nil
	default:
		sp.err = err
		return err
	}
}

// Size returns how many bytes have been written so far.
func (sp *Spool) Size() int64 {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.size
}

// Finish ends the stream. At most OverflowThreshold bytes written come
// back inline with a nil Overflow; more are committed to the store and
// described by the Overflow. A spill the session's budget refused comes
// back as the Overflow with the excerpts and NotKept, and the
// CodeSpillBudget error. A Spool that met any other error returns it, a
// nil Overflow, and stores nothing. After Finish the Spool is done:
// Write and Finish fail with CodeClosed.
func (sp *Spool) Finish() (inline string, spilled *Overflow, err error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.done {
		return "", nil, closedError("spool")
	}
	sp.done = true
	if sp.err != nil {
		sp.discard()
		return "", nil, sp.err
	}
	if !sp.spilled {
		inline = string(sp.buf)
		sp.buf = nil
		return inline, nil, nil
	}
	tail := sp.tail.bytes()
	o := &Overflow{
		Size:        sp.size,
		HeadExcerpt: string(sp.head[:headCut(sp.head, ExcerptBytes)]),
		TailExcerpt: string(tail[tailCut(tail, ExcerptBytes):]),
	}
	if sp.refused == nil {
		r, err := sp.w.Commit()
		switch {
		case err == nil:
			o.Ref, o.Path = r, sp.store.Path(r)
		case CodeOf(err) == CodeSpillBudget:
			sp.refused = err
		default:
			sp.discard()
			return "", nil, err
		}
	}
	sp.discard()
	if sp.refused != nil {
		o.NotKept = notKeptReason(sp.refused)
		return "", o, sp.refused
	}
	return "", o, nil
}

// Abort discards whatever was written, removing the staged blob if the
// Spool had spilled. It does nothing after Finish or a previous Abort.
func (sp *Spool) Abort() error {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.done {
		return nil
	}
	sp.done = true
	return sp.discard()
}

// buffer appends p to the pre-spill buffer, growing it geometrically but
// never past OverflowThreshold bytes of capacity.
func (sp *Spool) buffer(p []byte) {
	need := len(sp.buf) + len(p)
	if need > cap(sp.buf) {
		grown := make([]byte, len(sp.buf), min(max(need, 2*cap(sp.buf), 512), OverflowThreshold))
		copy(grown, sp.buf)
		sp.buf = grown
	}
	sp.buf = append(sp.buf, p...)
}

// spill moves the buffered bytes into a staged blob and releases the
// buffer; the caller then feeds the current write through the same path.
func (sp *Spool) spill() error {
	sp.spilled = true
	sp.w = sp.store.Create()
	sp.head = make([]byte, 0, excerptWindow)
	sp.tail = newTailRing(excerptWindow)
	sp.head = append(sp.head, sp.buf[:min(len(sp.buf), excerptWindow)]...)
	sp.tail.write(sp.buf)
	if err := sp.keep(sp.buf); err != nil {
		return err
	}
	sp.buf = nil
	return nil
}

// discard releases everything the Spool holds and removes a staged blob
// that was never committed.
func (sp *Spool) discard() error {
	sp.buf, sp.head, sp.tail = nil, nil, tailRing{}
	if sp.w == nil {
		return nil
	}
	err := sp.w.Abort()
	sp.w = nil
	return err
}

// retainedBytes is the capacity of every buffer the Spool holds, for tests
// that check memory stays bounded however much is written.
func (sp *Spool) retainedBytes() int {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	n := cap(sp.buf) + cap(sp.head) + cap(sp.tail.b)
	if sp.w != nil && sp.w.buf != nil {
		n += sp.w.buf.Size()
	}
	return n
}

// tailRing keeps the last n bytes written to it in a buffer of 2n,
// compacting only when the buffer fills, so each byte is copied O(1)
// times on average.
type tailRing struct {
	n int
	b []byte
}

func newTailRing(n int) tailRing {
	return tailRing{n: n, b: make([]byte, 0, 2*n)}
}

func (t *tailRing) write(p []byte) {
	if len(p) >= t.n {
		t.b = append(t.b[:0], p[len(p)-t.n:]...)
		return
	}
	if len(t.b)+len(p) > cap(t.b) {
		keep := min(t.n-len(p), len(t.b))
		copy(t.b, t.b[len(t.b)-keep:])
		t.b = t.b[:keep]
	}
	t.b = append(t.b, p...)
}

// bytes returns the last n bytes written, or all of them if fewer.
func (t *tailRing) bytes() []byte {
	return t.b[max(len(t.b)-t.n, 0):]
}
