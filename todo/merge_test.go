package todo

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Items that name a task already listed (by an earlier item of the same
// step, or on the board) under looseKey are merged, and the step says so.
func TestApplyTodoReportsMerges(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		in     Board
		step   Step
		tasks  []string
		merged []Merge
	}{
		{"init case-folded", Board{}, Step{Op: OpInit, Items: []string{"a", "A", "b"}}, []string{"a", "b"}, []Merge{{Item: "A", Into: "a"}}},
		{"init spacing", Board{}, Step{Op: OpInit, Items: []string{"read  code", "b", "Read code", " b "}}, []string{"read  code", "b"},
			[]Merge{{Item: "Read code", Into: "read  code"}, {Item: "b", Into: "b"}}},
		{"init replaces the board, so nothing old is merged", board("done:a"), Step{Op: OpInit, Items: []string{"A"}}, []string{"A"}, nil},
		{"append onto the board", board("active:a"), Step{Op: OpAppend, Items: []string{"A", "c"}}, []string{"a", "c"}, []Merge{{Item: "A", Into: "a"}}},
		{"nothing merged", Board{}, Step{Op: OpInit, Items: []string{"a", "b"}}, []string{"a", "b"}, nil},
		{"other ops merge nothing", board("active:a"), Step{Op: OpDone, Task: "A"}, []string{"a"}, nil},
	}
	for _, tt := range cases {
		got, merged, err := ApplyReport(tt.in, tt.step)
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
		plain, err := Apply(tt.in, tt.step)
		if err != nil || !cmp.Equal(plain, got) {
			t.Errorf("%s: Apply lands %+v (%v), ApplyReport %+v", tt.name, plain, err, got)
		}
	}
}

// More items than a board can hold are refused before any is compared.
func TestTodoItemsBound(t *testing.T) {
	t.Parallel()
	items := make([]string, MaxItems+1)
	for i := range items {
		items[i] = "same"
	}
	if _, err := Apply(Board{}, Step{Op: OpInit, Items: items[:MaxItems]}); err != nil {
		t.Fatalf("%d items: %v", MaxItems, err)
	}
	for _, op := range []Op{OpInit, OpAppend} {
		if _, err := Apply(Board{}, Step{Op: op, Items: items}); errorCode(err) != CodeInvalid {
			t.Errorf("%s of %d items: %v, want %s", op, len(items), err, CodeInvalid)
		}
	}
}
