package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

// The Responses API as the SDK sends it, the parts the replay server
// reads.
type respRequest struct {
	Model        string `json:"model"`
	Instructions string `json:"instructions"`
	Input        []struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		CallID    string          `json:"call_id"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		Output    json.RawMessage `json:"output"`
	} `json:"input"`
	Tools []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"tools"`
}

// respExchange is what one scripted step sees: the request and, by
// call_id, the text and image URLs of every function_call_output it
// carries.
type respExchange struct {
	req    respRequest
	texts  map[string]string
	images map[string][]string
}

// expect fails the step unless the output of id starts with prefix and
// holds every want, and returns its text.
func (x respExchange) expect(t *testing.T, id, prefix string, wants ...string) string {
	t.Helper()
	got, ok := x.texts[id]
	if !ok {
		t.Errorf("the request carries no output for %s", id)
	}
	if !strings.HasPrefix(got, prefix) {
		t.Errorf("output %s does not start with %q:\n%s", id, prefix, got)
	}
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("output %s lacks %q:\n%s", id, w, got)
		}
	}
	return got
}

// respStep is one scripted model turn: it checks the exchange and answers
// the output items of the response.
type respStep func(t *testing.T, x respExchange) []map[string]any

func fnCall(id, name string, args any) map[string]any {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": id, "name": name, "arguments": string(raw), "status": "completed"}
}

func outText(s string) map[string]any {
	return map[string]any{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": s, "annotations": []any{}}}}
}

// respReplay is a Responses API server playing scripted conversations,
// one per first user message, checking that each request resends the
// conversation (2 items per step before it, at least) and answers the
// last response's calls in order.
type respReplay struct {
	t       *testing.T
	scripts map[string][]respStep
	mu      sync.Mutex
	served  map[string]int
	calls   map[string][]string
	// usage is the usage of reply n of conversation key.
	usage func(key string, n int) map[string]any
}

func (r *respReplay) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	t := r.t
	if hr.Method != http.MethodPost || hr.URL.Path != "/v1/responses" || hr.Header.Get("Authorization") != "Bearer "+testKey {
		t.Errorf("request %s %s, authorization %q", hr.Method, hr.URL.Path, hr.Header.Get("Authorization"))
		http.NotFound(w, hr)
		return
	}
	var req respRequest
	if err := json.NewDecoder(hr.Body).Decode(&req); err != nil || len(req.Input) == 0 {
		t.Errorf("decoding the request: %v", err)
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var key string
	json.Unmarshal(req.Input[0].Content, &key)
	r.mu.Lock()
	n := r.served[key]
	r.served[key] = n + 1
	want := r.calls[key]
	r.mu.Unlock()
	script := r.scripts[key]
	if n >= len(script) {
		t.Errorf("conversation %q: request %d is past its script", key, n+1)
		http.Error(w, "past the script", http.StatusBadRequest)
		return
	}
	x := respExchange{req: req, texts: map[string]string{}, images: map[string][]string{}}
	var ids []string
	for _, in := range req.Input {
		if in.Type != "function_call_output" {
			continue
		}
		ids = append(ids, in.CallID)
		var s string
		if json.Unmarshal(in.Output, &s) == nil {
			x.texts[in.CallID] = s
			continue
		}
		var parts []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			ImageURL string `json:"image_url"`
		}
		json.Unmarshal(in.Output, &parts)
		for _, p := range parts {
			x.texts[in.CallID] += p.Text
			if p.Type == "input_image" {
				x.images[in.CallID] = append(x.images[in.CallID], p.ImageURL)
			}
		}
	}
	if len(ids) < len(want) || !slices.Equal(ids[len(ids)-len(want):], want) {
		t.Errorf("conversation %q request %d answers %v, want %v last", key, n+1, ids, want)
	}
	items := script[n](t, x)
	ids = nil
	for _, it := range items {
		if it["type"] == "function_call" {
			ids = append(ids, it["call_id"].(string))
		}
	}
	r.mu.Lock()
	r.calls[key] = ids
	r.mu.Unlock()
	usage := map[string]any{"input_tokens": 10, "output_tokens": 10, "total_tokens": 20}
	if r.usage != nil {
		usage = r.usage(key, n)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprintf("resp_%d", n), "object": "response", "created_at": 1,
		"status": "completed", "model": req.Model, "output": items, "usage": usage})
}

// TestAgentRunsOverOpenAI runs the host's loop over the Responses API
// (OPENAI_API_KEY set, no -provider): tool definitions from the
// registry, an Exclusive write, an error with its code, an image, an
// unknown tool, context_remaining from the reported usage, and a child
// spawned with agent_spawn that runs the same loop over the tool it
// holds and reports back.
func TestAgentRunsOverOpenAI(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	pngData := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\x00\x05\x00\x01\xff\x89\x99=\x1d\x00\x00\x00\x00IEND\xaeB`\x82")
	if err := os.WriteFile(filepath.Join(ws, "pixel.png"), pngData, 0o644); err != nil {
		t.Fatal(err)
	}
	const (
		prompt = "Write the note and delegate the check."
		childQ = "Child: report the second line of notes/a.txt."
		report = "child-report: the second line is world"
	)
	parent := []respStep{
		func(t *testing.T, x respExchange) []map[string]any {
			var names []string
			for _, tl := range x.req.Tools {
				names = append(names, tl.Name)
				if tl.Type != "function" || tl.Description == "" || !bytes.Contains(tl.Parameters, []byte(`"type":"object"`)) {
					t.Errorf("tool %s: type %q, parameters %s", tl.Name, tl.Type, tl.Parameters)
				}
			}
			if !slices.Contains(names, "fs_write") || !slices.Contains(names, agent.SpawnToolName) || !slices.Contains(names, agent.ContextToolName) {
				t.Errorf("tools offered %v", names)
			}
			if !strings.Contains(x.req.Instructions, ws) {
				t.Errorf("instructions do not name the workspace: %q", x.req.Instructions)
			}
			return []map[string]any{outText("Writing."),
				fnCall("w1", "fs_write", map[string]any{"path": "notes/a.txt", "content": "hello\nworld\n"}),
				fnCall("r1", "fs_read", map[string]any{"path": "missing.txt"}),
				fnCall("i1", "fs_read", map[string]any{"path": "pixel.png"}),
				fnCall("u1", "no_such_tool", map[string]any{})}
		},
		func(t *testing.T, x respExchange) []map[string]any {
			x.expect(t, "w1", "", "notes/a.txt")
			x.expect(t, "r1", "error "+string(tool.CodeNotFound)+": ", "missing.txt")
			x.expect(t, "u1", "error "+string(tool.CodeUnknownTool)+": ")
			if got := x.images["i1"]; len(got) != 1 || got[0] != "data:image/png;base64,"+base64.StdEncoding.EncodeToString(pngData) {
				t.Errorf("image output: %q", got)
			}
			return []map[string]any{fnCall("k1", agent.ContextToolName, map[string]any{}),
				fnCall("s1", agent.SpawnToolName, map[string]any{"purpose": "check the file", "prompt": childQ, "tools": []string{"fs_read"}})}
		},
		func(t *testing.T, x respExchange) []map[string]any {
			// Reply 2 read 1500 tokens, 300 of them cached, and wrote 56.
			x.expect(t, "k1", "", "1556 of 200000 tokens in use")
			handle := regexp.MustCompile(`sub:main/[^\s.,;)"']+#run-1`).FindString(x.expect(t, "s1", ""))
			return []map[string]any{fnCall("a1", agent.WaitToolName, map[string]any{"handles": []string{handle}, "wait_ms": 60000})}
		},
		func(t *testing.T, x respExchange) []map[string]any {
			x.expect(t, "a1", "", report)
			return []map[string]any{outText(finalAnswer)}
		},
	}
	child := []respStep{
		func(t *testing.T, x respExchange) []map[string]any {
			if !strings.Contains(x.req.Instructions, "You are sub-agent sub:main/") {
				t.Errorf("the child's instructions are not its notice: %q", x.req.Instructions)
			}
			return []map[string]any{fnCall("c1", "fs_read", map[string]any{"path": "notes/a.txt"})}
		},
		func(t *testing.T, x respExchange) []map[string]any {
			x.expect(t, "c1", "", "|world")
			return []map[string]any{outText(report)}
		},
	}
	srv := httptest.NewServer(&respReplay{t: t, scripts: map[string][]respStep{prompt: parent, childQ: child},
		served: map[string]int{}, calls: map[string][]string{},
		usage: func(_ string, n int) map[string]any {
			if n == 1 {
				return map[string]any{"input_tokens": 1500, "input_tokens_details": map[string]any{"cached_tokens": 300}, "output_tokens": 56, "total_tokens": 1556}
			}
			return map[string]any{"input_tokens": 10, "output_tokens": 10, "total_tokens": 20}
		}})
	t.Cleanup(srv.Close)

	cfg := config{task: prompt, workspace: ws, baseURL: srv.URL + "/v1/",
		plane: plane.Config{
			Families:    plane.FamilyFiles | plane.FamilyAgents | plane.FamilyHost,
			BlobDir:     filepath.Join(root, "blobs"),
			HistoryPath: filepath.Join(root, "history.sqlite"),
			Scratch:     filepath.Join(root, "scratch"),
		}}
	cfg.provider, cfg.apiKey = pickProvider("", func(k string) string {
		return map[string]string{OpenAIKeyEnv: testKey}[k]
	})
	var log bytes.Buffer
	cfg.log = &log
	answer, err := run(context.Background(), cfg)
	if err != nil || answer != finalAnswer {
		t.Fatalf("run: %q, %v\nlog:\n%s", answer, err, log.String())
	}
}

// TestPickProvider: -provider wins; without it the Anthropic key, then
// the OpenAI key, decides; a run without the chosen provider's key, or
// naming an unknown provider, is refused saying so.
func TestPickProvider(t *testing.T) {
	t.Parallel()
	both := map[string]string{APIKeyEnv: "a-key", OpenAIKeyEnv: "o-key"}
	tests := []struct {
		name     string
		flag     string
		env      map[string]string
		provider string
		key      string
		refusal  string // what run answers, when it refuses
	}{
		{"both keys", "", both, ProviderAnthropic, "a-key", ""},
		{"openai key only", "", map[string]string{OpenAIKeyEnv: "o-key"}, ProviderOpenAI, "o-key", ""},
		{"flag wins", ProviderOpenAI, both, ProviderOpenAI, "o-key", ""},
		{"no key", "", nil, ProviderAnthropic, "", APIKeyEnv + " is not set"},
		{"no openai key", ProviderOpenAI, map[string]string{APIKeyEnv: "a-key"}, ProviderOpenAI, "", OpenAIKeyEnv + " is not set"},
		{"unknown", "gemini", both, "gemini", "", `unknown provider "gemini"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			provider, key := pickProvider(tt.flag, func(k string) string { return tt.env[k] })
			if provider != tt.provider || key != tt.key {
				t.Errorf("pickProvider: %q, %q; want %q, %q", provider, key, tt.provider, tt.key)
			}
			_, err := newProvider(config{provider: provider, apiKey: key})
			if (err != nil) != (tt.refusal != "") || (err != nil && !strings.Contains(err.Error(), tt.refusal)) {
				t.Errorf("newProvider: %v, want a refusal saying %q", err, tt.refusal)
			}
		})
	}
}
