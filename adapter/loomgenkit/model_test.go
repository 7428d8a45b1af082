package loomgenkit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

// exchange is what one scripted step sees: the request, and the last
// tool message's responses by Ref.
type exchange struct {
	req       *ai.ModelRequest
	responses map[string]*ai.ToolResponse
}

// output returns the text output of the response to ref, failing the
// step unless it starts with prefix and holds every want.
func (x exchange) output(t *testing.T, ref, prefix string, wants ...string) string {
	t.Helper()
	r, ok := x.responses[ref]
	if !ok {
		t.Errorf("the request carries no response to %s", ref)
		return ""
	}
	text, _ := r.Output.(string)
	if !strings.HasPrefix(text, prefix) {
		t.Errorf("response %s does not start with %q:\n%v", ref, prefix, r.Output)
	}
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("response %s lacks %q:\n%s", ref, w, text)
		}
	}
	return text
}

// toolNames returns the names of the tools the request offers, sorted.
func (x exchange) toolNames() []string {
	var names []string
	for _, d := range x.req.Tools {
		names = append(names, d.Name)
	}
	slices.Sort(names)
	return names
}

// system returns the text of the request's system message.
func (x exchange) system() string {
	for _, m := range x.req.Messages {
		if m.Role == ai.RoleSystem {
			return m.Text()
		}
	}
	return ""
}

// step is one scripted model turn: it checks the exchange and answers the
// parts of the model's message.
type step func(t *testing.T, x exchange) []*ai.Part

// request is a tool request part calling name with args.
func request(ref, name string, args map[string]any) *ai.Part {
	return ai.NewToolRequestPart(&ai.ToolRequest{Ref: ref, Name: name, Input: args})
}

// scripted is a Genkit model playing conversations, one per first user
// message, checking that each request answers the previous turn's
// requests, each by its Ref.
type scripted struct {
	t       *testing.T
	scripts map[string][]step
	mu      sync.Mutex
	served  map[string]int
	refs    map[string][]string
}

// newModel registers a scripted model playing scripts in a fresh Genkit
// and returns both.
func newModel(t *testing.T, scripts map[string][]step) (*genkit.Genkit, string) {
	g := genkit.Init(context.Background())
	s := &scripted{t: t, scripts: scripts, served: map[string]int{}, refs: map[string][]string{}}
	const name = "test/scripted"
	genkit.DefineModel(g, name, &ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true, SystemRole: true, Media: true}}, s.generate)
	return g, name
}

func (s *scripted) generate(ctx context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
	t := s.t
	var key string
	for _, m := range req.Messages {
		if m.Role == ai.RoleUser {
			key = m.Text()
			break
		}
	}
	s.mu.Lock()
	n := s.served[key]
	s.served[key] = n + 1
	want := s.refs[key]
	s.mu.Unlock()
	script := s.scripts[key]
	if n >= len(script) {
		t.Errorf("conversation %q: request %d is past its script", key, n+1)
		return nil, fmt.Errorf("past the script")
	}
	x := exchange{req: req, responses: map[string]*ai.ToolResponse{}}
	var got []string
	if last := req.Messages[len(req.Messages)-1]; n > 0 && last.Role == ai.RoleTool {
		for _, p := range last.Content {
			if p.ToolResponse != nil {
				got = append(got, p.ToolResponse.Ref)
				x.responses[p.ToolResponse.Ref] = p.ToolResponse
			}
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("conversation %q request %d answers %v, want %v", key, n+1, got, want)
	}
	parts := script[n](t, x)
	var refs []string
	for _, p := range parts {
		if p.ToolRequest != nil {
			refs = append(refs, p.ToolRequest.Ref)
		}
	}
	slices.Sort(refs)
	s.mu.Lock()
	s.refs[key] = refs
	s.mu.Unlock()
	return &ai.ModelResponse{Message: ai.NewModelMessage(parts...), FinishReason: ai.FinishReasonStop}, nil
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
