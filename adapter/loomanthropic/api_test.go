package loomanthropic_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// The Messages API as the SDK's tool runner speaks it, the parts the fake
// reads. A request on a message thread either creates the thread or
// continues it from a reply, sending only the messages after that reply.
type wireRequest struct {
	Model    string          `json:"model"`
	System   []wireBlock     `json:"system"`
	Messages []wireMessage   `json:"messages"`
	Tools    []wireTool      `json:"tools"`
	Thread   *wireThreadLink `json:"thread"`
}

type wireThreadLink struct {
	Type              string `json:"type"`
	PreviousMessageID string `json:"previous_message_id"`
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
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source,omitempty"`
}

// result is one tool_result of a request, flattened.
type result struct {
	isError bool
	text    string
	images  []string // media type and data, "image/png:aGk="
}

// exchange is what one scripted reply sees.
type exchange struct {
	// n counts the replies of the conversation before this one.
	n int
	// system is the system prompt; tools the names offered.
	system string
	tools  []string
	// messages is the whole conversation so far.
	messages []wireMessage
	// results are the tool_results of the messages after the last reply,
	// by tool_use id; texts the text blocks of those messages.
	results map[string]result
	texts   []string
}

// replyFunc is one scripted conversation: the content blocks of the next
// reply.
type replyFunc func(x exchange) ([]map[string]any, error)

// fakeAPI plays the Messages API with one script per conversation, chosen
// by the conversation's first user message, on message threads or
// without.
type fakeAPI struct {
	t       *testing.T
	scripts map[string]replyFunc

	mu      sync.Mutex
	seq     int
	history map[string]wireRequest // the conversation up to and including each reply, by id
	served  map[string]int
}

func newFakeAPI(t *testing.T, scripts map[string]replyFunc) *fakeAPI {
	return &fakeAPI{t: t, scripts: scripts, history: map[string]wireRequest{}, served: map[string]int{}}
}

// client returns a client of a, served by an httptest server closed with
// the test.
func (a *fakeAPI) client(t *testing.T) anthropic.Client {
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return clientOf(srv)
}

// clientOf returns a client of srv.
func clientOf(srv *httptest.Server) anthropic.Client {
	return anthropic.NewClient(option.WithAPIKey("test-key"), option.WithBaseURL(srv.URL), option.WithMaxRetries(0))
}

// memoryClient returns a client of a that calls it in memory, for tests
// in a synctest bubble, where a network connection would stall the fake
// clock.
func (a *fakeAPI) memoryClient() anthropic.Client {
	return anthropic.NewClient(option.WithAPIKey("test-key"), option.WithBaseURL("http://api.test"), option.WithMaxRetries(0),
		option.WithHTTPClient(&http.Client{Transport: memoryTransport{a}}))
}

type memoryTransport struct{ h http.Handler }

func (m memoryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	m.h.ServeHTTP(rec, req)
	return rec.Result(), nil
}

func (a *fakeAPI) fail(w http.ResponseWriter, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if a.t != nil {
		a.t.Errorf("fake API: %s", msg)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-should-retry", "false")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": msg}})
}

func (a *fakeAPI) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	if hr.Method != http.MethodPost || hr.URL.Path != "/v1/messages" {
		a.fail(w, "request %s %s", hr.Method, hr.URL.Path)
		return
	}
	if hr.Header.Get("X-Api-Key") != "test-key" && hr.Header.Get("Authorization") != "Bearer test-key" {
		a.fail(w, "no api key")
		return
	}
	var req wireRequest
	if err := json.NewDecoder(hr.Body).Decode(&req); err != nil {
		a.fail(w, "decoding the request: %v", err)
		return
	}
	conv := req
	if req.Thread != nil && req.Thread.Type == "continue" {
		a.mu.Lock()
		prev, ok := a.history[req.Thread.PreviousMessageID]
		a.mu.Unlock()
		if !ok {
			a.fail(w, "continue from unknown reply %q", req.Thread.PreviousMessageID)
			return
		}
		conv = prev
		conv.Messages = append(append([]wireMessage(nil), prev.Messages...), req.Messages...)
	}
	if len(conv.Messages) == 0 || len(conv.Messages[0].Content) == 0 {
		a.fail(w, "a conversation without a first message")
		return
	}
	key := conv.Messages[0].Content[0].Text
	x := exchange{messages: conv.Messages, results: map[string]result{}}
	for _, b := range conv.System {
		x.system += b.Text
	}
	for _, t := range conv.Tools {
		x.tools = append(x.tools, t.Name)
	}
	for i := len(conv.Messages) - 1; i >= 0 && conv.Messages[i].Role == "user"; i-- {
		for _, b := range conv.Messages[i].Content {
			switch b.Type {
			case "text":
				x.texts = append([]string{b.Text}, x.texts...)
			case "tool_result":
				r := result{isError: b.IsError}
				for _, c := range b.Content {
					switch c.Type {
					case "text":
						r.text += c.Text
					case "image":
						r.images = append(r.images, c.Source.MediaType+":"+c.Source.Data)
					}
				}
				x.results[b.ToolUseID] = r
			}
		}
	}
	a.mu.Lock()
	x.n = a.served[key]
	a.served[key]++
	a.seq++
	id := fmt.Sprintf("msg_%d", a.seq)
	a.mu.Unlock()
	script := a.scripts[key]
	if script == nil {
		a.fail(w, "no script for %q", key)
		return
	}
	content, err := script(x)
	if err != nil {
		a.fail(w, "conversation %q reply %d: %v", key, x.n+1, err)
		return
	}
	stop := "end_turn"
	var blocks []wireBlock
	for _, c := range content {
		if c["type"] == "tool_use" {
			stop = "tool_use"
		}
		var b wireBlock
		raw, _ := json.Marshal(c)
		json.Unmarshal(raw, &b)
		blocks = append(blocks, b)
	}
	conv.Messages = append(conv.Messages, wireMessage{Role: "assistant", Content: blocks})
	a.mu.Lock()
	a.history[id] = conv
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.Model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 10},
	})
}

// text is a text block of a reply.
func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

// use is a tool_use block of a reply.
func use(id, name string, input any) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}
}

// mustResult returns the result of the call id, failing the reply when
// the request does not carry it.
func (x exchange) result(id string) (result, error) {
	r, ok := x.results[id]
	if !ok {
		return r, fmt.Errorf("no result for %s among %v", id, x.results)
	}
	return r, nil
}
