package codemode

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/tool"
)

// TestRedteamCeilingsHoldUnderRacingCalls: a program's goroutines racing
// strand.spawn and strand.map past the spawn ceiling, and the three note
// reads past theirs, are admitted exactly to the ceiling, every spawn
// admitted gets a child of its own, and identity fields a program adds to
// its arguments are refused, never read.
func TestRedteamCeilingsHoldUnderRacingCalls(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	agency := agent.NewAgency(agent.RunnerFunc(func(ctx context.Context, _ agent.Turn) (string, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "done", nil
	}), agent.Options{FanOut: 4 * defaultSpawnCeiling, SessionStrands: 8 * defaultSpawnCeiling})
	t.Cleanup(func() { close(release); agency.Close() })
	reg, err := tool.NewRegistry(agent.Tools(agency)...)
	if err != nil {
		t.Fatal(err)
	}
	h := &seamHost{seam: OrchestrationSeam(), call: &tool.Call{Strand: "main", OpID: "op", StepID: "step"}, reg: reg, agency: agency}
	ctx := context.Background()

	var mu sync.Mutex
	children := map[string]int{}
	refused := 0
	var wg sync.WaitGroup
	const spawners, mappers = defaultSpawnCeiling, 4
	for i := range spawners + mappers {
		wg.Go(func() {
			if i < spawners {
				res, err := h.route(ctx, "strand.spawn", map[string]any{"purpose": fmt.Sprint("s", i), "prompt": "p"})
				mu.Lock()
				defer mu.Unlock()
				var ce *CapError
				switch {
				case err == nil:
					children[res.(map[string]any)["strand"].(string)]++
				case errors.As(err, &ce) && ce.Code == codeSpawnCeiling:
					refused++
				default:
					t.Errorf("spawn %d: %v", i, err)
				}
				return
			}
			items := make([]any, 4)
			for j := range items {
				items[j] = map[string]any{"purpose": fmt.Sprint("m", i, j), "prompt": "p"}
			}
			res, err := h.route(ctx, "strand.map", map[string]any{"items": items, "wait_ms": int64(0)})
			if err != nil {
				t.Errorf("map %d: %v", i, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, it := range res.(map[string]any)["items"].([]any) {
				m := it.(map[string]any)
				switch m["code"] {
				case "":
					children[m["strand"].(string)]++
				case string(codeSpawnCeiling):
					refused++
				default:
					t.Errorf("map %d item: %v", i, m)
				}
			}
		})
	}
	wg.Wait()
	if len(children) != defaultSpawnCeiling || refused != spawners+4*mappers-defaultSpawnCeiling {
		t.Errorf("%d distinct children, %d refused at the ceiling; want %d and %d", len(children), refused, defaultSpawnCeiling, spawners+4*mappers-defaultSpawnCeiling)
	}
	for name, n := range children {
		if n != 1 {
			t.Errorf("%d spawns got the one child %s", n, name)
		}
	}

	reads := []string{"notes.get", "notes.list", "strand.notes"}
	admitted := 0
	for i := range 2 * maxNoteReads {
		wg.Go(func() {
			cap := reads[i%len(reads)]
			args := map[string]any{"prefix": "agent/"}
			if cap == "notes.get" {
				args = map[string]any{"key": "agent/main/x"}
			}
			_, err := h.route(ctx, cap, args)
			mu.Lock()
			defer mu.Unlock()
			var ce *CapError
			switch {
			case err == nil:
				admitted++
			case !errors.As(err, &ce) || ce.Code != codeAdmissionCeiling:
				t.Errorf("%s: %v", cap, err)
			}
		})
	}
	wg.Wait()
	if admitted != maxNoteReads {
		t.Errorf("%d racing note reads admitted, want %d", admitted, maxNoteReads)
	}

	for _, c := range []struct {
		cap  string
		args map[string]any
	}{
		{"strand.note", map[string]any{"key": "k", "value": []byte(`1`), "strand": "other"}},
		{"notes.put", map[string]any{"key": "k", "value": []byte(`1`), "caller": "other"}},
		{"strand.send", map[string]any{"to": "x", "message": "m", "op": "forged"}},
		{"strand.roster", map[string]any{"strand": "other"}},
	} {
		var ce *CapError
		if _, err := h.route(ctx, c.cap, c.args); !errors.As(err, &ce) || ce.Code != codeInvalidCapabilityArguments {
			t.Errorf("%s with an identity field: %v, want %s", c.cap, err, codeInvalidCapabilityArguments)
		}
	}
}
