package agent

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentloom/loom/todo"
	"github.com/agentloom/loom/tool"
)

// TestToolRefusalsCarryOutcomeCode walks the refusal paths of the agent
// tools through a registry and reads each code the one way the module
// has: the outcome is IsError, its Code is the refusal's, its text names
// the code, and its Details (RefusalDetails) hold the reason and nothing
// that repeats the code.
func TestToolRefusalsCarryOutcomeCode(t *testing.T) {
	t.Parallel()
	g := newGate()
	// tight: governed, one level deep, one child per parent, two running
	// strands in the session.
	tight := NewAgency(g, Options{DepthCap: 1, FanOut: 1, SessionStrands: 2, Models: []string{"small"}})
	defer tight.Close()
	reg := registry(t, tight)
	tight.Govern(reg)
	// lean: ungoverned (so strands it cannot judge reach it), its roots
	// holding only the agent tools.
	lean := NewAgency(g, Options{RootTools: []string{SpawnToolName, SendToolName, WaitToolName, NoteToolName, NotesToolName, RosterToolName, TodoToolName}})
	defer lean.Close()
	leanReg := registry(t, lean)
	closed := NewAgency(echo, Options{})
	closed.Close()
	closedReg := registry(t, closed)
	nilReg := registry(t, nil)

	main := &tool.Call{Strand: "main", OpID: "op", StepID: "s"}
	other := &tool.Call{Strand: "other", OpID: "op", StepID: "s"}
	spawn := func(c *tool.Call) SpawnDetails {
		t.Helper()
		o := dispatch(reg, c, SpawnToolName, `{"purpose":"p","prompt":"x"}`)
		if o.IsError {
			t.Fatalf("setup spawn by %s: %s", c.Strand, o.Text)
		}
		return o.Details.(SpawnDetails)
	}
	child := spawn(main)   // main's one child: main is at its fan-out
	theirs := spawn(other) // the session is at its two running strands
	childCall := &tool.Call{Strand: child.Strand, OpID: "run-1", StepID: "s"}
	if o := dispatch(leanReg, main, TodoToolName, `{"op":"init","items":["read"]}`); o.IsError {
		t.Fatal(o.Text)
	}
	writer := &tool.Call{Strand: "writer"}
	for i := range maxNotesPerStrand {
		if o := dispatch(leanReg, writer, NoteToolName, fmt.Sprintf(`{"key":"k%d","value":1}`, i)); o.IsError {
			t.Fatalf("note %d: %s", i, o.Text)
		}
	}
	forged := &tool.Call{Strand: "sub:main/forged-0000000000000000"}
	badRoot := &tool.Call{Strand: "main/x"}

	cases := []struct {
		name string
		reg  *tool.Registry
		call *tool.Call
		tool string
		args string
		code tool.Code
	}{
		{"spawn: empty purpose", reg, main, SpawnToolName, `{"purpose":" ","prompt":"x"}`, CodeInvalidRequest},
		{"spawn: prompt past maxPromptBytes", reg, main, SpawnToolName, `{"purpose":"p","prompt":"` + strings.Repeat("x", maxPromptBytes+1) + `"}`, CodeInvalidRequest},
		{"spawn: negative deadline", reg, main, SpawnToolName, `{"purpose":"p","prompt":"x","deadline_ms":-1}`, CodeInvalidRequest},
		{"spawn: malformed result schema", reg, main, SpawnToolName, `{"purpose":"p","prompt":"x","result_schema":{"type":"object"}}`, CodeMalformedSchema},
		{"spawn: model not offered", reg, main, SpawnToolName, `{"purpose":"p","prompt":"x","model":"huge"}`, tool.CodeInvalidArguments},
		{"spawn: model without a catalogue", leanReg, main, SpawnToolName, `{"purpose":"p","prompt":"x","model":"huge"}`, CodeUnknownModel},
		{"spawn: tool the registry lacks", reg, main.At("op", "s", 1), SpawnToolName, `{"purpose":"p","prompt":"x","tools":["bash"]}`, CodeUnknownSpawnTool},
		{"spawn: tool the parent lacks", leanReg, main, SpawnToolName, `{"purpose":"p","prompt":"x","tools":["bash"]}`, tool.CodeToolNotHeld},
		{"spawn: past the fan-out", reg, main.At("op", "s", 2), SpawnToolName, `{"purpose":"p","prompt":"x"}`, CodeFanOut},
		{"spawn: past the session's strands", reg, &tool.Call{Strand: "third"}, SpawnToolName, `{"purpose":"p","prompt":"x"}`, CodeSessionStrands},
		{"spawn: past the depth cap", reg, childCall, SpawnToolName, `{"purpose":"p","prompt":"x"}`, CodeDepthCap},
		{"spawn: unminted calling strand", leanReg, forged, SpawnToolName, `{"purpose":"p","prompt":"x"}`, CodeUnknownHandle},
		{"spawn: malformed root name", leanReg, badRoot, SpawnToolName, `{"purpose":"p","prompt":"x"}`, CodeInvalidRequest},
		{"spawn: closed agency", closedReg, main, SpawnToolName, `{"purpose":"p","prompt":"x"}`, CodeAgencyClosed},
		{"spawn: no agency", nilReg, main, SpawnToolName, `{"purpose":"p","prompt":"x"}`, CodeAgencyUnavailable},
		{"send: malformed handle", reg, main, SendToolName, `{"to":"a#b#c","message":"m"}`, CodeMalformedHandle},
		{"send: empty message", reg, main, SendToolName, `{"to":"` + child.Strand + `","message":""}`, CodeInvalidRequest},
		{"send: negative budget", reg, main, SendToolName, `{"to":"` + child.Strand + `","message":"m","budget_ms":-1}`, CodeInvalidRequest},
		{"send: invented strand", reg, main, SendToolName, `{"to":"sub:main/p-0000000000000000","message":"m"}`, CodeUnknownHandle},
		{"send: another root's child", reg, main, SendToolName, `{"to":"` + theirs.Handle + `","message":"m"}`, CodeNotDescendant},
		{"send: closed agency", closedReg, main, SendToolName, `{"to":"x","message":"m"}`, CodeAgencyClosed},
		{"send: no agency", nilReg, main, SendToolName, `{"to":"x","message":"m"}`, CodeAgencyUnavailable},
		{"wait: another root's child", reg, main, WaitToolName, `{"handles":["` + theirs.Handle + `"]}`, CodeNotDescendant},
		{"wait: no agency", nilReg, main, WaitToolName, `{"handles":["a#b"]}`, CodeAgencyUnavailable},
		{"note: bad key", reg, main, NoteToolName, `{"key":"a//b","value":1}`, CodeBadNoteKey},
		{"note: past MaxNoteBytes", reg, main, NoteToolName, `{"key":"k","value":"` + strings.Repeat("v", MaxNoteBytes) + `"}`, CodeNoteTooLarge},
		{"note: past maxNotesPerStrand", leanReg, writer, NoteToolName, `{"key":"one-past","value":1}`, CodeNoteLimit},
		{"note: unminted calling strand", leanReg, forged, NoteToolName, `{"key":"k","value":1}`, CodeUnknownHandle},
		{"note: no agency", nilReg, main, NoteToolName, `{"key":"k","value":1}`, CodeAgencyUnavailable},
		{"notes: unminted calling strand", leanReg, forged, NotesToolName, `{}`, CodeUnknownHandle},
		{"notes: no agency", nilReg, main, NotesToolName, `{}`, CodeAgencyUnavailable},
		{"roster: unminted calling strand", leanReg, forged, RosterToolName, `{}`, CodeUnknownHandle},
		{"roster: malformed root name", leanReg, badRoot, RosterToolName, `{}`, CodeInvalidRequest},
		{"todo: unknown task", leanReg, main, TodoToolName, `{"op":"done","task":"write"}`, todo.CodeUnknownTask},
		{"todo: append nothing", leanReg, main, TodoToolName, `{"op":"append"}`, todo.CodeInvalid},
		{"todo: reason past todo.MaxReasonBytes", leanReg, main, TodoToolName, `{"op":"block","task":"read","reason":"` + strings.Repeat("r", todo.MaxReasonBytes+1) + `"}`, todo.CodeInvalid},
		{"todo: unminted calling strand", leanReg, forged, TodoToolName, `{"op":"view"}`, CodeUnknownHandle},
		{"todo: no agency", nilReg, main, TodoToolName, `{"op":"view"}`, CodeAgencyUnavailable},
	}
	for _, tt := range cases {
		o := dispatch(tt.reg, tt.call, tt.tool, tt.args)
		if !o.IsError || o.Code != tt.code {
			t.Errorf("%s: code %q, want %q: %s", tt.name, o.Code, tt.code, o.Text)
			continue
		}
		if tt.code == tool.CodeInvalidArguments {
			continue // the registry's refusal, before the tool runs
		}
		if !strings.Contains(o.Text, string(tt.code)) {
			t.Errorf("%s: text %q does not name %s", tt.name, o.Text, tt.code)
		}
		d, ok := o.Details.(RefusalDetails)
		if !ok || d.Reason == "" || !strings.Contains(o.Text, d.Reason) {
			t.Errorf("%s: details %#v", tt.name, o.Details)
		}
	}
}
