package agent

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentloom/loom/tool"
)

// maxRefusalBytes bounds the text and Details of a refusal of a call whose
// every string was huge: a few KiB, whatever the model sent.
const maxRefusalBytes = 4 << 10

// hugeValue is a value a model might send in any string field.
var hugeValue = strings.Repeat("x", hugeValueBytes)

// longKey is a key as long as a result_schema may hold.
var longKey = strings.Repeat("k", maxResultSchemaBytes/2)

// stringPaths lists, for a decoded argument object, every path to a
// string: object members and array elements (recursively).
func stringPaths(v any, at []any) [][]any {
	var out [][]any
	switch v := v.(type) {
	case string:
		out = append(out, append([]any(nil), at...))
	case map[string]any:
		for k, e := range v {
			out = append(out, stringPaths(e, append(at, k))...)
		}
	case []any:
		for i, e := range v {
			out = append(out, stringPaths(e, append(at, i))...)
		}
	}
	return out
}

// withValue returns a deep copy of v with the string at path replaced by s.
func withValue(v any, path []any, s string) any {
	if len(path) == 0 {
		return s
	}
	switch v := v.(type) {
	case map[string]any:
		c := map[string]any{}
		for k, e := range v {
			c[k] = e
		}
		k := path[0].(string)
		c[k] = withValue(v[k], path[1:], s)
		return c
	case []any:
		c := append([]any(nil), v...)
		i := path[0].(int)
		c[i] = withValue(v[i], path[1:], s)
		return c
	}
	return v
}

// hugeVariants returns args with each of its strings, in turn, made
// huge, and last args with all of them huge at once (args itself when it
// holds no string).
func hugeVariants(t *testing.T, args string) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		t.Fatalf("args %s: %v", args, err)
	}
	paths := stringPaths(v, nil)
	if len(paths) == 0 {
		return []string{args}
	}
	var out []string
	all := v
	for _, p := range paths {
		one, _ := json.Marshal(withValue(v, p, hugeValue))
		out = append(out, string(one))
		all = withValue(all, p, hugeValue)
	}
	if len(paths) > 1 {
		b, _ := json.Marshal(all)
		out = append(out, string(b))
	}
	return out
}

// answerBytes is what an outcome shows: its text and its Details.
func answerBytes(o tool.Outcome) int {
	d, _ := json.Marshal(o.Details)
	return len(o.Text) + len(d)
}

// Every refusal of the agent tools stays within maxRefusalBytes when every
// string the model sent, one at a time and all at once, is 1 MiB: a value
// is quoted back cut to tool.MaxQuotedBytes, never whole.
func TestToolRefusalsQuoteBoundedValues(t *testing.T) {
	t.Parallel()
	g := newGate()
	tight := NewAgency(g, Options{DepthCap: 1, FanOut: 1, SessionStrands: 2, Models: []string{"small"}})
	defer tight.Close()
	reg := registry(t, tight)
	tight.Govern(reg)
	lean := NewAgency(g, Options{Models: []string{"small"}, RootTools: []string{SpawnToolName, SendToolName, WaitToolName, NoteToolName, NotesToolName, RosterToolName, TodoToolName}})
	defer lean.Close()
	leanReg := registry(t, lean)
	closed := NewAgency(echo, Options{})
	closed.Close()
	closedReg := registry(t, closed)
	nilReg := registry(t, nil)

	main := &tool.Call{Strand: "main", OpID: "op", StepID: "s"}
	o := dispatch(reg, main, SpawnToolName, `{"purpose":"p","prompt":"x"}`)
	if o.IsError {
		t.Fatal(o.Text)
	}
	child := o.Details.(SpawnDetails)
	if o := dispatch(leanReg, main, TodoToolName, `{"op":"init","items":["read","write"]}`); o.IsError {
		t.Fatal(o.Text)
	}
	if o := dispatch(leanReg, main, NoteToolName, `{"key":"k","value":1}`); o.IsError {
		t.Fatal(o.Text)
	}
	forged := &tool.Call{Strand: "sub:main/forged-0000000000000000"}

	// Each string is made huge in turn where the agency gets far enough to
	// read them; where it refuses on the caller or on its own state first,
	// all at once is enough.
	regs := []struct {
		name     string
		reg      *tool.Registry
		call     *tool.Call
		perField bool
	}{
		{"governed", reg, main.At("op", "s", 7), true},
		{"lean", leanReg, main.At("op", "s", 8), true},
		{"child", reg, &tool.Call{Strand: child.Strand, OpID: "run-1", StepID: "s"}, false},
		{"forged", leanReg, forged, false},
		{"closed", closedReg, main, false},
		{"none", nilReg, main, false},
	}
	// A call marked whole is sent as it is: its strings sit inside a
	// result_schema, which is refused past maxResultSchemaBytes before
	// any is read, so its long keys are what it tests.
	calls := []struct {
		tool, args string
		whole      bool
	}{
		{SpawnToolName, `{"purpose":"p","prompt":"x","tools":["bash","agent_note"],"model":"small"}`, false},
		{SpawnToolName, `{"purpose":"p","prompt":"x","model":"m"}`, false},
		{SpawnToolName, `{"purpose":"p","prompt":"x","result_schema":"not a schema"}`, false},
		{SpawnToolName, `{"purpose":"p","prompt":"x","result_schema":{"type":"object","properties":{"k":{"type":"string"}},"required":["` + longKey + `"]}}`, true},
		{SpawnToolName, `{"purpose":"p","prompt":"x","result_schema":{"type":"object","properties":{"` + longKey + `":{"type":"string"}}}}`, true},
		{SpawnToolName, `{"purpose":"p","prompt":"x","result_schema":{"type":"object","` + longKey + `":1}}`, true},
		{SpawnToolName, `{"purpose":"p","prompt":"x","result_schema":{"type":"object","properties":{"k":{"type":"string","` + longKey + `":1}}}}`, true},
		{SpawnToolName, `{"purpose":"p","prompt":"x","result_schema":{"type":"object","properties":{"k":{"type":"array","items":{"type":"string","` + longKey + `":1}}}}}`, true},
		{SendToolName, `{"to":"sub:main/p-0000000000000000","message":"m"}`, false},
		{SendToolName, `{"to":"a#b","message":"m"}`, false},
		{SendToolName, `{"to":"` + child.Strand + `","message":"m"}`, false},
		{WaitToolName, `{"handles":["a#b","` + child.Handle + `"]}`, false},
		{NoteToolName, `{"key":"k","value":"v"}`, false},
		{NoteToolName, `{"key":"a//b","value":"v"}`, false},
		{NotesToolName, `{"prefix":"main/"}`, false},
		{RosterToolName, `{}`, false},
		{TodoToolName, `{"op":"done","task":"nope"}`, false},
		{TodoToolName, `{"op":"start","task":"read"}`, false},
		{TodoToolName, `{"op":"block","task":"read","reason":"r"}`, false},
		{TodoToolName, `{"op":"init","items":["a","b"]}`, false},
		{TodoToolName, `{"op":"append","items":["a"]}`, false},
		{TodoToolName, `{"op":"nope"}`, false},
	}
	refusals := 0
	for _, r := range regs {
		seen := map[string]bool{}
		for _, c := range calls {
			if !r.perField && seen[c.tool] {
				continue // one call per tool reaches a refusal of the caller
			}
			seen[c.tool] = true
			variants := []string{c.args}
			if !c.whole {
				variants = hugeVariants(t, c.args)
			}
			if !r.perField {
				variants = variants[len(variants)-1:]
			}
			for _, args := range variants {
				o := dispatch(r.reg, r.call, c.tool, args)
				if !o.IsError {
					continue
				}
				refusals++
				if n := answerBytes(o); n > maxRefusalBytes {
					head, _ := truncate(o.Text, 300)
					t.Errorf("%s %s (%s): a %d-byte refusal (%s): %s…", r.name, c.tool, o.Code, n, fieldsOf(c.args), head)
				}
			}
		}
	}
	if refusals == 0 {
		t.Fatal("no call was refused")
	}
}

// fieldsOf names the top-level fields of args, for a failure message.
func fieldsOf(args string) string {
	var m map[string]json.RawMessage
	_ = json.Unmarshal([]byte(args), &m)
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return fmt.Sprint(ks)
}

// TestAnswersFitTheOutcomeBound: the largest answer agent_notes and
// agent_wait state they give, from their own bounds (plus the root
// package's allowance for the lines around them), fits
// tool.MaxOutcomeBytes, so the structural bound never cuts one.
func TestAnswersFitTheOutcomeBound(t *testing.T) {
	// frame allows for an answer's headlines and notes; item for one
	// listed entry's key, state and JSON punctuation (as the root
	// package's TestBoundAboveEveryFamilysMaximum counts them).
	const frame, item = 16 << 10, 512
	for _, tc := range []struct {
		answer string
		bytes  int
	}{
		{"agent_notes text", maxNotesTextBytes + frame},
		{"agent_notes details", MaxNotesListed*(MaxNoteBytes+item) + frame},
		{"agent_wait text", MaxWaitHandles*(maxReportTextBytes+MaxNoteBytes+item) + frame},
	} {
		if tc.bytes > tool.MaxOutcomeBytes {
			t.Errorf("%s: up to %d bytes, over tool.MaxOutcomeBytes (%d)", tc.answer, tc.bytes, tool.MaxOutcomeBytes)
		}
	}
}
