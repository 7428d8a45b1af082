package sqlite

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/tool"
)

// maxAnswerBytes bounds the text and Details of an answer to a call whose
// strings were huge: a few KiB, whatever the model sent.
const maxAnswerBytes = 4 << 10

// hugeValue is a value a model might send in any string field.
var hugeValue = strings.Repeat("x", hugeValueBytes)

// flatVariants returns the flat argument object args with each string
// member, in turn, made huge, and with all of them huge at once.
func flatVariants(t *testing.T, args string) []string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(args), &m); err != nil {
		t.Fatalf("args %s: %v", args, err)
	}
	var out []string
	all := map[string]any{}
	for k, v := range m {
		all[k] = v
	}
	for k, v := range m {
		if _, ok := v.(string); !ok {
			continue
		}
		one := map[string]any{}
		for k2, v2 := range m {
			one[k2] = v2
		}
		one[k] = hugeValue
		all[k] = hugeValue
		b, _ := json.Marshal(one)
		out = append(out, string(b))
	}
	b, _ := json.Marshal(all)
	return append(out, string(b))
}

// Every answer of history_search and remember stays within
// maxAnswerBytes when each string the model sent, in turn and all at
// once, is huge: values are refused on their size or quoted cut, never
// echoed whole.
func TestToolAnswersBoundHugeValues(t *testing.T) {
	t.Parallel()
	s := openTest(t, Options{})
	mustIndex(t, s, entry("s1", "e1", "a short entry"))
	search, remember := history.SearchTool(s, nil), history.RememberTool(s, nil)
	c := &tool.Call{Strand: "s1"}
	calls := []struct {
		tl   tool.Tool
		args string
	}{
		{search, `{"query":"nothing matches this","kind":"note"}`},
		{search, `{"query":"short","syntax":"raw","scope":"session"}`},
		{search, `{"query":"","scope":"session","kind":"k"}`},
		{search, `{"query":"q","session":"s1","entry":"e1"}`},
		{search, `{"action":"read","session":"s1","entry":"nope"}`},
		{search, `{"action":"read","entry":"e1","query":"q"}`},
		{search, `{"action":"nope"}`},
		{remember, `{"title":"t","description":"d","note":"n","kind":"fact"}`},
		{remember, `{"title":"t","description":"d","note":"n","kind":"opinion"}`},
	}
	answers := 0
	for _, call := range calls {
		for _, args := range flatVariants(t, call.args) {
			o := run(t, call.tl, c, args)
			answers++
			d, _ := json.Marshal(o.Details)
			if n := len(o.Text) + len(d); n > maxAnswerBytes {
				head := o.Text
				if len(head) > 200 {
					head = head[:200]
				}
				t.Errorf("%s %s: a %d-byte answer (%s): %s…", call.tl.Name, call.args, n, o.Code, head)
			}
		}
	}
	if n, _ := s.Notes(t.Context()); n != 0 {
		t.Errorf("a huge note was stored (%d notes)", n)
	}
	if answers == 0 {
		t.Fatal("nothing was sent")
	}
}
