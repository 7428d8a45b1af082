package main

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/plane"
)

// TestAgentReportsItsContext: context_remaining answers from the usage
// the Anthropic API reported for the strand's last reply (prompt, cache
// and output tokens together), and counts the notes the strand wrote, so
// what the model is told is what the loop received.
func TestAgentReportsItsContext(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	const prompt = "How much context is left?"
	script := []step{
		func(t *testing.T, x exchange) []wireBlock {
			var names []string
			for _, tl := range x.req.Tools {
				names = append(names, tl.Name)
			}
			if names[len(names)-1] != agent.ContextToolName {
				t.Errorf("tools offered %v, want context_remaining last", names)
			}
			return []wireBlock{use("n1", agent.NoteToolName, map[string]any{"key": "findings/a", "value": 1})}
		},
		func(t *testing.T, x exchange) []wireBlock {
			expect(t, x, "n1", false)
			return []wireBlock{use("c1", agent.ContextToolName, map[string]any{})}
		},
		func(t *testing.T, x exchange) []wireBlock {
			// Reply 2 read 1200 fresh, 300 cached and 100 written to the
			// cache, and wrote 56: 1656 in use.
			expect(t, x, "c1", false, "Window 1 (0 compactions", "1656 of 200000 tokens in use, 198344 left", "compaction is off", "You wrote 1 notes")
			return []wireBlock{text("done")}
		},
	}
	srv := newReplayServer(t, map[string][]step{prompt: script}, func(_ string, n int) map[string]any {
		if n == 1 {
			return map[string]any{"input_tokens": 1200, "cache_read_input_tokens": 300, "cache_creation_input_tokens": 100, "output_tokens": 56}
		}
		return map[string]any{"input_tokens": 10, "output_tokens": 10}
	})
	answer, err := run(context.Background(), config{
		task: prompt, workspace: ws, model: string(DefaultModel), apiKey: testKey, baseURL: srv.URL,
		plane: plane.Config{
			Families:    plane.FamilyAgents | plane.FamilyHost,
			BlobDir:     filepath.Join(root, "blobs"),
			HistoryPath: filepath.Join(root, "history.sqlite"),
			Scratch:     filepath.Join(root, "scratch"),
		},
	})
	if err != nil || answer != "done" {
		t.Fatalf("run: %q, %v", answer, err)
	}
}

// newReplayServer serves scripts, with usage (nil: the default) as each
// reply's usage, until the test ends.
func newReplayServer(t *testing.T, scripts map[string][]step, usage func(string, int) map[string]any) *httptest.Server {
	srv := httptest.NewServer(&replay{t: t, scripts: scripts, served: map[string]int{}, calls: map[string][]string{}, usage: usage})
	t.Cleanup(srv.Close)
	return srv
}
