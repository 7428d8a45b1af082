package history

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/tool"
)

// run calls t with args given as JSON.
func run(t *testing.T, tl tool.Tool, c *tool.Call, args string) tool.Outcome {
	t.Helper()
	return tl.Run(context.Background(), c, json.RawMessage(args))
}

// fakeHistory answers every call with err (or hits), recording the last
// query.
type fakeHistory struct {
	err     error
	hits    []Hit
	last    Query
	session string
	limit   int
	around  int
	text    string // what Read answers as the entry's text; "" means "x"
	calls   int    // how many times any method was called
}

func (f *fakeHistory) Search(_ context.Context, q Query) ([]Hit, error) {
	f.last = q
	f.calls++
	return f.hits, f.err
}

func (f *fakeHistory) Recent(_ context.Context, session string, limit int) ([]Hit, error) {
	f.session, f.limit = session, limit
	f.calls++
	return nil, f.err
}

func (f *fakeHistory) Read(_ context.Context, session, entry string, around int) ([]Entry, error) {
	f.session, f.around = session, around
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	text := "x"
	if f.text != "" {
		text = f.text
	}
	return []Entry{{Session: session, ID: entry, Kind: "message", Text: text, Time: day0}}, nil
}

// schemaProperty is what a test reads of one property of a tool's schema.
type schemaProperty struct {
	Type        string `json:"type"`
	Description string `json:"description"`
}

// schemaProperties decodes the properties of tl's schema.
func schemaProperties(t *testing.T, tl tool.Tool) map[string]schemaProperty {
	t.Helper()
	var schema struct {
		Properties map[string]schemaProperty `json:"properties"`
	}
	if err := json.Unmarshal(tl.Schema, &schema); err != nil {
		t.Fatalf("schema of %s: %v", tl.Name, err)
	}
	return schema.Properties
}

func TestSearchToolDeclaration(t *testing.T) {
	tl := SearchTool(&fakeHistory{}, nil)
	if tl.Name != SearchToolName || tl.Replay != tool.ReplaySafe || tl.Mode != tool.Concurrent || tl.Requirements != nil {
		t.Errorf("declaration %+v", tl)
	}
	props := schemaProperties(t, tl)
	for _, p := range []string{"action", "query", "syntax", "kind", "before", "limit", "scope", "session", "entry", "around"} {
		if _, ok := props[p]; !ok {
			t.Errorf("schema lacks %s: %s", p, tl.Schema)
		}
	}
	for _, p := range []string{"limit", "around"} {
		if props[p].Type != "integer" {
			t.Errorf("schema of %s is %+v, want an integer", p, props[p])
		}
	}
	// The bounds are stated once, in the description.
	for _, bound := range []string{
		fmt.Sprintf("%d to %d (default %d", MinLimit, MaxLimit, defaultLimit),
		fmt.Sprintf("around=0..%d", MaxAround),
		fmt.Sprintf("over %d bytes", blob.OverflowThreshold),
	} {
		if !strings.Contains(tl.Description, bound) {
			t.Errorf("description does not state %q", bound)
		}
	}
}

// TestSearchToolClamps: limit and around are settled as every tool
// settles a count: omitted or zero is the default, a negative value is
// refused (invalid_arguments) before the History is asked, and a value
// past the maximum is clamped with a note in the answer.
func TestSearchToolClamps(t *testing.T) {
	tests := []struct {
		args      string
		wantLimit int
		note      string
		refused   bool
	}{
		{`{"query":"x"}`, defaultLimit, "", false},
		{`{"query":"x","limit":1}`, 1, "", false},
		{`{"query":"x","limit":0}`, defaultLimit, "", false},
		{`{"query":"x","limit":-1}`, 0, "", true},
		{`{"query":"x","limit":-9223372036854775807}`, 0, "", true},
		{`{"query":"x","limit":50}`, MaxLimit, "", false},
		{`{"query":"x","limit":51}`, MaxLimit, fmt.Sprintf("note: limit 51 clamped to %d\n", MaxLimit), false},
		{`{"scope":"session","limit":99}`, MaxLimit, fmt.Sprintf("note: limit 99 clamped to %d\n", MaxLimit), false},
	}
	for _, tt := range tests {
		f := &fakeHistory{}
		o := run(t, SearchTool(f, nil), &tool.Call{Strand: "main"}, tt.args)
		if tt.refused {
			if !o.IsError || o.Code != tool.CodeInvalidArguments || f.last.Limit != 0 || f.limit != 0 {
				t.Errorf("%s: %v %q, History asked for %d: %s", tt.args, o.IsError, o.Code, f.last.Limit, o.Text)
			}
			continue
		}
		got := f.last.Limit
		if f.limit != 0 {
			got = f.limit
		}
		if o.IsError || got != tt.wantLimit {
			t.Errorf("%s: limit %d, want %d: %s", tt.args, got, tt.wantLimit, o.Text)
		}
		if hasNote := strings.HasPrefix(o.Text, "note: "); hasNote != (tt.note != "") || !strings.HasPrefix(o.Text, tt.note) {
			t.Errorf("%s: the answer does not start with %q: %s", tt.args, tt.note, o.Text)
		}
	}
	arounds := []struct {
		args    string
		want    int
		note    string
		refused bool
	}{
		{`{"action":"read","entry":"e"}`, 0, "", false},
		{`{"action":"read","entry":"e","around":0}`, 0, "", false},
		{`{"action":"read","entry":"e","around":-1}`, 0, "", true},
		{`{"action":"read","entry":"e","around":5}`, MaxAround, "", false},
		{`{"action":"read","entry":"e","around":6}`, MaxAround, fmt.Sprintf("note: around 6 clamped to %d\n", MaxAround), false},
	}
	for _, tt := range arounds {
		f := &fakeHistory{}
		o := run(t, SearchTool(f, nil), &tool.Call{Strand: "main"}, tt.args)
		if tt.refused {
			if !o.IsError || o.Code != tool.CodeInvalidArguments || f.session != "" {
				t.Errorf("%s: %v %q, History read %q: %s", tt.args, o.IsError, o.Code, f.session, o.Text)
			}
			continue
		}
		if f.around != tt.want || f.session != "main" {
			t.Errorf("%s: around %d session %q", tt.args, f.around, f.session)
		}
		if hasNote := strings.HasPrefix(o.Text, "note: "); hasNote != (tt.note != "") || !strings.HasPrefix(o.Text, tt.note) {
			t.Errorf("%s: the answer does not start with %q: %s", tt.args, tt.note, o.Text)
		}
	}
}

func TestSearchToolSessionComesFromCall(t *testing.T) {
	f := &fakeHistory{}
	tl := SearchTool(f, func(c *tool.Call) string { return "host:" + c.Strand })
	run(t, tl, &tool.Call{Strand: "main"}, `{"query":"x","scope":"session"}`)
	if f.last.Session != "host:main" || f.last.Scope != Session {
		t.Errorf("query %+v", f.last)
	}
	// No argument can name the searched session.
	o := run(t, tl, &tool.Call{Strand: "main"}, `{"query":"x","scope":"session","session":"other"}`)
	if !o.IsError {
		t.Errorf("session argument on a search was accepted: %s", o.Text)
	}
}

func TestSearchToolRefusals(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		args      string
		wantCode  tool.Code
		wantWords []string
	}{
		{"blank repository query", nil, `{"query":"  "}`, CodeIndexRefused, []string{"query", "scope=session"}},
		{"missing query", nil, `{}`, CodeIndexRefused, []string{"query", "scope=session"}},
		{"browse with a filter", nil, `{"scope":"session","kind":"note"}`, CodeIndexRefused, []string{"blank query"}},
		{"read without entry", nil, `{"action":"read"}`, CodeIndexRefused, []string{"entry"}},
		{"read with search fields", nil, `{"action":"read","entry":"e","query":"x"}`, CodeIndexRefused, []string{"read"}},
		{"negative before", nil, `{"query":"x","before":-2}`, CodeIndexRefused, []string{"before"}},
		{"query one past bound", nil, fmt.Sprintf(`{"query":%q}`, strings.Repeat("q", MaxQueryBytes+1)), CodeIndexRefused, []string{"1024"}},
		{"unknown syntax", nil, `{"query":"x","syntax":"regex"}`, tool.CodeInvalidArguments, nil},
		{"unknown property", nil, `{"query":"x","sql":"drop"}`, tool.CodeUnknownProperty, nil},
		{"unavailable", refuse(CodeIndexUnavailable, "disk gone"), `{"query":"x"}`, CodeIndexUnavailable, []string{"disk gone"}},
		{"refused", refuse(CodeIndexRefused, "bad"), `{"query":"x"}`, CodeIndexRefused, []string{"Change the query or check the IDs"}},
		{"not ready", refuse(CodeIndexNotReady, "warming"), `{"query":"x"}`, CodeIndexNotReady, []string{"send the same call again"}},
		{"busy", refuse(CodeIndexBusy, "locked"), `{"query":"x"}`, CodeIndexBusy, []string{"send the same call again"}},
		{"busy browse", refuse(CodeIndexBusy, "locked"), `{"scope":"session"}`, CodeIndexBusy, []string{"send the same call again"}},
		{"busy read", refuse(CodeIndexBusy, "locked"), `{"action":"read","entry":"e"}`, CodeIndexBusy, []string{"send the same call again"}},
		{"plain error", fmt.Errorf("boom"), `{"query":"x"}`, CodeIndexUnavailable, []string{"boom"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := run(t, SearchTool(&fakeHistory{err: tt.err}, nil), &tool.Call{Strand: "main"}, tt.args)
			if !o.IsError || o.Code != tt.wantCode {
				t.Fatalf("outcome %v %q: %s", o.IsError, o.Code, o.Text)
			}
			for _, w := range tt.wantWords {
				if !strings.Contains(o.Text, w) {
					t.Errorf("text %q lacks %q", o.Text, w)
				}
			}
		})
	}
	o := run(t, SearchTool(nil, nil), &tool.Call{}, `{"query":"x"}`)
	if o.Code != CodeIndexUnavailable {
		t.Errorf("nil history: %+v", o)
	}
}

func TestDefang(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"a << b >> c", "a << b >> c"},
		{"<<<", "<<\u200b<"},
		{"<<<<<<", "<<\u200b<<\u200b<<"},
		{"```go", "``\u200b`go"},
		{">>>x<<<", ">>\u200b>x<<\u200b<"},
	}
	for _, tt := range tests {
		got := defang(tt.in)
		if got != tt.want {
			t.Errorf("defang(%q) = %q, want %q", tt.in, got, tt.want)
		}
		for _, run := range []string{"<<<", ">>>", "```"} {
			if strings.Contains(got, run) {
				t.Errorf("defang(%q) kept %q", tt.in, run)
			}
		}
	}
}

func TestSearchToolBoundsAnUnrulyHistory(t *testing.T) {
	var hits []Hit
	for i := range MaxLimit + 5 {
		hits = append(hits, Hit{Seq: int64(100 - i), Session: "s", Entry: fmt.Sprint(i), Kind: "m", Time: day0, Snippet: strings.Repeat("x", MaxSnippetBytes+1)})
	}
	o := run(t, SearchTool(&fakeHistory{hits: hits}, nil), &tool.Call{Strand: "s"}, `{"query":"x","limit":3}`)
	d, ok := o.Details.(SearchDetails)
	if o.IsError || !ok || len(d.Hits) != 3 {
		t.Fatalf("want 3 hits, got %+v", o)
	}
	if advice := fmt.Sprintf("around=1..%d", MaxAround); !strings.Contains(o.Text, advice) {
		t.Errorf("the answer does not say %q:\n%s", advice, o.Text)
	}
	for _, h := range d.Hits {
		if len(h.Snippet) > MaxSnippetBytes {
			t.Errorf("snippet of %d bytes passed through", len(h.Snippet))
		}
	}
}

// TestSearchToolSpillsALongRead holds the tool's spill rule over any
// History: a read over blob.OverflowThreshold bytes goes to the call's
// blob store, and without one the call fails tool.CodeSpillFailed.
func TestSearchToolSpillsALongRead(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", blob.OverflowThreshold/16+1)
	tl := SearchTool(&fakeHistory{text: big}, nil)
	o := run(t, tl, &tool.Call{Strand: "s1"}, `{"action":"read","entry":"big"}`)
	if !o.IsError || o.Code != tool.CodeSpillFailed {
		t.Errorf("without a blob store: %v %q", o.IsError, o.Code)
	}
	store, err := blob.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o = run(t, tl, &tool.Call{Strand: "s1", Blobs: store}, `{"action":"read","entry":"big"}`)
	d, ok := o.Details.(ReadDetails)
	if o.IsError || !ok || d.Overflow == nil || !strings.Contains(o.Text, d.Overflow.Path) {
		t.Errorf("with a blob store the read was not spilled: %.300s", o.Text)
	}
	o = run(t, SearchTool(&fakeHistory{}, nil), &tool.Call{Strand: "s1"}, `{"action":"read","entry":"small"}`)
	if o.IsError {
		t.Errorf("a small read needs no blob store: %s", o.Text)
	}
}
