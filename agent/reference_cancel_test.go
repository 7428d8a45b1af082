package agent

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentloom/loom/todo"
	"github.com/agentloom/loom/tool"
)

// A todo call whose context ends while the board is contended is refused
// as cancelled, not as a conflict: the cause is the caller's context, and
// nothing was written.
func TestTodosCancelledIsNotAConflict(t *testing.T) {
	t.Parallel()
	a := NewAgency(echo, Options{})
	defer a.Close()
	c := root("main", 1)
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	_, err := a.Todos(ctx, c, func(b todo.Board) (todo.Board, error) {
		calls++
		// A sibling writes the cell while this step runs, and the
		// caller's context ends.
		if _, err := a.Todos(bg, c, func(b todo.Board) (todo.Board, error) {
			return todo.Apply(b, todo.Step{Op: todo.OpAppend, Items: []string{fmt.Sprint("sibling ", calls)}})
		}); err != nil {
			return todo.Board{}, err
		}
		cancel()
		return todo.Apply(b, todo.Step{Op: todo.OpAppend, Items: []string{"mine"}})
	})
	if codeOf(err) != tool.CodeCancelled || calls != 1 {
		t.Fatalf("err %v (code %q) after %d attempts, want %q after 1", err, codeOf(err), calls, tool.CodeCancelled)
	}
	b, _ := a.Todos(bg, c, func(b todo.Board) (todo.Board, error) { return b, nil })
	if _, err := b.Resolve("mine"); err == nil {
		t.Errorf("the cancelled step landed: %+v", b)
	}
}
