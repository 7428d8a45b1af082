package todo_test

import (
	"fmt"

	"github.com/agentloom/loom/todo"
)

func ExampleApply() {
	var b todo.Board
	for _, step := range []todo.Step{
		{Op: todo.OpInit, Items: []string{"read the code", "write the fix", "run the tests"}},
		{Op: todo.OpBlock, Task: "write the fix", Reason: "needs the reading first"},
		{Op: todo.OpDone, Task: "Read The Code"}, // a loose, unique match
	} {
		var err error
		if b, err = todo.Apply(b, step); err != nil {
			panic(err)
		}
	}
	fmt.Println(b.Render())
	// Output:
	// todo: 1/3 done
	// [x] read the code
	// [!] write the fix (blocked: needs the reading first)
	// [>] run the tests
}
