package loomopenai_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// The Responses API as the SDK speaks it, the parts the scripted server
// reads.
type wireRequest struct {
	Model        string      `json:"model"`
	Instructions string      `json:"instructions"`
	Input        []wireInput `json:"input"`
	Tools        []wireTool  `json:"tools"`
}

type wireTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

type wireInput struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// output is one function_call_output of a request, flattened.
type output struct {
	text   string
	images []string // image_url of each input_image part
}

// exchange is what one scripted step sees: the request and the outputs
// it carries for the previous step's calls, by call_id.
type exchange struct {
	req     wireRequest
	outputs map[string]output
}

// expect fails the step unless the output of id starts with prefix and
// holds every want, and returns it.
func (x exchange) expect(t *testing.T, id, prefix string, wants ...string) output {
	t.Helper()
	o, ok := x.outputs[id]
	if !ok {
		t.Errorf("the request carries no output for %s", id)
	}
	if !strings.HasPrefix(o.text, prefix) {
		t.Errorf("output %s does not start with %q:\n%s", id, prefix, o.text)
	}
	for _, w := range wants {
		if !strings.Contains(o.text, w) {
			t.Errorf("output %s lacks %q:\n%s", id, w, o.text)
		}
	}
	return o
}

// toolNames returns the names of the tools the request offers, sorted.
func (x exchange) toolNames() []string {
	var names []string
	for _, tl := range x.req.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// step is one scripted model turn: it checks the exchange and answers
// the output items of the model's response.
type step func(t *testing.T, x exchange) []map[string]any

// call is a function_call output item calling name with args.
func call(id, name string, args any) map[string]any {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": id, "name": name, "arguments": string(raw), "status": "completed"}
}

// say is an assistant message output item.
func say(text string) map[string]any {
	return map[string]any{"type": "message", "id": "msg_" + text, "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
}

// server plays the Responses API with scripted conversations, one per
// first user message, checking that every request answers the previous
// response's calls in order.
type server struct {
	t       *testing.T
	scripts map[string][]step
	mu      sync.Mutex
	served  map[string]int
	calls   map[string][]string // the call_ids of each conversation's last response
}

// newServer serves scripts until the test ends and returns a client of it.
func newServer(t *testing.T, scripts map[string][]step) openai.Client {
	srv := httptest.NewServer(&server{t: t, scripts: scripts, served: map[string]int{}, calls: map[string][]string{}})
	t.Cleanup(srv.Close)
	return openai.NewClient(option.WithAPIKey("test-key"), option.WithBaseURL(srv.URL+"/v1/"), option.WithMaxRetries(0))
}

func (s *server) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	t := s.t
	if hr.Method != http.MethodPost || hr.URL.Path != "/v1/responses" || hr.Header.Get("Authorization") != "Bearer test-key" {
		t.Errorf("request %s %s, authorization %q", hr.Method, hr.URL.Path, hr.Header.Get("Authorization"))
		http.NotFound(w, hr)
		return
	}
	var req wireRequest
	if err := json.NewDecoder(hr.Body).Decode(&req); err != nil || len(req.Input) == 0 {
		t.Errorf("decoding the request: %v (%d input items)", err, len(req.Input))
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var key string
	json.Unmarshal(req.Input[0].Content, &key)
	s.mu.Lock()
	n := s.served[key]
	s.served[key] = n + 1
	want := s.calls[key]
	s.mu.Unlock()
	script := s.scripts[key]
	if n >= len(script) {
		t.Errorf("conversation %q: request %d is past its script", key, n+1)
		http.Error(w, "past the script", http.StatusBadRequest)
		return
	}
	x := exchange{req: req, outputs: map[string]output{}}
	var ids []string
	for _, in := range req.Input {
		if in.Type != "function_call_output" {
			continue
		}
		ids = append(ids, in.CallID)
		var o output
		if json.Unmarshal(in.Output, &o.text) != nil {
			var parts []struct {
				Type     string `json:"type"`
				Text     string `json:"text"`
				ImageURL string `json:"image_url"`
			}
			if err := json.Unmarshal(in.Output, &parts); err != nil {
				t.Errorf("output of %s: %v: %s", in.CallID, err, in.Output)
			}
			for _, p := range parts {
				switch p.Type {
				case "input_text":
					o.text += p.Text
				case "input_image":
					o.images = append(o.images, p.ImageURL)
				}
			}
		}
		x.outputs[in.CallID] = o
	}
	// The conversation so far carries every output, the last step's at
	// its end, in the order of its calls.
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
	s.mu.Lock()
	s.calls[key] = ids
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("resp_%d", n), "object": "response", "created_at": 1, "status": "completed", "model": req.Model,
		"output": items, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 10, "total_tokens": 20,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}},
	})
}
