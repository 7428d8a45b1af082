package handles

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// modelEntry is what the model knows of one entry held.
type modelEntry struct {
	key   string
	owner string
	n     uint64
	ended int // 0 while live; else its place in the order entries ended
}

// tableModel checks a Table against a list of entries in admission
// order, with the bounds, the ordinals, the end order, close and the
// count of work begun.
type tableModel struct {
	tab               *Table[string, entry]
	maxLive, maxEnded int
	seq               uint64
	ends              int
	held              []*modelEntry // admission order; forgotten ones removed
	closed            bool
	begun             int
	cancelled         context.Context
}

var owners = []string{"a", "b", "c"}

func (m *tableModel) find(k string) *modelEntry {
	for _, e := range m.held {
		if e.key == k {
			return e
		}
	}
	return nil
}

func (m *tableModel) of(owner string, liveOnly bool) []*modelEntry {
	var es []*modelEntry
	for _, e := range m.held {
		if e.owner == owner && (!liveOnly || e.ended == 0) {
			es = append(es, e)
		}
	}
	return es
}

// key draws a key: one the table holds (it must be minted anew) or one
// never minted.
func (m *tableModel) key(t *rapid.T) string {
	if len(m.held) > 0 && rapid.Bool().Draw(t, "held") {
		return rapid.SampledFrom(m.held).Draw(t, "entry").key
	}
	return fmt.Sprintf("never-%d", rapid.IntRange(0, 3).Draw(t, "never"))
}

func (m *tableModel) admit(t *rapid.T) {
	owner := rapid.SampledFrom(owners).Draw(t, "owner")
	// The first mint may collide with a held key; the table must mint
	// again from the next ordinal, never overwrite.
	var collide string
	if len(m.held) > 0 && rapid.Bool().Draw(t, "collide") {
		collide = rapid.SampledFrom(m.held).Draw(t, "with").key
	}
	tries := 0
	got, err := m.tab.Admit(owner, func(n uint64) string {
		tries++
		if tries == 1 && collide != "" {
			return collide
		}
		return plainKey(n)
	}, makeEntry)
	switch {
	case m.closed:
		if err != Closed {
			t.Fatalf("admit after close: %v", err)
		}
		return
	case len(m.of(owner, true)) >= m.maxLive:
		if err != AtCeiling {
			t.Fatalf("admit of %s past its %d live: %v", owner, m.maxLive, err)
		}
		return
	case err != nil:
		t.Fatalf("admit of %s refused: %v", owner, err)
	}
	m.seq++
	if collide != "" {
		m.seq++
	}
	want := entry{key: plainKey(m.seq), n: m.seq}
	if got != want || m.tab.Minted() != m.seq {
		t.Fatalf("admit built %+v (minted %d), want %+v", got, m.tab.Minted(), want)
	}
	m.held = append(m.held, &modelEntry{key: want.key, owner: owner, n: m.seq})
}

func (m *tableModel) end(t *rapid.T) {
	k := m.key(t)
	e := m.find(k)
	if got := m.tab.End(k); got != (e != nil && e.ended == 0) {
		t.Fatalf("End(%s) = %v, model %+v", k, got, e)
	}
	if e == nil || e.ended != 0 {
		return
	}
	m.ends++
	e.ended = m.ends
	var ended []*modelEntry
	for _, o := range m.of(e.owner, false) {
		if o.ended != 0 {
			ended = append(ended, o)
		}
	}
	slices.SortFunc(ended, func(a, b *modelEntry) int { return a.ended - b.ended })
	for len(ended) > m.maxEnded {
		gone := ended[0]
		ended = ended[1:]
		if gone == e {
			t.Fatal("the model forgot the entry ending")
		}
		m.held = slices.DeleteFunc(m.held, func(o *modelEntry) bool { return o == gone })
	}
}

func (m *tableModel) drop(t *rapid.T) {
	k := m.key(t)
	e := m.find(k)
	if got := m.tab.Drop(k); got != (e != nil) {
		t.Fatalf("Drop(%s) = %v, model %+v", k, got, e)
	}
	m.held = slices.DeleteFunc(m.held, func(o *modelEntry) bool { return o == e })
}

func (m *tableModel) lookup(t *rapid.T) {
	k := m.key(t)
	owner := rapid.SampledFrom(owners).Draw(t, "owner")
	e := m.find(k)
	want := e != nil && e.owner == owner
	got, ok := m.tab.Lookup(owner, k)
	if ok != want || ok && got != (entry{key: e.key, n: e.n}) {
		t.Fatalf("Lookup(%s, %s) = %+v %v, model %+v", owner, k, got, ok, e)
	}
}

func (m *tableModel) begin(t *rapid.T) {
	err := m.tab.Begin()
	if m.closed {
		if err != Closed {
			t.Fatalf("Begin after close: %v", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	m.begun++
}

func (m *tableModel) done(*rapid.T) {
	m.tab.Done()
	m.begun = max(m.begun-1, 0)
}

func (m *tableModel) close(t *rapid.T) {
	var got, want []string
	for _, e := range m.tab.Close() {
		got = append(got, e.key)
	}
	for _, e := range m.held {
		if e.ended == 0 {
			want = append(want, e.key)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Close returned %v, model's live %v", got, want)
	}
	m.closed = true
}

// check compares every owner's listing and the count of work begun.
func (m *tableModel) check(t *rapid.T) {
	for _, owner := range owners {
		var keys, live []string
		ended := 0
		for _, e := range m.of(owner, false) {
			keys = append(keys, e.key)
			if e.ended == 0 {
				live = append(live, e.key)
			} else {
				ended++
			}
		}
		var entries []string
		for _, e := range m.tab.Entries(owner) {
			entries = append(entries, e.key)
		}
		if got := m.tab.Keys(owner); !slices.Equal(got, keys) || !slices.Equal(entries, keys) {
			t.Fatalf("%s: keys %v, entries %v, model %v", owner, got, entries, keys)
		}
		if got := m.tab.LiveKeys(owner); !slices.Equal(got, live) {
			t.Fatalf("%s: live %v, model %v", owner, got, live)
		}
		if len(live) > m.maxLive || ended > m.maxEnded {
			t.Fatalf("%s holds %d live and %d ended, past %d and %d", owner, len(live), ended, m.maxLive, m.maxEnded)
		}
	}
	if m.tab.Len() != len(m.held) {
		t.Fatalf("the table holds %d, the model %d", m.tab.Len(), len(m.held))
	}
	if err := m.tab.Wait(m.cancelled); (err == nil) != (m.begun == 0) {
		t.Fatalf("Wait with %d begun: %v", m.begun, err)
	}
}

// TestTableModel: any sequence of admissions (some whose first key
// collides with a held one), ends, drops, lookups by any owner, begun
// and done work and closes leaves the table agreeing with the model:
// the live ceiling per owner, keys unique and never overwritten, lookup
// only by the owner, listings in admission order, ended entries
// forgotten in the order they ended and never the one ending, nothing
// admitted or begun after close, Wait waiting exactly while work is
// begun.
func TestTableModel(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	rapid.Check(t, func(t *rapid.T) {
		maxLive := rapid.IntRange(-1, 4).Draw(t, "maxLive")
		maxEnded := rapid.IntRange(-1, 4).Draw(t, "maxEnded")
		m := &tableModel{tab: New[string, entry](maxLive, maxEnded), maxLive: max(maxLive, 1), maxEnded: max(maxEnded, 1), cancelled: cancelled}
		t.Repeat(map[string]func(*rapid.T){
			"admit":       m.admit,
			"admit again": m.admit, // admitting twice as often reaches the ceilings
			"end":         m.end,
			"drop":        m.drop,
			"lookup":      m.lookup,
			"begin":       m.begin,
			"done":        m.done,
			"close": func(t *rapid.T) {
				if rapid.IntRange(0, 9).Draw(t, "rarely") == 0 {
					m.close(t)
				}
			},
			"": m.check,
		})
	})
}
