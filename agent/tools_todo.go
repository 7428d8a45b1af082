package agent

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/agentloom/loom/todo"
	"github.com/agentloom/loom/tool"
	"github.com/google/jsonschema-go/jsonschema"
)

type todoArgs struct {
	Op     todo.Op  `json:"op"`
	Items  []string `json:"items,omitempty" jsonschema:"for init and append"`
	Task   string   `json:"task,omitempty"`
	Reason string   `json:"reason,omitempty" jsonschema:"for block"`
}

// TodoDetails is the Details of a successful todo call: the op, the
// board that landed, and the items of an init or append merged into a
// task already listed (todo.ApplyReport).
type TodoDetails struct {
	Op     todo.Op      `json:"op"`
	Todo   todo.Board   `json:"todo"`
	Merged []todo.Merge `json:"merged,omitempty"`
}

// TodoTool returns todo: the caller's own task board, one op per call,
// applied by todo.Apply under the agency's compare-and-set. Every op is
// written to its postcondition, so the tool is ReplaySafe, and
// Concurrent without losing a sibling call's update.
func TodoTool(agency Agency) tool.Tool {
	ops := &jsonschema.Schema{Type: "string"}
	for _, o := range todo.Ops() {
		ops.Enum = append(ops.Enum, string(o))
	}
	return tool.Typed(tool.Tool{
		Name:  TodoToolName,
		Title: "Update the todo board",
		Description: fmt.Sprintf("Keep your task list: init replaces it with items, append adds items not listed, start makes "+
			"task the active one, block takes a reason. One task is active at a time; with none, the first pending one is "+
			"(never a blocked one). "+
			"At most %d tasks of %d bytes, %d items per call.",
			todo.MaxTasks, todo.MaxTextBytes, todo.MaxItems),
		PromptSnippet: "todo: keep your task list",
		Replay:        tool.ReplaySafe,
		Mode:          tool.Concurrent,
	}, guard(agency, TodoToolName, func(ctx context.Context, c *tool.Call, a todoArgs) tool.Outcome {
		step := todo.Step{Op: a.Op, Items: a.Items, Task: a.Task, Reason: a.Reason}
		// The agency may run the step more than once (compare-and-set);
		// the merges reported are those of the run that landed, the last.
		var merged []todo.Merge
		b, err := agency.Todos(ctx, CallerOf(c), func(b todo.Board) (todo.Board, error) {
			out, m, err := todo.ApplyReport(b, step)
			merged = m
			return out, err
		})
		if err != nil {
			return refusalOutcome(TodoToolName, err)
		}
		if b.Tasks == nil {
			b.Tasks = []todo.Task{}
		}
		return tool.Outcome{Text: mergeText(merged) + b.Render(), Details: TodoDetails{Op: a.Op, Todo: b, Merged: merged}}
	}), tool.TypeSchema{Type: reflect.TypeFor[todo.Op](), Schema: ops})
}

// mergeText says which items were merged, one line before the board, or
// nothing when none was.
func mergeText(merged []todo.Merge) string {
	if len(merged) == 0 {
		return ""
	}
	var b strings.Builder
	noun := "items"
	if len(merged) == 1 {
		noun = "item"
	}
	fmt.Fprintf(&b, "merged %d %s into a task already listed (the same text but for case and spaces):", len(merged), noun)
	for i, m := range merged {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %s into %s", quote(m.Item), quote(m.Into))
	}
	b.WriteString("\n")
	return b.String()
}
