package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentloom/loom/todo"
	"github.com/agentloom/loom/tool"
)

// counting wraps an Agency and counts the calls that reach it.
type counting struct {
	Agency
	spawns atomic.Int64
}

func (c *counting) Spawn(ctx context.Context, cl Caller, r SpawnRequest) (Spawned, error) {
	c.spawns.Add(1)
	return c.Agency.Spawn(ctx, cl, r)
}

// broken is an Agency whose every call fails without a Refusal.
type broken struct{ Agency }

func (broken) Wait(context.Context, Caller, []Handle, time.Duration) ([]Waited, error) {
	return nil, errors.New("connection reset")
}

func registry(t *testing.T, a Agency) *tool.Registry {
	t.Helper()
	r, err := tool.NewRegistry(Tools(a)...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func dispatch(r *tool.Registry, c *tool.Call, name, args string) tool.Outcome {
	return r.Dispatch(context.Background(), c, name, json.RawMessage(args))
}

// errorCode reads a failing outcome's code the one way the module has.
func errorCode(o tool.Outcome) tool.Code {
	return o.Code
}

func TestToolDeclarations(t *testing.T) {
	tools := Tools(nil)
	names := []string{SpawnToolName, SendToolName, WaitToolName, NoteToolName, NotesToolName, RosterToolName, TodoToolName}
	for i, tl := range tools {
		if tl.Name != names[i] {
			t.Errorf("tool %d is %s, want %s", i, tl.Name, names[i])
		}
		want := tool.ReplaySafe
		if tl.Name == SendToolName {
			want = tool.ReplayNever
		}
		if tl.Replay != want || tl.Mode != tool.Concurrent || tl.Requirements != nil || len(tl.Schema) == 0 {
			t.Errorf("%s: replay %v mode %v requirements %v schema %s", tl.Name, tl.Replay, tl.Mode, tl.Requirements != nil, tl.Schema)
		}
		out := tl.Run(context.Background(), &tool.Call{Strand: "main"}, json.RawMessage(`{}`))
		if !out.IsError {
			t.Errorf("%s with no agency succeeded: %s", tl.Name, out.Text)
		}
	}
	r := registry(t, nil)
	if o := dispatch(r, &tool.Call{Strand: "main"}, RosterToolName, `{}`); errorCode(o) != CodeAgencyUnavailable {
		t.Errorf("nil agency: %+v", o)
	}
}

func TestWaitSchemaStatesTheMaximum(t *testing.T) {
	a := NewAgency(echo, Options{MaxWait: 1234 * time.Millisecond})
	defer a.Close()
	if s := string(waitTool(a).Schema); !strings.Contains(s, "at most 1234") {
		t.Fatalf("schema does not state the maximum: %s", s)
	}
}

func TestSpawnToolRefusesMalformedSchemaBeforeTheAgency(t *testing.T) {
	a := &counting{Agency: NewAgency(echo, Options{})}
	defer a.Agency.(*Reference).Close()
	r := registry(t, a)
	c := &tool.Call{Strand: "main", OpID: "op", StepID: "s"}
	for _, schema := range []string{`{"type":"object"}`, `"nope"`, `{"type":"object","properties":{"a":{"type":"date"}}}`, `[1]`} {
		o := dispatch(r, c, SpawnToolName, `{"purpose":"p","prompt":"x","result_schema":`+schema+`}`)
		if !o.IsError || errorCode(o) != CodeMalformedSchema && errorCode(o) != tool.CodeInvalidArguments {
			t.Errorf("schema %s: %+v", schema, o)
		}
	}
	if n := a.spawns.Load(); n != 0 {
		t.Fatalf("the agency was asked %d times", n)
	}
	o := dispatch(r, c, SpawnToolName, `{"purpose":"p","prompt":"x","result_schema":{"type":"object","properties":{"n":{"type":"integer"}}}}`)
	if o.IsError || !strings.Contains(o.Text, "result contract: {n: integer}") {
		t.Fatalf("good schema: %+v", o)
	}
}

func TestIdentityComesFromTheCall(t *testing.T) {
	a := NewAgency(echo, Options{})
	defer a.Close()
	r := registry(t, a)
	c := &tool.Call{Strand: "main", OpID: "op", StepID: "s", SourceIndex: 2}
	o := dispatch(r, c, SpawnToolName, `{"purpose":"p","prompt":"x","strand":"other"}`)
	if errorCode(o) != tool.CodeUnknownProperty {
		t.Fatalf("a strand argument was not refused: %+v", o)
	}
	o = dispatch(r, c, SpawnToolName, `{"purpose":"p","prompt":"x"}`)
	d := o.Details.(SpawnDetails)
	if d.Strand != MintName(CallerOf(c), "p") {
		t.Fatalf("child %s not minted from the call", d.Strand)
	}
	// The replayed call reconciles onto the same child.
	o = dispatch(r, c, SpawnToolName, `{"purpose":"p","prompt":"x"}`)
	if d2 := o.Details.(SpawnDetails); !d2.Reconciled || d2.Strand != d.Strand {
		t.Fatalf("replay: %+v", d2)
	}
	o = dispatch(r, c, NoteToolName, `{"key":"x","value":1}`)
	if o.Details.(NoteDetails).Key != "agent/main/x" {
		t.Fatalf("note written at %+v", o.Details)
	}
}

func TestWaitToolBadInput(t *testing.T) {
	g := newGate()
	a := NewAgency(g, Options{MaxWait: 40 * time.Millisecond})
	defer a.Close()
	r := registry(t, a)
	main := &tool.Call{Strand: "main", OpID: "op", StepID: "s"}
	other := &tool.Call{Strand: "other", OpID: "op", StepID: "s"}
	sp := dispatch(r, main, SpawnToolName, `{"purpose":"p","prompt":"x"}`).Details.(SpawnDetails)
	theirs := dispatch(r, other, SpawnToolName, `{"purpose":"p","prompt":"x"}`).Details.(SpawnDetails)
	many := `["` + strings.Repeat(sp.Handle+`","`, MaxWaitHandles) + sp.Handle + `"]`
	cases := []struct {
		name, args string
		code       tool.Code
	}{
		{"forged handle", `{"handles":["sub:main/p#"]}`, CodeMalformedHandle},
		{"invented handle", `{"handles":["sub:main/p-0000000000000000#run-1"]}`, CodeUnknownHandle},
		{"another strand's handle", `{"handles":["` + theirs.Handle + `"]}`, CodeNotDescendant},
		{"no handles", `{"handles":[]}`, CodeInvalidRequest},
		{"one past the handle cap", `{"handles":` + many + `}`, CodeInvalidRequest},
		{"negative wait", `{"handles":["` + sp.Handle + `"],"wait_ms":-1}`, CodeWaitTooLong},
		{"not an integer", `{"handles":["` + sp.Handle + `"],"wait_ms":"soon"}`, tool.CodeInvalidArguments},
	}
	for _, tt := range cases {
		o := dispatch(r, main, WaitToolName, tt.args)
		if !o.IsError || errorCode(o) != tt.code {
			t.Errorf("%s: %q %+v", tt.name, errorCode(o), o)
		}
	}
	// Past the maximum is clamped and said; pending is a success.
	o := dispatch(r, main, WaitToolName, `{"handles":["`+sp.Handle+`"],"wait_ms":999999}`)
	d, _ := o.Details.(WaitDetails)
	if o.IsError || !d.Clamped || !d.Results[0].Pending || !strings.HasPrefix(o.Text, "note: wait_ms 999999 clamped to 40\n") || !strings.Contains(o.Text, "pending") {
		t.Fatalf("clamped pending wait: %+v", o)
	}
	// A host agency failing without a Refusal is still in band.
	br := registry(t, broken{a})
	if o := dispatch(br, main, WaitToolName, `{"handles":["`+sp.Handle+`"]}`); errorCode(o) != CodeAgencyUnavailable {
		t.Fatalf("broken agency: %+v", o)
	}
}

func TestWaitToolReportsResults(t *testing.T) {
	var a *Reference
	a = NewAgency(RunnerFunc(func(ctx context.Context, t Turn) (string, error) {
		switch t.Purpose {
		case "aborted":
			<-ctx.Done()
			return "", ctx.Err()
		case "long":
			return strings.Repeat("r", maxReportTextBytes+10), nil
		}
		if _, err := a.Note(ctx, Caller{Strand: t.Strand}, ResultNoteKey, json.RawMessage(t.Prompt)); err != nil {
			return "", err
		}
		return "ok", nil
	}), Options{})
	defer a.Close()
	r := registry(t, a)
	c := &tool.Call{Strand: "main", OpID: "op", StepID: "s"}
	spawn := func(i int, args string) string {
		o := dispatch(r, c.At("op", "s", i), SpawnToolName, args)
		if o.IsError {
			t.Fatal(o.Text)
		}
		return o.Details.(SpawnDetails).Handle
	}
	schema := `"result_schema":{"type":"object","properties":{"n":{"type":"integer"}}}`
	hs := []string{
		spawn(0, `{"purpose":"good","prompt":"{\"n\":1}",`+schema+`}`),
		spawn(1, `{"purpose":"bad","prompt":"{\"n\":\"x\"}",`+schema+`}`),
		spawn(2, `{"purpose":"aborted","prompt":"x","deadline_ms":10}`),
		spawn(3, `{"purpose":"long","prompt":"x"}`),
	}
	args, _ := json.Marshal(map[string]any{"handles": hs})
	o := dispatch(r, c, WaitToolName, string(args))
	if o.IsError {
		t.Fatal(o.Text)
	}
	for _, want := range []string{`result: {"n":1}`, "result: MISMATCH", "n is a string, want integer", "aborted (budget_expired)", "[report truncated at"} {
		if !strings.Contains(o.Text, want) {
			t.Errorf("wait text lacks %q:\n%s", want, o.Text)
		}
	}
	d := o.Details.(WaitDetails)
	if d.Results[0].Result != string(ResultValid) || d.Results[1].Mismatch == nil || d.Results[2].AbortReason != string(AbortBudgetExpired) ||
		len(d.Results[3].Report) != maxReportTextBytes+10 || d.Results[3].Result != "" {
		t.Errorf("details: %+v", d)
	}
}

func TestSendToolAndRoster(t *testing.T) {
	g := newGate()
	a := NewAgency(g, Options{})
	defer a.Close()
	r := registry(t, a)
	c := &tool.Call{Strand: "main", OpID: "op", StepID: "s"}
	sp := dispatch(r, c, SpawnToolName, `{"purpose":"p","prompt":"x"}`).Details.(SpawnDetails)
	o := dispatch(r, c, SendToolName, `{"to":"`+sp.Handle+`","message":"more"}`)
	if o.IsError || o.Details.(SendDetails).Delivery != string(Delivered) {
		t.Fatalf("send to running: %+v", o)
	}
	h, _ := ParseHandle(sp.Handle)
	g.release(h, "done")
	dispatch(r, c, WaitToolName, `{"handles":["`+sp.Handle+`"]}`)
	o = dispatch(r, c, SendToolName, `{"to":"`+sp.Strand+`","message":"again"}`)
	if o.IsError || o.Details.(SendDetails).Handle != sp.Strand+"#run-2" || !strings.Contains(o.Text, "new run") {
		t.Fatalf("send to idle: %+v", o)
	}
	if o := dispatch(r, c, SendToolName, `{"to":"x#y#z","message":"m"}`); errorCode(o) != CodeMalformedHandle {
		t.Fatalf("malformed to: %+v", o)
	}
	o = dispatch(r, c, RosterToolName, `{}`)
	peers := o.Details.(RosterDetails).Peers
	if o.IsError || len(peers) != 1 || peers[0].Runs != 2 || peers[0].State != string(Running) {
		t.Fatalf("roster: %+v", o)
	}
	if o := dispatch(r, &tool.Call{Strand: "other"}, RosterToolName, `{}`); o.Text != "no sub-agents" {
		t.Fatalf("empty roster: %+v", o)
	}
}

func TestNoteToolsBadInput(t *testing.T) {
	a := NewAgency(echo, Options{})
	defer a.Close()
	r := registry(t, a)
	c := &tool.Call{Strand: "main"}
	big := `"` + strings.Repeat("x", MaxNoteBytes) + `"`
	cases := []struct {
		name, args string
		code       tool.Code
	}{
		{"oversized", `{"key":"k","value":` + big + `}`, CodeNoteTooLarge},
		{"escape", `{"key":"../other/k","value":1}`, CodeBadNoteKey},
		{"todo cell", `{"key":"todo","value":1}`, CodeBadNoteKey},
		{"no value", `{"key":"k"}`, tool.CodeInvalidArguments},
	}
	for _, tt := range cases {
		if o := dispatch(r, c, NoteToolName, tt.args); !o.IsError || errorCode(o) != tt.code {
			t.Errorf("%s: %q %+v", tt.name, errorCode(o), o)
		}
	}
	dispatch(r, c, NoteToolName, `{"key":"k","value":{"a":1}}`)
	if o := dispatch(r, c, NoteToolName, `{"key":"k","value":{"a":2}}`); errorCode(o) != CodeNoteExists {
		t.Errorf("rewrite: %+v", o)
	}
	o := dispatch(r, c, NotesToolName, `{"prefix":"main/"}`)
	if o.IsError || !strings.Contains(o.Text, `agent/main/k = {"a":1}`) || len(o.Details.(NotesDetails).Notes) != 1 {
		t.Fatalf("notes: %+v", o)
	}
	if o := dispatch(r, c, NotesToolName, `{}`); o.IsError || len(o.Details.(NotesDetails).Notes) != 1 {
		t.Fatalf("all notes: %+v", o)
	}
}

func TestNotesToolBoundsItsText(t *testing.T) {
	a := NewAgency(echo, Options{})
	defer a.Close()
	r := registry(t, a)
	c := &tool.Call{Strand: "main"}
	val := `"` + strings.Repeat("v", MaxNoteBytes-100) + `"`
	for i := range 8 {
		if o := dispatch(r, c, NoteToolName, `{"key":"k`+string(rune('a'+i))+`","value":`+val+`}`); o.IsError {
			t.Fatal(o.Text)
		}
	}
	o := dispatch(r, c, NotesToolName, `{}`)
	if len(o.Text) > maxNotesTextBytes+200 || !strings.Contains(o.Text, "notes elided") || len(o.Details.(NotesDetails).Notes) != 8 {
		t.Fatalf("text %d bytes, details %d notes", len(o.Text), len(o.Details.(NotesDetails).Notes))
	}
}

func TestTodoTool(t *testing.T) {
	a := NewAgency(echo, Options{})
	defer a.Close()
	r := registry(t, a)
	c := &tool.Call{Strand: "main"}
	o := dispatch(r, c, TodoToolName, `{"op":"init","items":["read","fix","test"]}`)
	if o.IsError || o.Details.(TodoDetails).Todo.Active() != 0 || !strings.HasPrefix(o.Text, "todo: 0/3 done") {
		t.Fatalf("init: %+v", o)
	}
	o = dispatch(r, c, TodoToolName, `{"op":"done","task":"READ"}`)
	if d := o.Details.(TodoDetails); o.IsError || d.Op != todo.OpDone || d.Todo.Tasks[1].Status != todo.Active {
		t.Fatalf("done: %+v", o)
	}
	for args, code := range map[string]tool.Code{
		`{"op":"done","task":"nothing"}`: todo.CodeUnknownTask,
		`{"op":"frob"}`:                  tool.CodeInvalidArguments,
		`{"op":"append"}`:                todo.CodeInvalid,
	} {
		if o := dispatch(r, c, TodoToolName, args); !o.IsError || errorCode(o) != code {
			t.Errorf("%s: %q %+v", args, errorCode(o), o)
		}
	}
	// Another strand's board is its own.
	if o := dispatch(r, &tool.Call{Strand: "other"}, TodoToolName, `{"op":"view"}`); o.Text != "todo: (empty)" {
		t.Fatalf("other strand's board: %+v", o)
	}
}
