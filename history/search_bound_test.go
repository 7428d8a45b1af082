package history

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentloom/loom/tool"
)

// maxAnswerBytes bounds the text and Details of an answer to a call whose
// strings were huge: a few KiB, whatever the model sent.
const maxAnswerBytes = 4 << 10

// The tool holds the seam's bounds itself: a query, kind, session or
// entry over its bound is refused CodeIndexRefused before the History is
// asked, whatever the History would have done with it, and the refusal
// states the size, not the value. A value at its bound reaches the
// History.
func TestSearchToolRefusesOverBoundValuesFirst(t *testing.T) {
	t.Parallel()
	over := func(n int) string { return strings.Repeat("q", n+1) }
	at := func(n int) string { return strings.Repeat("q", n) }
	cases := []struct {
		name   string
		args   map[string]any
		reject bool
	}{
		{"words query at the bound", map[string]any{"query": at(MaxQueryBytes)}, false},
		{"words query one past", map[string]any{"query": over(MaxQueryBytes)}, true},
		{"raw query one past", map[string]any{"query": over(MaxQueryBytes), "syntax": "raw"}, true},
		{"raw query 1 MiB", map[string]any{"query": strings.Repeat("q", 1<<20), "syntax": "raw"}, true},
		{"kind at the bound", map[string]any{"query": "q", "kind": at(MaxKindBytes)}, false},
		{"kind one past", map[string]any{"query": "q", "kind": over(MaxKindBytes)}, true},
		{"browse kind one past", map[string]any{"scope": "session", "kind": over(MaxKindBytes)}, true},
		{"read entry at the bound", map[string]any{"action": "read", "entry": at(MaxIDBytes)}, false},
		{"read entry one past", map[string]any{"action": "read", "entry": over(MaxIDBytes)}, true},
		{"read session one past", map[string]any{"action": "read", "entry": "e", "session": over(MaxIDBytes)}, true},
		{"read entry 1 MiB", map[string]any{"action": "read", "entry": strings.Repeat("e", 1<<20)}, true},
	}
	for _, tt := range cases {
		f := &fakeHistory{}
		args, _ := json.Marshal(tt.args)
		o := run(t, SearchTool(f, nil), &tool.Call{Strand: "s1"}, string(args))
		if tt.reject {
			if !o.IsError || o.Code != CodeIndexRefused || f.calls != 0 {
				t.Errorf("%s: %v %q after %d seam calls: %.200s", tt.name, o.IsError, o.Code, f.calls, o.Text)
			}
		} else if o.IsError || f.calls != 1 {
			t.Errorf("%s: %v %q after %d seam calls: %.200s", tt.name, o.IsError, o.Code, f.calls, o.Text)
		}
		d, _ := json.Marshal(o.Details)
		if tt.reject && len(o.Text)+len(d) > maxAnswerBytes {
			t.Errorf("%s: a %d-byte refusal", tt.name, len(o.Text)+len(d))
		}
	}
}

// A History that finds nothing and refuses nothing still gets bounded
// answers from the tool: the values it echoes are the ones within their
// bounds, quoted cut.
func TestSearchToolAnswersStayBounded(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("w ", maxQueryTerms/2)
	for _, args := range []map[string]any{
		{"query": big + strings.Repeat("y", MaxQueryBytes-len(big)), "kind": strings.Repeat("\x01", MaxKindBytes)},
		{"query": strings.Repeat("\x01", MaxQueryBytes), "syntax": "raw"},
	} {
		raw, _ := json.Marshal(args)
		o := run(t, SearchTool(&fakeHistory{}, nil), &tool.Call{Strand: "s1"}, string(raw))
		if o.IsError {
			t.Fatalf("%.60s…: %s", raw, o.Text)
		}
		// The text quotes each value cut; Details carry the query whole.
		if n := len(o.Text); n > maxAnswerBytes/2 {
			t.Errorf("%.60s…: a %d-byte text", raw, n)
		}
	}
}
