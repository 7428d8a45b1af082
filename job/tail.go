package job

import "unicode/utf8"

// minTailCapacity is the smallest window a Tail keeps: one whole UTF-8
// encoded character. NewTail raises smaller capacities to it.
const minTailCapacity = utf8.UTFMax

// Tail is a bounded rolling window over one output stream, addressed by a
// monotone byte cursor: the offset, counted from the stream's first byte,
// of the next byte a reader has not yet seen.
//
// Push appends to the stream and forgets bytes from the front once more
// than the capacity are retained. Since answers what arrived after a
// cursor, the cursor to ask with next, and how many bytes between the two
// fell out of the window unseen. Both edges of an answer respect UTF-8. A
// window whose front cuts a character skips the character's remaining
// continuation bytes (they count as dropped). A character still
// incomplete at the end of the stream is held back until its last byte
// arrives (or End says none will). The trailing edge asks the last
// character's lead byte whether it is incomplete or simply not UTF-8, so
// binary output passes through instead of being held back forever.
//
// A Tail is a plain value with no locking and no I/O; its memory is the
// capacity, whatever volume passes through. The zero Tail is not usable;
// call NewTail.
type Tail struct {
	ring  []byte // len(ring) is the capacity
	head  int    // index in ring of the oldest retained byte
	n     int    // retained bytes
	total int64  // bytes pushed since the start of the stream
	ended bool
}

// TailSince is one answer of Tail.Since.
type TailSince struct {
	// Bytes is a fresh copy of the stream from Next-len(Bytes) to Next.
	Bytes []byte
	// Next is the cursor to ask with next time; it never moves backwards
	// and never passes the bytes received.
	Next int64
	// Dropped counts the bytes between the asked cursor and the start of
	// Bytes that the reader will never see: they fell out of the window
	// (or were the cut-off rest of a character at its front). The asked
	// cursor plus Dropped plus len(Bytes) is Next.
	Dropped int64
}

// NewTail returns an empty Tail retaining at most capacity bytes (at
// least one UTF-8 character: utf8.UTFMax bytes).
func NewTail(capacity int) *Tail {
	capacity = max(capacity, minTailCapacity)
	return &Tail{ring: make([]byte, capacity)}
}

// Cap returns the most bytes the window retains.
func (t *Tail) Cap() int { return len(t.ring) }

// Received returns how many bytes were pushed since the stream started;
// it is also the largest cursor Since accepts.
func (t *Tail) Received() int64 { return t.total }

// Retained returns how many bytes the window holds now (at most Cap).
func (t *Tail) Retained() int { return t.n }

// Front returns the cursor of the oldest retained byte: Received minus
// Retained.
func (t *Tail) Front() int64 { return t.total - int64(t.n) }

// Ended reports whether End was called.
func (t *Tail) Ended() bool { return t.ended }

// Push appends p to the stream, forgetting the oldest bytes past the
// capacity. It does not keep p. After End, Push does nothing: an ended
// stream receives no more bytes.
func (t *Tail) Push(p []byte) {
	if t.ended || len(p) == 0 {
		return
	}
	t.total += int64(len(p))
	c := len(t.ring)
	if len(p) >= c {
		copy(t.ring, p[len(p)-c:])
		t.head, t.n = 0, c
		return
	}
	w := t.head + t.n
	if w >= c {
		w -= c
	}
	k := copy(t.ring[w:], p)
	copy(t.ring, p[k:])
	t.n += len(p)
	if t.n > c {
		t.head += t.n - c
		if t.head >= c {
			t.head -= c
		}
		t.n = c
	}
}

// End marks the stream finished: nothing more will arrive, so Since no
// longer holds back an incomplete final character.
func (t *Tail) End() { t.ended = true }

// at returns the stream byte at cursor off, which must be retained.
func (t *Tail) at(off int64) byte {
	i := t.head + int(off-t.Front())
	if i >= len(t.ring) {
		i -= len(t.ring)
	}
	return t.ring[i]
}

// Since answers what arrived after cursor. It reports false, and answers
// nothing, for a cursor that this stream could not have produced: one
// below zero or past Received. A cursor is never rewound or clamped.
func (t *Tail) Since(cursor int64) (TailSince, bool) {
	if cursor < 0 || cursor > t.total {
		return TailSince{}, false
	}
	front := t.Front()
	start := max(cursor, front)
	if start > cursor {
		// The window's front cut the stream after the cursor: skip the
		// rest of a character whose lead byte fell out.
		for k := 0; k < utf8.UTFMax-1 && start < t.total && !utf8.RuneStart(t.at(start)); k++ {
			start++
		}
	}
	end := t.total
	if !t.ended {
		end -= int64(t.incompleteSuffix(start))
	}
	return TailSince{Bytes: t.copyRange(start, end), Next: end, Dropped: start - cursor}, true
}

// incompleteSuffix returns the length of the final character when it is
// the valid beginning of a character still missing bytes and lies wholly
// at or after from; otherwise 0.
func (t *Tail) incompleteSuffix(from int64) int {
	lo := max(from, t.total-(utf8.UTFMax-1))
	for i := t.total - 1; i >= lo; i-- {
		if !utf8.RuneStart(t.at(i)) {
			continue
		}
		var buf [utf8.UTFMax]byte
		k := 0
		for j := i; j < t.total; j++ {
			buf[k] = t.at(j)
			k++
		}
		if utf8.FullRune(buf[:k]) {
			return 0
		}
		return k
	}
	return 0
}

// copyRange returns a fresh copy of the stream from start to end, both
// retained cursors.
func (t *Tail) copyRange(start, end int64) []byte {
	out := make([]byte, end-start)
	if len(out) == 0 {
		return out
	}
	i := t.head + int(start-t.Front())
	if i >= len(t.ring) {
		i -= len(t.ring)
	}
	k := copy(out, t.ring[i:])
	copy(out[k:], t.ring)
	return out
}
