package handles

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// entry is what the tests keep: the key and ordinal it was built with.
type entry struct {
	key string
	n   uint64
}

// plainKey mints "k<n>".
func plainKey(n uint64) string { return fmt.Sprintf("k%d", n) }

func makeEntry(k string, n uint64) entry { return entry{key: k, n: n} }

// TestTable drives a table through steps written as "op args... = want"
// and checks each answer.
//
//	admit OWNER = KEY | table_closed | live_ceiling
//	end KEY = true|false      drop KEY = true|false
//	lookup OWNER KEY = true|false
//	keys OWNER = K1,K2        live OWNER = K1,K2
//	close = K1,K2 (the live keys)     begin = ok | table_closed
func TestTable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name              string
		maxLive, maxEnded int
		steps             []string
	}{
		{"the live ceiling is per owner", 2, 8, []string{
			"admit a = k1", "admit a = k2", "admit a = live_ceiling", "admit b = k3",
			"end k1 = true", "admit a = k4", "live a = k2,k4", "keys a = k1,k2,k4", "live b = k3",
		}},
		{"a refused admission mints nothing", 1, 8, []string{
			"admit a = k1", "admit a = live_ceiling", "admit a = live_ceiling", "admit b = k2",
		}},
		{"dropping frees a slot and forgets the key", 1, 8, []string{
			"admit a = k1", "admit a = live_ceiling", "drop k1 = true", "admit a = k2",
			"lookup a k1 = false", "keys a = k2", "drop k1 = false",
		}},
		{"the entry ending is kept, the one that ended first forgotten", 3, 1, []string{
			"admit a = k1", "admit a = k2", "end k2 = true", "end k1 = true",
			"lookup a k1 = true", "lookup a k2 = false", "keys a = k1",
		}},
		{"forgetting follows the order entries ended, not were admitted", 4, 2, []string{
			"admit a = k1", "admit a = k2", "admit a = k3", "admit a = k4",
			"end k3 = true", "end k1 = true", "end k4 = true", "keys a = k1,k2,k4",
			"end k2 = true", "keys a = k2,k4",
		}},
		{"each owner keeps its own ended entries", 2, 1, []string{
			"admit a = k1", "admit b = k2", "end k1 = true", "end k2 = true",
			"lookup a k1 = true", "lookup b k2 = true",
		}},
		{"lookup answers only the owner", 2, 2, []string{
			"admit a = k1", "lookup a k1 = true", "lookup b k1 = false", "lookup a k9 = false",
			"keys b = ", "end k1 = true", "lookup b k1 = false", "lookup a k1 = true",
		}},
		{"an entry ends once", 2, 2, []string{
			"admit a = k1", "end k1 = true", "end k1 = false", "end k9 = false", "live a = ", "keys a = k1",
		}},
		{"close refuses admission and begun work, and names the live", 2, 2, []string{
			"admit a = k1", "admit b = k2", "admit a = k3", "end k1 = true", "begin = ok",
			"close = k2,k3", "admit a = table_closed", "admit c = table_closed", "begin = table_closed",
			"end k2 = true", "close = k3", "lookup a k1 = true",
		}},
		{"bounds below one count as one", 0, -3, []string{
			"admit a = k1", "admit a = live_ceiling", "end k1 = true", "admit a = k2",
			"end k2 = true", "keys a = k2", "lookup a k1 = false",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tab := New[string, entry](c.maxLive, c.maxEnded)
			for _, s := range c.steps {
				op, want, _ := strings.Cut(s, " = ")
				f := strings.Fields(op)
				var got string
				switch f[0] {
				case "admit":
					e, err := tab.Admit(f[1], plainKey, makeEntry)
					got = e.key
					if err != nil {
						got = err.(Refusal).ErrorCode()
					} else if e.n != tab.Minted() || e.key != plainKey(e.n) {
						t.Fatalf("%s: built %+v, minted %d", s, e, tab.Minted())
					}
				case "end":
					got = fmt.Sprint(tab.End(f[1]))
				case "drop":
					got = fmt.Sprint(tab.Drop(f[1]))
				case "lookup":
					e, ok := tab.Lookup(f[1], f[2])
					got = fmt.Sprint(ok)
					if ok && e.key != f[2] {
						t.Fatalf("%s: found %+v", s, e)
					}
				case "keys":
					got = strings.Join(tab.Keys(f[1]), ",")
					var es []string
					for _, e := range tab.Entries(f[1]) {
						es = append(es, e.key)
					}
					if strings.Join(es, ",") != got {
						t.Fatalf("%s: entries %v, keys %s", s, es, got)
					}
				case "live":
					got = strings.Join(tab.LiveKeys(f[1]), ",")
				case "close":
					var ks []string
					for _, e := range tab.Close() {
						ks = append(ks, e.key)
					}
					got = strings.Join(ks, ",")
				case "begin":
					got = "ok"
					if err := tab.Begin(); err != nil {
						got = err.(Refusal).ErrorCode()
					}
				default:
					t.Fatalf("unknown step %q", s)
				}
				if got != want {
					t.Fatalf("%s: got %q", s, got)
				}
			}
		})
	}
}

// TestAdmitNeverOverwritesAHeldKey: a key minted again while held is
// minted anew from the next ordinal, and the entry is built with that
// ordinal; the entry held under the key stays.
func TestAdmitNeverOverwritesAHeldKey(t *testing.T) {
	t.Parallel()
	tab := New[string, entry](4, 4)
	first, err := tab.Admit("a", plainKey, makeEntry)
	if err != nil {
		t.Fatal(err)
	}
	var tried []uint64
	second, err := tab.Admit("b", func(n uint64) string {
		tried = append(tried, n)
		if len(tried) == 1 {
			return first.key // collides with a's
		}
		return plainKey(n)
	}, makeEntry)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tried, []uint64{2, 3}) || second != (entry{"k3", 3}) || tab.Minted() != 3 {
		t.Fatalf("minted %v, built %+v, Minted %d", tried, second, tab.Minted())
	}
	if e, ok := tab.Lookup("a", first.key); !ok || e != first {
		t.Fatalf("a's entry under %s: %+v %v", first.key, e, ok)
	}
	if _, ok := tab.Lookup("b", first.key); ok {
		t.Fatal("b found a's key")
	}
}

// TestWait: Wait answers at once with nothing begun, waits for every
// Begin's Done, returns ctx's error while work is still begun, and a
// Done with nothing begun does nothing (the count never goes below
// zero, so a later Begin still counts).
func TestWait(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		calls string
		want  error
	}{
		{"", nil},
		{"begin done", nil},
		{"begin begin done done", nil},
		{"begin begin done", context.Canceled},
		{"begin done done", nil},
		{"done begin", context.Canceled},
		{"done begin done", nil},
	} {
		t.Run(c.calls, func(t *testing.T) {
			tab := New[string, entry](1, 1)
			for _, call := range strings.Fields(c.calls) {
				if call == "done" {
					tab.Done()
				} else if err := tab.Begin(); err != nil {
					t.Fatal(err)
				}
			}
			tab.Close()
			if err := tab.Wait(cancelled); err != c.want {
				t.Fatalf("Wait after %q: %v, want %v", c.calls, err, c.want)
			}
		})
	}
}

// TestWaitReturnsOnceTheLastDoneComes: a Wait already waiting returns
// when the last begun work is done.
func TestWaitReturnsOnceTheLastDoneComes(t *testing.T) {
	t.Parallel()
	tab := New[string, entry](1, 1)
	for range 3 {
		if err := tab.Begin(); err != nil {
			t.Fatal(err)
		}
	}
	tab.Close()
	waiting := make(chan error)
	go func() { waiting <- tab.Wait(context.Background()) }()
	for range 3 {
		tab.Done()
	}
	if err := <-waiting; err != nil {
		t.Fatal(err)
	}
}
