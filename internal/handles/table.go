package handles

import (
	"cmp"
	"context"
	"slices"
	"sync"
)

// Refusal is why Admit or Begin refused. Its value is a stable
// snake_case code; callers compare with == and answer in their own
// words and codes.
type Refusal string

const (
	// Closed: Close ran, so nothing is admitted or begun any more.
	Closed Refusal = "table_closed"
	// AtCeiling: the owner already holds the table's maxLive live
	// entries; one ending (End) or dropped (Drop) frees a slot.
	AtCeiling Refusal = "live_ceiling"
)

// ErrorCode returns the refusal's code (see tool.CodedError).
func (r Refusal) ErrorCode() string { return string(r) }

// Error names the refusal and what lifts it.
func (r Refusal) Error() string {
	switch r {
	case Closed:
		return "handles: the table is closed; nothing is admitted or begun any more"
	case AtCeiling:
		return "handles: the owner already holds the most live entries it may; end or drop one first"
	}
	return "handles: refused (" + string(r) + ")"
}

// Table holds each owner's entries under keys K. The zero value is not
// usable: make one with New. See the package doc for what it guarantees
// and which lock guards it.
type Table[K comparable, E any] struct {
	maxLive, maxEnded int

	seq    uint64 // ordinals minted
	ends   uint64 // entries ended: each one's ended
	held   map[K]*slot[K, E]
	owned  map[string][]*slot[K, E] // owner -> its slots, in admission order
	closed bool

	// The work begun and not yet done, under its own lock (Done and
	// Wait run without the caller's).
	runMu   sync.Mutex
	running int
	idle    chan struct{} // closed when running drops to zero; nil when no one waits
}

// slot is one entry held.
type slot[K comparable, E any] struct {
	key   K
	owner string
	entry E
	n     uint64 // its admission ordinal
	ended uint64 // 0 while live; else its place in the order entries ended (1, 2, ...)
}

// New returns an empty, open table where each owner holds at most
// maxLive live and maxEnded ended entries. A bound below 1 counts as 1,
// so an admitted entry can run and the entry ending is always kept.
func New[K comparable, E any](maxLive, maxEnded int) *Table[K, E] {
	return &Table[K, E]{maxLive: max(maxLive, 1), maxEnded: max(maxEnded, 1),
		held: map[K]*slot[K, E]{}, owned: map[string][]*slot[K, E]{}}
}

// Admit admits a live entry of owner, or refuses it: Closed after
// Close, AtCeiling when owner holds maxLive live entries. key mints the
// entry's key from n, its admission ordinal (1, 2, ...); a key already
// held is minted again from the next ordinal, so key must not return a
// held key for every ordinal (a key that differs for distinct ordinals
// never does). entry then builds the entry under that key and ordinal.
// Both run under the caller's lock and must not call back into t.
func (t *Table[K, E]) Admit(owner string, key func(n uint64) K, entry func(k K, n uint64) E) (E, error) {
	var zero E
	if t.closed {
		return zero, Closed
	}
	if t.live(owner) >= t.maxLive {
		return zero, AtCeiling
	}
	var k K
	for {
		t.seq++
		k = key(t.seq)
		if _, taken := t.held[k]; !taken {
			break
		}
	}
	s := &slot[K, E]{key: k, owner: owner, n: t.seq}
	s.entry = entry(k, t.seq)
	t.held[k] = s
	t.owned[owner] = append(t.owned[owner], s)
	return s.entry, nil
}

// live counts owner's live entries.
func (t *Table[K, E]) live(owner string) int {
	n := 0
	for _, s := range t.owned[owner] {
		if s.ended == 0 {
			n++
		}
	}
	return n
}

// Minted returns the last ordinal Admit minted (0 before the first).
func (t *Table[K, E]) Minted() uint64 { return t.seq }

// Begin counts one piece of work Wait waits for, until a Done matches
// it, or refuses with Closed after Close. It is separate from Admit so
// a caller can admit an entry and begin its work later, or never (then
// Drop it).
func (t *Table[K, E]) Begin() error {
	if t.closed {
		return Closed
	}
	t.runMu.Lock()
	t.running++
	t.runMu.Unlock()
	return nil
}

// Done ends one piece of work Begin counted. It takes no lock of the
// caller's. A Done with nothing begun does nothing.
func (t *Table[K, E]) Done() {
	t.runMu.Lock()
	defer t.runMu.Unlock()
	if t.running == 0 {
		return
	}
	t.running--
	if t.running == 0 && t.idle != nil {
		close(t.idle)
		t.idle = nil
	}
}

// End records that k's entry ended, then forgets its owner's ended
// entries that ended longest ago until at most maxEnded are left (never
// k's). It reports false, changing nothing, when k is not held or
// already ended.
func (t *Table[K, E]) End(k K) bool {
	s := t.held[k]
	if s == nil || s.ended != 0 {
		return false
	}
	t.ends++
	s.ended = t.ends
	var ended []*slot[K, E]
	for _, o := range t.owned[s.owner] {
		if o.ended != 0 {
			ended = append(ended, o)
		}
	}
	if len(ended) <= t.maxEnded {
		return true
	}
	slices.SortFunc(ended, func(a, b *slot[K, E]) int { return cmp.Compare(a.ended, b.ended) })
	for _, o := range ended[:len(ended)-t.maxEnded] {
		t.remove(o)
	}
	return true
}

// Drop forgets k's entry at once, live or ended (an entry admitted whose
// work never began, or never ran). It reports whether k was held.
func (t *Table[K, E]) Drop(k K) bool {
	s := t.held[k]
	if s == nil {
		return false
	}
	t.remove(s)
	return true
}

// remove deletes s from both indexes.
func (t *Table[K, E]) remove(s *slot[K, E]) {
	delete(t.held, s.key)
	rest := slices.DeleteFunc(t.owned[s.owner], func(o *slot[K, E]) bool { return o == s })
	if len(rest) == 0 {
		delete(t.owned, s.owner)
	} else {
		t.owned[s.owner] = rest
	}
}

// Lookup returns owner's entry under k. ok is false when k is not held
// or is another owner's: the two are indistinguishable here.
func (t *Table[K, E]) Lookup(owner string, k K) (e E, ok bool) {
	s := t.held[k]
	if s == nil || s.owner != owner {
		return e, false
	}
	return s.entry, true
}

// Entries returns owner's entries, live and ended, oldest admitted
// first.
func (t *Table[K, E]) Entries(owner string) []E {
	es := make([]E, 0, len(t.owned[owner]))
	for _, s := range t.owned[owner] {
		es = append(es, s.entry)
	}
	return es
}

// Keys returns owner's keys, live and ended, oldest admitted first.
func (t *Table[K, E]) Keys(owner string) []K {
	return t.keys(owner, false)
}

// LiveKeys returns the keys of owner's live entries, oldest admitted
// first.
func (t *Table[K, E]) LiveKeys(owner string) []K {
	return t.keys(owner, true)
}

func (t *Table[K, E]) keys(owner string, liveOnly bool) []K {
	var ks []K
	for _, s := range t.owned[owner] {
		if !liveOnly || s.ended == 0 {
			ks = append(ks, s.key)
		}
	}
	return ks
}

// Len returns how many entries are held, over every owner.
func (t *Table[K, E]) Len() int { return len(t.held) }

// Close refuses every later Admit and Begin and returns the live
// entries of every owner, oldest admitted first, for the caller to
// stop. It may be called more than once; a later call returns the
// entries live then.
func (t *Table[K, E]) Close() []E {
	t.closed = true
	var live []*slot[K, E]
	for _, s := range t.held {
		if s.ended == 0 {
			live = append(live, s)
		}
	}
	slices.SortFunc(live, func(a, b *slot[K, E]) int { return cmp.Compare(a.n, b.n) })
	es := make([]E, len(live))
	for i, s := range live {
		es[i] = s.entry
	}
	return es
}

// Wait waits until every Begin has been matched by a Done, or ctx ends
// (then it returns ctx's error). It takes no lock of the caller's. Call
// it after Close, so no work begins while it waits; with nothing begun
// it returns nil at once, whatever ctx.
func (t *Table[K, E]) Wait(ctx context.Context) error {
	t.runMu.Lock()
	if t.running == 0 {
		t.runMu.Unlock()
		return nil
	}
	if t.idle == nil {
		t.idle = make(chan struct{})
	}
	idle := t.idle
	t.runMu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
