package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/tool"
)

// notesHost is a seamHost over a fresh reference Agency, as main.
func notesHost(t *testing.T) (*seamHost, *agent.Reference) {
	t.Helper()
	agency := agent.NewAgency(agent.RunnerFunc(func(context.Context, agent.Turn) (string, error) { return "", nil }), agent.Options{})
	t.Cleanup(func() { agency.Close() })
	reg, err := tool.NewRegistry(agent.Tools(agency)...)
	if err != nil {
		t.Fatal(err)
	}
	return &seamHost{seam: WorkspaceSeam(), call: &tool.Call{Strand: "main", OpID: "op", StepID: "step"}, reg: reg, agency: agency}, agency
}

func noteCapCode(err error) tool.Code {
	var ce *CapError
	if errors.As(err, &ce) {
		return ce.Code
	}
	if err != nil {
		return "not a CapError"
	}
	return ""
}

// A program's note is bounded apart from agent_note's: a value past
// agent.MaxNoteBytes is written, and read back whole by notes.get.
func TestProgramNotesPassAgentNoteBound(t *testing.T) {
	t.Parallel()
	h, _ := notesHost(t)
	ctx := context.Background()
	v := []byte(`"` + strings.Repeat("x", agent.MaxNoteBytes-1) + `"`) // MaxNoteBytes+1
	if _, err := h.route(ctx, "notes.put", map[string]any{"key": "big", "value": v}); err != nil {
		t.Fatalf("a program note past agent_note's bound: %v", err)
	}
	res, err := h.route(ctx, "notes.get", map[string]any{"key": "agent/main/big"})
	if err != nil || len(res.(map[string]any)["value"].([]byte)) != len(v) {
		t.Fatalf("get: %v", err)
	}
}

// notes.read answers the note:// views as JSON, counts as a note read,
// and refuses a missing note with note_not_found.
func TestNotesRead(t *testing.T) {
	t.Parallel()
	h, _ := notesHost(t)
	ctx := context.Background()
	for _, k := range []string{"findings/auth", "findings/db"} {
		if _, err := h.route(ctx, "notes.put", map[string]any{"key": k, "value": []byte(`{"k":"` + k + `"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		path string
		want string
		code tool.Code
	}{
		{"note://agent/main/findings/auth", "{\n  \"k\": \"findings/auth\"\n}", ""},
		{"agent/main/findings/db", "{\n  \"k\": \"findings/db\"\n}", ""},
		{"note://agent/main/findings/", `"key": "agent/main/findings/auth"`, ""},
		{"note://", `"prefix": "agent/"`, ""},
		{"note://agent/main/none", "", agent.CodeNoteNotFound},
	}
	for i, tc := range cases {
		res, err := h.route(ctx, "notes.read", map[string]any{"path": tc.path})
		if noteCapCode(err) != tc.code {
			t.Fatalf("%s: %v, want %s", tc.path, err, tc.code)
		}
		if tc.code == "" {
			got := string(res.(map[string]any)["json"].([]byte))
			if !strings.Contains(got, tc.want) || !json.Valid([]byte(got)) {
				t.Errorf("%s: %s, want it to hold %s", tc.path, got, tc.want)
			}
		}
		if n := h.adm.n[admitNoteRead]; n != i+1 {
			t.Errorf("%s: %d reads admitted, want %d", tc.path, n, i+1)
		}
	}
	if _, err := h.route(ctx, "notes.read", map[string]any{}); noteCapCode(err) != codeInvalidCapabilityArguments {
		t.Errorf("no path: %v", err)
	}
}

// notes.list carries at most maxNoteListBytes of values: a page that
// would pass it stops at the note before and says truncated; one at it is
// whole (the control).
func TestNotesListBoundsItsValues(t *testing.T) {
	t.Parallel()
	h, agency := notesHost(t)
	ctx := context.Background()
	per := agent.MaxProgramNoteBytes
	fits := maxNoteListBytes / per
	v := json.RawMessage(`"` + strings.Repeat("x", per-2) + `"`)
	for i := range fits {
		if _, err := agency.Note(ctx, agent.Caller{Strand: "main"}, fmt.Sprintf("n%02d", i), v); err != nil {
			t.Fatal(err)
		}
	}
	list := func() (int, bool) {
		res, err := h.route(ctx, "notes.list", map[string]any{"prefix": "agent/main/"})
		if err != nil {
			t.Fatal(err)
		}
		m := res.(map[string]any)
		return len(m["notes"].([]any)), m["truncated"].(bool)
	}
	if n, tr := list(); n != fits || tr {
		t.Fatalf("at the bound: %d notes, truncated %v; want %d, false", n, tr, fits)
	}
	if _, err := agency.Note(ctx, agent.Caller{Strand: "main"}, "z", json.RawMessage(`1`)); err != nil {
		t.Fatal(err)
	}
	if n, tr := list(); n != fits || !tr {
		t.Fatalf("one byte past: %d notes, truncated %v; want %d, true", n, tr, fits)
	}
}

// A program writes a note past agent_note's bound, reads it back with
// notes.Get and its view with notes.Read (cap/notes), and a listing.
func TestProgramReadsNoteViews(t *testing.T) {
	t.Parallel()
	s, _ := newAgentSession(t, agent.Options{}, 0)
	res := s.execOn(t, OrchestrationSeamName, mainWith([]string{"context", "fmt", "strings", "cap/notes"}, `ctx := context.Background()
	big := []byte("\"" + strings.Repeat("x", `+fmt.Sprint(agent.MaxNoteBytes)+`) + "\"")
	key, err := notes.Put(ctx, "analysis", big)
	fmt.Println("put", key, err)
	v, found, err := notes.Get(ctx, key)
	fmt.Println("get", len(v), found, err)
	view, err := notes.Read(ctx, "note://"+key)
	fmt.Println("read", len(view), err)
	list, err := notes.Read(ctx, "note://agent/main/")
	fmt.Println("list", strings.Contains(string(list), "\"bytes\": `+fmt.Sprint(agent.MaxNoteBytes+2)+`"), err)
	_, err = notes.Read(ctx, "note://agent/main/none")
	fmt.Println("missing", err)`))
	for _, w := range []string{
		"put agent/main/analysis <nil>",
		fmt.Sprintf("get %d true <nil>", agent.MaxNoteBytes+2),
		fmt.Sprintf("read %d <nil>", agent.MaxNoteBytes+2),
		"list true <nil>",
		"missing notes.read: note_not_found",
	} {
		if !strings.Contains(res.Stdout, w) {
			t.Errorf("stdout lacks %q:\n%s", w, res.Stdout)
		}
	}
}
