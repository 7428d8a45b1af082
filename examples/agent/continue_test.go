package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/plane"
)

// answerFromTranscript is the child model's second reply: the codeword
// it was told in an earlier message of the conversation it is sent, or
// that it does not know. It reads nothing but the request.
func answerFromTranscript(x exchange) string {
	msgs := x.req.Messages
	for _, m := range msgs[:len(msgs)-1] {
		for _, b := range m.Content {
			if _, word, ok := strings.Cut(b.Text, "The codeword is "); ok {
				return "The codeword was " + strings.TrimSuffix(strings.Fields(word)[0], ".")
			}
		}
	}
	return "I do not know the codeword"
}

// TestContinuedChildKeepsItsTranscript: a child continued with
// agent_send after its run ended goes on from its first run's
// conversation, so it answers a question only that conversation holds.
func TestContinuedChildKeepsItsTranscript(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	const (
		prompt    = "Ask a child to keep a word, then ask it back."
		kidPrompt = "The codeword is heron. Say noted."
		question  = "What was the codeword?"
		answer    = "The codeword was heron"
	)
	handleOf := func(t *testing.T, r result) string {
		h := regexp.MustCompile(`sub:main/\S+#run-\d+`).FindString(r.text)
		if h == "" {
			t.Fatalf("no handle in %q", r.text)
		}
		return strings.TrimRight(h, ".,;)\"'")
	}
	var strand string
	rootScript := []step{
		func(t *testing.T, x exchange) []wireBlock {
			return []wireBlock{use("s1", agent.SpawnToolName, map[string]any{"purpose": "keep a word", "prompt": kidPrompt, "tools": []string{}})}
		},
		func(t *testing.T, x exchange) []wireBlock {
			h := handleOf(t, expect(t, x, "s1", false))
			strand, _, _ = strings.Cut(h, "#")
			return []wireBlock{use("w1", agent.WaitToolName, map[string]any{"handles": []string{h}, "wait_ms": 30000})}
		},
		func(t *testing.T, x exchange) []wireBlock {
			expect(t, x, "w1", false, "noted")
			return []wireBlock{use("m1", agent.SendToolName, map[string]any{"to": strand, "message": question})}
		},
		func(t *testing.T, x exchange) []wireBlock {
			h := handleOf(t, expect(t, x, "m1", false, "run-2"))
			return []wireBlock{use("w2", agent.WaitToolName, map[string]any{"handles": []string{h}, "wait_ms": 30000})}
		},
		func(t *testing.T, x exchange) []wireBlock {
			expect(t, x, "w2", false, answer)
			return []wireBlock{text("done")}
		},
	}
	kidScript := []step{
		func(t *testing.T, x exchange) []wireBlock { return []wireBlock{text("noted")} },
		func(t *testing.T, x exchange) []wireBlock {
			last := x.req.Messages[len(x.req.Messages)-1]
			if len(last.Content) == 0 || last.Content[len(last.Content)-1].Text != question {
				t.Errorf("the continuation's last message is %+v, want the question", last)
			}
			return []wireBlock{text(answerFromTranscript(x))}
		},
	}
	srv := newReplayServer(t, map[string][]step{prompt: rootScript, kidPrompt: kidScript}, nil)
	got, err := run(context.Background(), config{
		task: prompt, workspace: ws, model: string(DefaultModel), apiKey: testKey, baseURL: srv.URL,
		plane: plane.Config{
			Families:    plane.FamilyAgents,
			BlobDir:     filepath.Join(root, "blobs"),
			HistoryPath: filepath.Join(root, "history.sqlite"),
			Scratch:     filepath.Join(root, "scratch"),
		},
	})
	if err != nil || got != "done" {
		t.Fatalf("run: %q, %v", got, err)
	}
}

// TestEarlierTextShowsTheRecord: a child the loop holds no transcript of
// is shown the Agency's record of its earlier runs before the new
// message; a first run is shown nothing more.
func TestEarlierTextShowsTheRecord(t *testing.T) {
	if s := earlierText(agent.Turn{Prompt: "hi"}); s != "" {
		t.Fatalf("a first run got %q", s)
	}
	s := earlierText(agent.Turn{Earlier: []agent.Exchange{{Operation: "run-1", Prompt: "The codeword is heron.", Report: "noted", State: agent.Completed}}, EarlierOmitted: 2})
	for _, want := range []string{"run-1", "The codeword is heron.", "noted", "2 older ones left out"} {
		if !strings.Contains(s, want) {
			t.Errorf("%q lacks %q", s, want)
		}
	}
}
