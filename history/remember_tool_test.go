package history

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/tool"
)

type fakeMemory struct {
	err   error
	notes []Note
}

func (f *fakeMemory) Remember(_ context.Context, n Note) error {
	if f.err != nil {
		return f.err
	}
	f.notes = append(f.notes, n)
	return nil
}

func rememberArgsJSON(title, desc, note, kind string) string {
	return fmt.Sprintf(`{"title":%q,"description":%q,"note":%q,"kind":%q}`, title, desc, note, kind)
}

func TestRememberToolDeclaration(t *testing.T) {
	tl := RememberTool(&fakeMemory{}, nil)
	if tl.Name != RememberToolName || tl.Replay != tool.ReplayNever || tl.Mode != tool.Exclusive || tl.Requirements != nil {
		t.Errorf("declaration %+v", tl)
	}
	for _, bound := range []string{"80", "160", "4000", "500", "kind=note"} {
		if !strings.Contains(tl.Description, bound) {
			t.Errorf("description does not state %q", bound)
		}
	}
}

func TestRememberToolRefusals(t *testing.T) {
	ok := rememberArgsJSON("t", "d", "n", "fact")
	tests := []struct {
		name     string
		err      error
		args     string
		wantCode string
	}{
		{"valid", nil, ok, ""},
		{"title one past", nil, rememberArgsJSON(strings.Repeat("t", MaxTitleChars+1), "d", "n", "fact"), "FieldInvalid"},
		{"description two lines", nil, rememberArgsJSON("t", "a\nb", "n", "fact"), "FieldInvalid"},
		{"note one past", nil, rememberArgsJSON("t", "d", strings.Repeat("n", MaxNoteChars+1), "fact"), "NoteTooLong"},
		{"note blank", nil, rememberArgsJSON("t", "d", "  ", "fact"), "NothingToRemember"},
		{"unknown kind", nil, rememberArgsJSON("t", "d", "n", "opinion"), "invalid_arguments"},
		{"missing field", nil, `{"title":"t","note":"n","kind":"fact"}`, "invalid_arguments"},
		{"entry type is not an argument", nil, `{"title":"t","description":"d","note":"n","kind":"fact","type":"memory/other"}`, "unknown_property"},
		{"busy", refuse(MemoryBusy, "leased"), ok, "MemoryBusy"},
		{"unavailable", refuse(MemoryUnavailable, "gone"), ok, "MemoryUnavailable"},
		{"ceiling", refuse(CeilingReached, "full"), ok, "CeilingReached"},
		{"plain error", fmt.Errorf("boom"), ok, "MemoryUnavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := run(t, RememberTool(&fakeMemory{err: tt.err}, nil), &tool.Call{Strand: "main"}, tt.args)
			if o.IsError != (tt.wantCode != "") || errorCode(o) != tt.wantCode {
				t.Fatalf("outcome %v %q: %s", o.IsError, errorCode(o), o.Text)
			}
			if tt.wantCode == "MemoryBusy" && !strings.Contains(o.Text, "send the same call again") {
				t.Errorf("busy text %q", o.Text)
			}
		})
	}
	if o := run(t, RememberTool(nil, nil), &tool.Call{}, ok); errorCode(o) != "MemoryUnavailable" {
		t.Errorf("nil memory: %+v", o)
	}
}

func TestRememberToolStoresRedactedNoteSearchable(t *testing.T) {
	s := openTest(t)
	c := &tool.Call{Strand: "main", Now: func() time.Time { return day0 }}
	o := run(t, RememberTool(s, nil), c, rememberArgsJSON("Staging deploy", "How to deploy to staging", "Use OPENAI_API_KEY=sk-"+strings.Repeat("z", 30)+" and make deploy", "decision"))
	if o.IsError || !strings.Contains(o.Text, RedactedMark) {
		t.Fatalf("remember: %s", o.Text)
	}
	o = run(t, SearchTool(s, nil), c, `{"query":"staging","kind":"note"}`)
	if o.IsError || !strings.Contains(o.Text, "kind=note role=decision") || !strings.Contains(o.Text, "date=2026-11-30") || strings.Contains(o.Text, "zzzz") {
		t.Errorf("note search:\n%s", o.Text)
	}
}
