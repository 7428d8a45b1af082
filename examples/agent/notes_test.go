package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/history/sqlite"
	"github.com/agentloom/loom/plane"
)

// TestRunStartsWithTheNotesIndex: a note remembered in an earlier
// session is listed (title, kind, description) in the system prompt of
// the next run; a run before any note is stored is shown no index.
func TestRunStartsWithTheNotesIndex(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(root, "history.sqlite")
	const prompt = "What do you remember?"
	runOnce := func(t *testing.T, check func(t *testing.T, system string)) {
		script := []step{func(t *testing.T, x exchange) []wireBlock {
			if len(x.req.System) == 0 {
				t.Fatalf("no system prompt")
			}
			check(t, x.req.System[0].Text)
			return []wireBlock{text("done")}
		}}
		srv := newReplayServer(t, map[string][]step{prompt: script}, nil)
		got, err := run(context.Background(), config{
			task: prompt, workspace: ws, model: string(DefaultModel), apiKey: testKey, baseURL: srv.URL,
			plane: plane.Config{
				Families:    plane.FamilyHistory,
				BlobDir:     filepath.Join(root, "blobs"),
				HistoryPath: dbPath,
				Scratch:     filepath.Join(root, "scratch"),
			},
		})
		if err != nil || got != "done" {
			t.Fatalf("run: %q, %v", got, err)
		}
	}
	runOnce(t, func(t *testing.T, system string) {
		if strings.Contains(system, "Notes remembered") {
			t.Errorf("an index without notes:\n%s", system)
		}
	})
	s, err := sqlite.Open(dbPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Remember(context.Background(), history.Note{Title: "Tests need -race", Description: "the CI gate runs go test -race",
		Text: "Run go test -race before handing work back.", Kind: history.Feedback, Session: "earlier"})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	runOnce(t, func(t *testing.T, system string) {
		if !strings.Contains(system, "Notes remembered") || !strings.Contains(system, "[feedback] Tests need -race: the CI gate runs go test -race") {
			t.Errorf("the system prompt lacks the notes index:\n%s", system)
		}
		if strings.Contains(system, "before handing work back") {
			t.Errorf("the index shows a note's text:\n%s", system)
		}
	})
}
