package adaptertest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentloom/loom/tool"
)

// Patience bounds how long a probe call waits for the rest of its turn
// to start. It is read on the clock of the synctest bubble the probes
// run in, so no test waits for it in real time.
const Patience = time.Second

// Args is the input of a probe call: Key names the call in what Probes
// records, and should be unique within a test.
type Args struct {
	Key string `json:"key"`
}

// Probes are the tools "shared" (Concurrent) and "alone" (Exclusive),
// which record, for each call, its key, its coordinates, and who ran
// beside whom. Once started, each call waits until every call of its
// turn has started (the calls are counted off in turns of PerTurn, in
// the order they start) or Patience passes, so calls that may overlap
// do overlap and a fenced call is held up for at most Patience.
//
// Probes are meant to run inside synctest.Test: outside a bubble a
// fenced call waits Patience in real time. Build them with NewProbes.
type Probes struct {
	perTurn int

	mu       sync.Mutex
	started  int
	turns    []chan struct{} // closed when every call of the turn has started
	running  map[string]bool // key → Exclusive, for the calls running now
	overlaps []string
	together int
	coords   map[string]string
}

// NewProbes returns probes whose turns are perTurn calls each; perTurn
// must be positive.
func NewProbes(perTurn int) *Probes {
	if perTurn <= 0 {
		panic("adaptertest: NewProbes needs a positive number of calls per turn")
	}
	return &Probes{perTurn: perTurn, running: map[string]bool{}, coords: map[string]string{}}
}

// Registry returns a registry holding the two probe tools.
func (p *Probes) Registry(tb testing.TB) *tool.Registry {
	tb.Helper()
	reg, err := tool.NewRegistry(
		tool.Typed(tool.Tool{Name: "shared", Description: "Runs beside others.", Mode: tool.Concurrent}, p.run(false)),
		tool.Typed(tool.Tool{Name: "alone", Description: "Runs alone.", Mode: tool.Exclusive}, p.run(true)),
	)
	if err != nil {
		tb.Fatal(err)
	}
	return reg
}

func (p *Probes) run(exclusive bool) func(context.Context, *tool.Call, Args) tool.Outcome {
	return func(ctx context.Context, c *tool.Call, a Args) tool.Outcome {
		turn := p.enter(a.Key, exclusive, fmt.Sprintf("%s/%s/%d", c.OpID, c.StepID, c.SourceIndex))
		select {
		case <-turn:
		case <-time.After(Patience):
		}
		p.leave(a.Key)
		return tool.Success(a.Key)
	}
}

// enter records a call starting and returns the channel closed when
// every call of its turn has started.
func (p *Probes) enter(key string, exclusive bool, coords string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.coords[key] = coords
	for other, otherExclusive := range p.running {
		if exclusive || otherExclusive {
			p.overlaps = append(p.overlaps, key+" beside "+other)
		} else {
			p.together++
		}
	}
	p.running[key] = exclusive
	n := p.started / p.perTurn
	for len(p.turns) <= n {
		p.turns = append(p.turns, make(chan struct{}))
	}
	if p.started++; p.started%p.perTurn == 0 {
		close(p.turns[n])
	}
	return p.turns[n]
}

func (p *Probes) leave(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, key)
}

// Overlaps returns "x beside y" for each call x that started while y
// ran, where x or y is Exclusive; a fenced dispatch leaves it empty.
func (p *Probes) Overlaps() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.overlaps)
}

// Together returns how often a Concurrent call started while another
// Concurrent call ran.
func (p *Probes) Together() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.together
}

// Coords returns each call's key mapped to its coordinates,
// "op/step/index" (tool.Call's OpID, StepID and SourceIndex).
func (p *Probes) Coords() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.coords)
}
