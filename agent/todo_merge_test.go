package agent

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloom/loom/tool"
)

// Items that name a task already listed (by an earlier item of the same
// step, or on the board) under LooseKey are merged, and the step says so.
func TestApplyTodoReportsMerges(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		in     Board
		step   TodoStep
		tasks  []string
		merged []TodoMerge
	}{
		{"init case-folded", Board{}, TodoStep{Op: TodoInit, Items: []string{"a", "A", "b"}}, []string{"a", "b"}, []TodoMerge{{Item: "A", Into: "a"}}},
		{"init spacing", Board{}, TodoStep{Op: TodoInit, Items: []string{"read  code", "b", "Read code", " b "}}, []string{"read  code", "b"},
			[]TodoMerge{{Item: "Read code", Into: "read  code"}, {Item: "b", Into: "b"}}},
		{"init replaces the board, so nothing old is merged", board("done:a"), TodoStep{Op: TodoInit, Items: []string{"A"}}, []string{"A"}, nil},
		{"append onto the board", board("active:a"), TodoStep{Op: TodoAppend, Items: []string{"A", "c"}}, []string{"a", "c"}, []TodoMerge{{Item: "A", Into: "a"}}},
		{"nothing merged", Board{}, TodoStep{Op: TodoInit, Items: []string{"a", "b"}}, []string{"a", "b"}, nil},
		{"other ops merge nothing", board("active:a"), TodoStep{Op: TodoDone, Task: "A"}, []string{"a"}, nil},
	}
	for _, tt := range cases {
		got, merged, err := ApplyTodoReport(tt.in, tt.step)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var texts []string
		for _, task := range got.Tasks {
			texts = append(texts, task.Text)
		}
		if diff := cmp.Diff(tt.tasks, texts); diff != "" {
			t.Errorf("%s: tasks (-want +got)\n%s", tt.name, diff)
		}
		if diff := cmp.Diff(tt.merged, merged); diff != "" {
			t.Errorf("%s: merged (-want +got)\n%s", tt.name, diff)
		}
		plain, err := ApplyTodo(tt.in, tt.step)
		if err != nil || !cmp.Equal(plain, got) {
			t.Errorf("%s: ApplyTodo lands %+v (%v), ApplyTodoReport %+v", tt.name, plain, err, got)
		}
	}
}

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
	if diff := cmp.Diff([]TodoMerge{{Item: "A", Into: "a"}}, d.Merged); diff != "" {
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

// More items than a board can hold are refused before any is compared.
func TestTodoItemsBound(t *testing.T) {
	t.Parallel()
	items := make([]string, MaxTodoItems+1)
	for i := range items {
		items[i] = "same"
	}
	if _, err := ApplyTodo(Board{}, TodoStep{Op: TodoInit, Items: items[:MaxTodoItems]}); err != nil {
		t.Fatalf("%d items: %v", MaxTodoItems, err)
	}
	for _, op := range []TodoOp{TodoInit, TodoAppend} {
		if _, err := ApplyTodo(Board{}, TodoStep{Op: op, Items: items}); CodeOf(err) != CodeTodoInvalid {
			t.Errorf("%s of %d items: %v, want %s", op, len(items), err, CodeTodoInvalid)
		}
	}
}
