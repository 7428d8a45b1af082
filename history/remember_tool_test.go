package history

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentloom/loom/tool"
)

type fakeMemory struct {
	err   error
	notes []Note
}

func (f *fakeMemory) Remember(_ context.Context, n Note) (Remembered, error) {
	if f.err != nil {
		return Remembered{}, f.err
	}
	f.notes = append(f.notes, n)
	return Remembered{}, nil
}

func rememberArgsJSON(title, desc, note, kind string) string {
	return fmt.Sprintf(`{"title":%q,"description":%q,"note":%q,"kind":%q}`, title, desc, note, kind)
}

func TestRememberToolDeclaration(t *testing.T) {
	tl := RememberTool(&fakeMemory{}, nil)
	if tl.Name != RememberToolName || tl.Replay != tool.ReplayNever || tl.Mode != tool.Exclusive || tl.Requirements != nil {
		t.Errorf("declaration %+v", tl)
	}
	for _, bound := range []string{
		fmt.Sprintf("title: one line, at most %d characters", maxTitleChars),
		fmt.Sprintf("description: one line, at most %d characters", maxDescriptionChars),
		fmt.Sprintf("note: at most %d characters", maxNoteChars),
		fmt.Sprintf("At most %d notes", MaxNotes),
		"kind=note",
	} {
		if !strings.Contains(tl.Description, bound) {
			t.Errorf("description does not state %q", bound)
		}
	}
	props := schemaProperties(t, tl)
	for _, p := range []string{"title", "description", "note"} {
		if props[p].Type != "string" {
			t.Errorf("schema of %s is %+v, want a string", p, props[p])
		}
	}
}

func TestRememberToolRefusals(t *testing.T) {
	ok := rememberArgsJSON("t", "d", "n", "fact")
	tests := []struct {
		name     string
		err      error
		args     string
		wantCode tool.Code
	}{
		{"valid", nil, ok, ""},
		{"title one past", nil, rememberArgsJSON(strings.Repeat("t", maxTitleChars+1), "d", "n", "fact"), CodeMemoryFieldInvalid},
		{"description two lines", nil, rememberArgsJSON("t", "a\nb", "n", "fact"), CodeMemoryFieldInvalid},
		{"note one past", nil, rememberArgsJSON("t", "d", strings.Repeat("n", maxNoteChars+1), "fact"), CodeMemoryNoteTooLong},
		{"note blank", nil, rememberArgsJSON("t", "d", "  ", "fact"), CodeNothingToRemember},
		{"unknown kind", nil, rememberArgsJSON("t", "d", "n", "opinion"), tool.CodeInvalidArguments},
		{"missing field", nil, `{"title":"t","note":"n","kind":"fact"}`, tool.CodeInvalidArguments},
		{"entry type is not an argument", nil, `{"title":"t","description":"d","note":"n","kind":"fact","type":"memory/other"}`, tool.CodeUnknownProperty},
		{"busy", refuse(CodeMemoryBusy, "leased"), ok, CodeMemoryBusy},
		{"unavailable", refuse(CodeMemoryUnavailable, "gone"), ok, CodeMemoryUnavailable},
		{"ceiling", refuse(CodeMemoryCeilingReached, "full"), ok, CodeMemoryCeilingReached},
		{"plain error", fmt.Errorf("boom"), ok, CodeMemoryUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := run(t, RememberTool(&fakeMemory{err: tt.err}, nil), &tool.Call{Strand: "main"}, tt.args)
			if o.IsError != (tt.wantCode != "") || o.Code != tt.wantCode {
				t.Fatalf("outcome %v %q: %s", o.IsError, o.Code, o.Text)
			}
			if tt.wantCode == CodeMemoryBusy && !strings.Contains(o.Text, "send the same call again") {
				t.Errorf("busy text %q", o.Text)
			}
		})
	}
	if o := run(t, RememberTool(nil, nil), &tool.Call{}, ok); o.Code != CodeMemoryUnavailable {
		t.Errorf("nil memory: %+v", o)
	}
}
