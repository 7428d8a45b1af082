package agent

import (
	"strings"
	"testing"

	"github.com/agentloom/loom/todo"
	"github.com/agentloom/loom/tool"
	"github.com/google/go-cmp/cmp"
)

// The todo tool's answer names every merged item in its text and Details.
func TestTodoToolSaysWhatMerged(t *testing.T) {
	t.Parallel()
	a := NewAgency(echo, Options{})
	defer a.Close()
	r := registry(t, a)
	c := &tool.Call{Strand: "main", OpID: "op", StepID: "s"}
	o := dispatch(r, c, TodoToolName, `{"op":"init","items":["a","A","b"]}`)
	if o.IsError {
		t.Fatal(o.Text)
	}
	d := o.Details.(TodoDetails)
	if diff := cmp.Diff([]todo.Merge{{Item: "A", Into: "a"}}, d.Merged); diff != "" {
		t.Errorf("Details.Merged (-want +got)\n%s", diff)
	}
	if !strings.Contains(o.Text, `merged 1 item`) || !strings.Contains(o.Text, `"A" into "a"`) {
		t.Errorf("the text does not say what was merged: %q", o.Text)
	}
	o = dispatch(r, c, TodoToolName, `{"op":"init","items":["a","b"]}`)
	if d := o.Details.(TodoDetails); o.IsError || d.Merged != nil || strings.Contains(o.Text, "merged") {
		t.Errorf("a step merging nothing says it merged: %q %+v", o.Text, d)
	}
}
