package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentloom/loom/codemode"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/hashline"
	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/internal/jailtest"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

// The wire format of the Messages API as the SDK sends it, the parts the
// replay server reads.
type wireRequest struct {
	Model     string        `json:"model"`
	MaxTokens int           `json:"max_tokens"`
	System    []wireBlock   `json:"system"`
	Messages  []wireMessage `json:"messages"`
	Tools     []wireTool    `json:"tools"`
}

type wireMessage struct {
	Role    string      `json:"role"`
	Content []wireBlock `json:"content"`
}

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	Content   []wireBlock     `json:"content,omitempty"`
	Source    *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source,omitempty"`
}

// result is one tool_result of a request, flattened.
type result struct {
	id      string
	isError bool
	text    string
	images  []wireBlock
}

// exchange is what one scripted step sees: the request and the results
// it carries for the previous step's calls, by tool_use id.
type exchange struct {
	req     wireRequest
	results map[string]result
}

// text returns the result of the call with id, failing the step when the
// request does not carry it.
func (x exchange) result(t *testing.T, id string) result {
	t.Helper()
	r, ok := x.results[id]
	if !ok {
		t.Errorf("the request carries no result for %s", id)
	}
	return r
}

// step is one scripted model turn: it checks the exchange and answers the
// content blocks of the model's reply.
type step func(t *testing.T, x exchange) []wireBlock

// replay is a Messages API server playing scripted conversations, one per
// first user message, and checking every request the host sends.
type replay struct {
	t       *testing.T
	scripts map[string][]step
	mu      sync.Mutex
	seq     int
	served  map[string]int
	calls   map[string][]string // the tool_use ids of each conversation's last reply
	// usage, when set, is the usage of reply n (from 0) of conversation
	// key; otherwise 10 tokens in and 10 out.
	usage func(key string, n int) map[string]any
}

func (r *replay) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	t := r.t
	if hr.Method != http.MethodPost || hr.URL.Path != "/v1/messages" {
		t.Errorf("request %s %s", hr.Method, hr.URL.Path)
		http.NotFound(w, hr)
		return
	}
	// The SDK sends the key as x-api-key or as a bearer token.
	if hr.Header.Get("X-Api-Key") != testKey && hr.Header.Get("Authorization") != "Bearer "+testKey {
		t.Errorf("no api key: x-api-key %q, authorization %q", hr.Header.Get("X-Api-Key"), hr.Header.Get("Authorization"))
	}
	var req wireRequest
	if err := json.NewDecoder(hr.Body).Decode(&req); err != nil {
		t.Errorf("decoding the request: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(req.Messages) == 0 || len(req.Messages[0].Content) == 0 {
		t.Errorf("a request without a first message")
		http.Error(w, "empty", http.StatusBadRequest)
		return
	}
	key := req.Messages[0].Content[0].Text
	r.mu.Lock()
	n := r.served[key]
	r.served[key] = n + 1
	want := r.calls[key]
	r.seq++
	msgID := fmt.Sprintf("msg_%d", r.seq)
	r.mu.Unlock()
	script, ok := r.scripts[key]
	if !ok || n >= len(script) {
		t.Errorf("conversation %q: request %d is past its script", key, n+1)
		http.Error(w, "past the script", http.StatusBadRequest)
		return
	}
	if got := len(req.Messages); got != 2*n+1 {
		t.Errorf("conversation %q request %d: %d messages, want %d", key, n+1, got, 2*n+1)
	}
	x := exchange{req: req, results: map[string]result{}}
	if n > 0 {
		// The last message answers the previous reply's calls: one
		// tool_result each, in the order of the calls, ids matched.
		last := req.Messages[len(req.Messages)-1]
		var ids []string
		for _, b := range last.Content {
			if b.Type != "tool_result" {
				continue
			}
			ids = append(ids, b.ToolUseID)
			res := result{id: b.ToolUseID, isError: b.IsError}
			for _, c := range b.Content {
				switch c.Type {
				case "text":
					res.text += c.Text
				case "image":
					res.images = append(res.images, c)
				}
			}
			x.results[b.ToolUseID] = res
		}
		if last.Role != "user" || !slices.Equal(ids, want) {
			t.Errorf("conversation %q request %d: %s message answers %v, want %v", key, n+1, last.Role, ids, want)
		}
	}
	content := script[n](t, x)
	var ids []string
	stop := "end_turn"
	for _, b := range content {
		if b.Type == "tool_use" {
			ids = append(ids, b.ID)
			stop = "tool_use"
		}
	}
	r.mu.Lock()
	r.calls[key] = ids
	r.mu.Unlock()
	usage := map[string]any{"input_tokens": 10, "output_tokens": 10}
	if r.usage != nil {
		usage = r.usage(key, n)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": req.Model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": usage,
	})
}

// use is a tool_use block calling name with args.
func use(id, name string, args any) wireBlock {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return wireBlock{Type: "tool_use", ID: id, Name: name, Input: raw}
}

func text(s string) wireBlock { return wireBlock{Type: "text", Text: s} }

// expect fails the step unless the result of id has isError as given and
// its text holds every want.
func expect(t *testing.T, x exchange, id string, isError bool, wants ...string) result {
	t.Helper()
	r := x.result(t, id)
	if r.isError != isError {
		t.Errorf("result %s: is_error %v, want %v:\n%s", id, r.isError, isError, r.text)
	}
	for _, w := range wants {
		if !strings.Contains(r.text, w) {
			t.Errorf("result %s lacks %q:\n%s", id, w, r.text)
		}
	}
	return r
}

const (
	testKey     = "test-key"
	task        = "Exercise every tool family; the marker word is zebraword."
	childPrompt = "Child: read notes/a.txt and report its second line."
	original    = "hello\nworld\n"
	edited      = "hello\nloom\n"
	childReport = "child-report: the second line is loom"
	finalAnswer = "All done: zebraword."
)

// TestAgentReplaysAConversation runs the host against a replay server
// whose scripted model uses every family: todo, fs_write, fs_read (text,
// an image and a missing file), grep, fs_edit, bash in the foreground and
// the background, job_poll, job_kill, remember, history_search over what
// the host indexed, agent_spawn and agent_wait over a child that runs its
// own loop with its own tools. Every request is checked (tool results in
// the order of the calls, ids matched, tool definitions from the
// registry) and the run answers the script's final text.
func TestAgentReplaysAConversation(t *testing.T) {
	root, err := os.MkdirTemp("/var/tmp", "loom-agent-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var pngData bytes.Buffer
	png.Encode(&pngData, img)
	if err := os.WriteFile(filepath.Join(ws, "pixel.png"), pngData.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	var jobID, handle string
	rootScript := []step{
		func(t *testing.T, x exchange) []wireBlock {
			checkRootTools(t, x.req)
			if len(x.req.System) == 0 || !strings.Contains(x.req.System[0].Text, ws) {
				t.Errorf("system prompt does not name the workspace: %+v", x.req.System)
			}
			return []wireBlock{text("Planning."),
				use("t1", agent.TodoToolName, map[string]any{"op": "init", "items": []string{"write", "check", "delegate"}}),
				use("t2", "fs_write", map[string]any{"path": "notes/a.txt", "content": original})}
		},
		func(t *testing.T, x exchange) []wireBlock {
			expect(t, x, "t1", false, "write")
			expect(t, x, "t2", false, "notes/a.txt")
			return []wireBlock{
				use("t3", "fs_read", map[string]any{"path": "notes/a.txt"}),
				use("t4", "fs_read", map[string]any{"path": "pixel.png"}),
				use("t5", "grep", map[string]any{"pattern": "wor+ld"}),
				use("t6", "fs_read", map[string]any{"path": "missing.txt"})}
		},
		func(t *testing.T, x exchange) []wireBlock {
			digest := hashline.Digest([]byte(original))
			anchor := "2:" + hashline.AnchorOf("world")
			expect(t, x, "t3", false, digest, anchor+"|world")
			if r := x.result(t, "t4"); len(r.images) != 1 || r.images[0].Source == nil ||
				r.images[0].Source.MediaType != "image/png" || r.images[0].Source.Data != base64.StdEncoding.EncodeToString(pngData.Bytes()) {
				t.Errorf("image result: %+v", r)
			}
			expect(t, x, "t5", false, "notes/a.txt")
			expect(t, x, "t6", true, "missing.txt")
			return []wireBlock{
				use("t7", "fs_edit", map[string]any{"path": "notes/a.txt", "digest": digest,
					"hunks": []any{map[string]any{"op": "replace", "start": anchor, "lines": []string{"loom"}}}}),
				use("t8", "bash", map[string]any{"command": "cat notes/a.txt", "mode": "foreground"}),
				use("t9", "bash", map[string]any{"command": "echo bg-$((40+2)); exec sleep 600", "mode": "background"})}
		},
		func(t *testing.T, x exchange) []wireBlock {
			expect(t, x, "t7", false)
			expect(t, x, "t8", false, edited)
			bg := expect(t, x, "t9", false, "started background job")
			if m := regexp.MustCompile(`started background job (\S+)`).FindStringSubmatch(bg.text); m != nil {
				jobID = m[1]
			}
			return []wireBlock{
				use("t10", job.PollToolName, map[string]any{"job": jobID, "wait_ms": 30000}),
				use("t11", history.RememberToolName, map[string]any{"kind": "fact", "title": "quokka",
					"description": "the test's note", "note": "notes/a.txt was edited to say quokka loom"})}
		},
		func(t *testing.T, x exchange) []wireBlock {
			expect(t, x, "t10", false, "bg-42")
			expect(t, x, "t11", false)
			return []wireBlock{
				use("t12", history.SearchToolName, map[string]any{"query": "zebraword"}),
				use("t13", history.SearchToolName, map[string]any{"query": "quokka", "kind": history.KindNote}),
				use("t14", agent.SpawnToolName, map[string]any{"purpose": "check the file", "prompt": childPrompt, "tools": []string{"fs_read"}})}
		},
		func(t *testing.T, x exchange) []wireBlock {
			// The hits themselves, not the query the answer repeats: the
			// task the host indexed, and the note remember stored.
			expect(t, x, "t12", false, `kind=message role=user session="main" entry="op-1/prompt"`, "**zebraword**")
			expect(t, x, "t13", false, "**quokka** loom")
			sp := expect(t, x, "t14", false)
			if m := regexp.MustCompile(`sub:main/\S+#run-1`).FindString(sp.text); m != "" {
				handle = strings.TrimRight(m, ".,;)\"'")
			}
			return []wireBlock{use("t15", agent.WaitToolName, map[string]any{"handles": []string{handle}, "wait_ms": 60000})}
		},
		func(t *testing.T, x exchange) []wireBlock {
			expect(t, x, "t15", false, childReport)
			return []wireBlock{
				use("t16", agent.TodoToolName, map[string]any{"op": "done", "task": "write"}),
				use("t17", job.KillToolName, map[string]any{"job": jobID})}
		},
		func(t *testing.T, x exchange) []wireBlock {
			expect(t, x, "t16", false, "check")
			expect(t, x, "t17", false)
			return []wireBlock{text(finalAnswer)}
		},
	}
	childScript := []step{
		func(t *testing.T, x exchange) []wireBlock {
			if len(x.req.System) == 0 || !strings.Contains(x.req.System[0].Text, "You are sub-agent sub:main/") {
				t.Errorf("the child's system prompt is not its notice: %+v", x.req.System)
			}
			var names []string
			for _, tl := range x.req.Tools {
				names = append(names, tl.Name)
			}
			slices.Sort(names)
			if want := []string{agent.NoteToolName, agent.SendToolName, "fs_read"}; !slices.Equal(names, want) {
				t.Errorf("the child is offered %v, want %v", names, want)
			}
			// bash is not the child's: the governed registry refuses it.
			return []wireBlock{use("c1", "fs_read", map[string]any{"path": "notes/a.txt"}),
				use("c2", "bash", map[string]any{"command": "touch escaped"})}
		},
		func(t *testing.T, x exchange) []wireBlock {
			expect(t, x, "c1", false, "2:"+hashline.AnchorOf("loom")+"|loom")
			expect(t, x, "c2", true, "does not hold it")
			return []wireBlock{text(childReport)}
		},
	}
	srv := httptest.NewServer(&replay{t: t, scripts: map[string][]step{task: rootScript, childPrompt: childScript},
		served: map[string]int{}, calls: map[string][]string{}})
	defer srv.Close()

	var log bytes.Buffer
	answer, err := run(context.Background(), config{
		task: task, workspace: ws, model: string(DefaultModel), apiKey: testKey, baseURL: srv.URL,
		plane: plane.Config{
			BlobDir:       filepath.Join(root, "blobs"),
			HistoryPath:   filepath.Join(root, "history.sqlite"),
			Scratch:       filepath.Join(root, "scratch"),
			BrokerOptions: broker.Options{HelperPath: jailtest.HostHelper(t)},
		},
		log: &log,
	})
	if err != nil {
		t.Fatalf("run: %v\nlog:\n%s", err, log.String())
	}
	if answer != finalAnswer {
		t.Errorf("answer %q, want %q", answer, finalAnswer)
	}
	if _, err := os.Stat(filepath.Join(ws, "escaped")); err == nil {
		t.Errorf("the child ran a tool it does not hold")
	}
	if b, err := os.ReadFile(filepath.Join(ws, "notes", "a.txt")); err != nil || string(b) != edited {
		t.Errorf("notes/a.txt: %q, %v", b, err)
	}
	if t.Failed() {
		t.Logf("log:\n%s", log.String())
	}
}

// checkRootTools checks the main strand's tool definitions: every tool
// of every family, each with its description and an object input_schema.
func checkRootTools(t *testing.T, req wireRequest) {
	t.Helper()
	var want []string
	for _, tl := range slices.Concat(tool.FileTools(), []tool.Tool{tool.GrepTool(), job.BashTool(nil)}, job.Tools(nil),
		[]tool.Tool{history.SearchTool(nil, nil), history.RememberTool(nil, nil)}, agent.Tools(nil)) {
		want = append(want, tl.Name)
	}
	want = append(want, agent.ContextToolName) // FamilyHost: the loop is its Gauge
	want = append(want, codemode.ToolName)
	var got []string
	for _, tl := range req.Tools {
		got = append(got, tl.Name)
		var schema struct {
			Type       string          `json:"type"`
			Properties json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(tl.InputSchema, &schema); err != nil || schema.Type != "object" {
			t.Errorf("tool %s: input_schema %s", tl.Name, tl.InputSchema)
		}
		if tl.Description == "" {
			t.Errorf("tool %s has no description", tl.Name)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("tools offered %v, want %v", got, want)
	}
}

// TestCLIRefusesPlainly: without an API key the command says so and
// exits 1 before touching the workspace; without a task it prints its
// usage and exits 2.
func TestCLIRefusesPlainly(t *testing.T) {
	t.Parallel()
	noEnv := func(string) string { return "" }
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no key", []string{"-workspace", "/nonexistent", "do it"}, 1, APIKeyEnv + " is not set"},
		{"no task", []string{}, 2, "usage:"},
		{"bad flag", []string{"-nope", "x"}, 2, "-nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			if code := cli(context.Background(), tt.args, noEnv, &stdout, &stderr); code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) || stdout.Len() != 0 {
				t.Fatalf("stdout %q, stderr %q; want stderr to say %q", stdout.String(), stderr.String(), tt.want)
			}
		})
	}
}
