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
// O(OverflowThreshold + ExcerptBytes + WriteBufferBytes) whatever the
// volume written, and Finish returns exactly what Store.Bound returns for
// the concatenation of everything written.
//
// A Spool is safe for concurrent use; concurrent writes are stored in
// some order, each whole. Finish or Abort it exactly once; Abort after
// Finish does nothing, so `defer sp.Abort()` is safe.
type Spool struct {
	store *Store

	mu   sync.Mutex
	buf  []byte  // everything so far, until the spill
	w    *Writer // non-nil once spilled
	head []byte  // the first excerptWindow bytes, once spilled
	tail tailRing
	size int64
	err  error // sticky
	done bool
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
	if sp.w == nil && len(sp.buf)+len(p) <= OverflowThreshold {
		sp.buffer(p)
		sp.size += int64(len(p))
		return len(p), nil
	}
	if sp.w == nil {
		if err := sp.spill(); err != nil {
			return 0, err
		}
	}
	if len(sp.head) < excerptWindow {
		sp.head = append(sp.head, p[:min(len(p), excerptWindow-len(sp.head))]...)
	}
	sp.tail.write(p)
	if _, err := sp.w.Write(p); err != nil {
		sp.err = err
		return 0, err
	}
	sp.size += int64(len(p))
	return len(p), nil
}

// Size returns how many bytes have been written so far.
func (sp *Spool) Size() int64 {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.size
}

// Finish ends the stream. At most OverflowThreshold bytes written come
// back inline with a nil Overflow; more are committed to the store and
// described by the Overflow. A Spool that met an error returns it and
// stores nothing. After Finish the Spool is done: Write and Finish fail
// with CodeClosed.
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
	if sp.w == nil {
		inline = string(sp.buf)
		sp.buf = nil
		return inline, nil, nil
	}
	r, err := sp.w.Commit()
	if err != nil {
		sp.discard()
		return "", nil, err
	}
	tail := sp.tail.bytes()
	o := &Overflow{
		Ref:         r,
		Path:        sp.store.Path(r),
		Size:        sp.size,
		HeadExcerpt: string(sp.head[:headCut(sp.head, ExcerptBytes)]),
		TailExcerpt: string(tail[tailCut(tail, ExcerptBytes):]),
	}
	sp.discard()
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
	sp.w = sp.store.Create()
	sp.head = make([]byte, 0, excerptWindow)
	sp.tail = newTailRing(excerptWindow)
	sp.head = append(sp.head, sp.buf[:min(len(sp.buf), excerptWindow)]...)
	sp.tail.write(sp.buf)
	if _, err := sp.w.Write(sp.buf); err != nil {
		sp.err = err
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
