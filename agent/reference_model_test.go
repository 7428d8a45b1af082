package agent

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/agentloom/loom/tool"
)

// lineageModel is the ledger the Agency should keep, restated simply.
type lineageModel struct {
	parent  map[string]string
	depth   map[string]int
	running map[string]bool
	detach  map[string]bool
	latest  map[string]Handle
	order   []string
}

func (m *lineageModel) descends(ancestor, s string) bool {
	for p, ok := m.parent[s]; ok; p, ok = m.parent[p] {
		if p == ancestor {
			return true
		}
	}
	return false
}

func (m *lineageModel) live() int {
	n := 0
	for _, r := range m.running {
		if r {
			n++
		}
	}
	return n
}

func (m *lineageModel) liveChildren(p string) int {
	n := 0
	for s, r := range m.running {
		if r && m.parent[s] == p {
			n++
		}
	}
	return n
}

// finish marks s stopped and, recursively, every running undetached child
// of a stopped strand; it returns every strand it stopped.
func (m *lineageModel) finish(s string) []string {
	m.running[s] = false
	stopped := []string{s}
	for _, c := range m.order {
		if m.parent[c] == s && m.running[c] && !m.detach[c] {
			stopped = append(stopped, m.finish(c)...)
		}
	}
	return stopped
}

func (m *lineageModel) rootOf(s string) string {
	for {
		p, ok := m.parent[s]
		if !ok {
			return s
		}
		s = p
	}
}

func TestAgencyLineageMatchesModel(t *testing.T) {
	opts := Options{DepthCap: 2, FanOut: 2, SessionStrands: 4}
	roots := []string{"r1", "r2"}
	var reachedCaps, reachedNotDescendant, reachedStart int
	rapid.Check(t, func(t *rapid.T) {
		g := newGate()
		a := NewAgency(g, opts)
		defer a.Close()
		m := &lineageModel{parent: map[string]string{}, depth: map[string]int{}, running: map[string]bool{},
			detach: map[string]bool{}, latest: map[string]Handle{}}
		step := 0
		anyStrand := func(t *rapid.T, label string) string {
			return rapid.SampledFrom(append(slices.Clone(roots), m.order...)).Draw(t, label)
		}
		caller := func(s string) Caller {
			step++
			return Caller{Strand: s, OpID: "op", StepID: fmt.Sprint(step)}
		}
		t.Repeat(map[string]func(*rapid.T){
			"spawn": func(t *rapid.T) {
				p := anyStrand(t, "parent")
				detach := rapid.Bool().Draw(t, "detach")
				sp, err := a.Spawn(bg, caller(p), SpawnRequest{Purpose: "w", Prompt: "p", Detach: detach})
				var want tool.Code
				switch {
				case m.depth[p]+1 > opts.DepthCap:
					want = CodeDepthCap
				case m.liveChildren(p) >= opts.FanOut:
					want = CodeFanOut
				case m.live() >= opts.SessionStrands:
					want = CodeSessionStrands
				}
				if codeOf(err) != want {
					t.Fatalf("spawn under %s: %v, model says %q", p, err, want)
				}
				if err != nil {
					reachedCaps++
					return
				}
				s := sp.Handle.Strand
				m.parent[s], m.depth[s], m.running[s], m.detach[s], m.latest[s] = p, m.depth[p]+1, true, detach, sp.Handle
				m.order = append(m.order, s)
			},
			"finish": func(t *rapid.T) {
				var running []string
				for _, s := range m.order {
					if m.running[s] {
						running = append(running, s)
					}
				}
				if len(running) == 0 {
					t.Skip("nothing running")
				}
				s := rapid.SampledFrom(running).Draw(t, "strand")
				g.release(m.latest[s], "done")
				var hs []Handle
				for _, x := range m.finish(s) {
					hs = append(hs, m.latest[x])
				}
				ws, err := a.Wait(bg, Caller{Strand: m.rootOf(s)}, hs, opts.withDefaults().MaxWait)
				if err != nil {
					t.Fatal(err)
				}
				for _, w := range ws {
					if !w.Ready {
						t.Fatalf("%s still running after its stop", w.Handle)
					}
				}
			},
			"send": func(t *rapid.T) {
				from, to := anyStrand(t, "from"), anyStrand(t, "to")
				d, err := a.Send(bg, caller(from), SendRequest{To: to, Message: "m"})
				var want tool.Code
				switch {
				case slices.Contains(roots, to):
					want = CodeUnknownHandle
				case !m.descends(from, to):
					want = CodeNotDescendant
				case m.running[to]:
				case m.liveChildren(m.parent[to]) >= opts.FanOut:
					want = CodeFanOut
				case m.live() >= opts.SessionStrands:
					want = CodeSessionStrands
				}
				if codeOf(err) != want {
					t.Fatalf("send %s -> %s: %v, model says %q", from, to, err, want)
				}
				if want == CodeNotDescendant {
					reachedNotDescendant++
				}
				if err == nil && !m.running[to] {
					if d.Kind != Started {
						t.Fatalf("send to idle %s: %+v", to, d)
					}
					reachedStart++
					m.running[to], m.latest[to] = true, d.Handle
				}
			},
			"wait": func(t *rapid.T) {
				if len(m.order) == 0 {
					t.Skip("no strands")
				}
				from := anyStrand(t, "from")
				to := rapid.SampledFrom(m.order).Draw(t, "to")
				ws, err := a.Wait(bg, caller(from), []Handle{m.latest[to]}, 0)
				want := CodeNotDescendant
				if m.descends(from, to) {
					want = ""
				}
				if codeOf(err) != want {
					t.Fatalf("wait %s -> %s: %v, model says %q", from, to, err, want)
				}
				if err == nil && ws[0].Ready == m.running[to] {
					t.Fatalf("wait %s: ready %v, model running %v", to, ws[0].Ready, m.running[to])
				}
			},
			"roster": func(t *rapid.T) {
				from := anyStrand(t, "from")
				peers, err := a.Roster(bg, caller(from))
				if err != nil {
					t.Fatal(err)
				}
				var want, got []string
				for _, s := range m.order {
					if m.descends(from, s) {
						want = append(want, s)
					}
				}
				for _, p := range peers {
					got = append(got, p.Strand)
					if (p.State == Running) != m.running[p.Strand] {
						t.Fatalf("roster of %s: %s is %s, model running %v", from, p.Strand, p.State, m.running[p.Strand])
					}
				}
				if !slices.Equal(want, got) {
					t.Fatalf("roster of %s: %v, model %v", from, got, want)
				}
			},
			"": func(t *rapid.T) {
				a.mu.Lock()
				live, children := a.live, maps.Clone(a.children)
				a.mu.Unlock()
				if live != m.live() || live > opts.SessionStrands {
					t.Fatalf("live %d, model %d, cap %d", live, m.live(), opts.SessionStrands)
				}
				for p, n := range children {
					if n != m.liveChildren(p) || n > opts.FanOut {
						t.Fatalf("%s has %d running children, model %d, cap %d", p, n, m.liveChildren(p), opts.FanOut)
					}
				}
				for s, d := range m.depth {
					if d > opts.DepthCap {
						t.Fatalf("%s at depth %d", s, d)
					}
				}
			},
		})
	})
	if reachedCaps == 0 || reachedNotDescendant == 0 || reachedStart == 0 {
		t.Errorf("generator reach: caps %d, not_descendant %d, continuation %d", reachedCaps, reachedNotDescendant, reachedStart)
	}
}
