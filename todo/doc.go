// Package todo is a strand's task board, pure: the board, the steps a
// model takes on it, and the rules every board keeps.
//
// It owns the board's semantics (Apply). One task is active at a time;
// with none active, the first pending task is promoted, and a blocked
// task never is. Texts equal but for case and spacing are one task: an
// item of an init or append that matches a task already listed is merged
// into it (ApplyReport says which). Every step is written to its
// postcondition, so applying a step twice lands the same board as
// applying it once, and a replayed call changes nothing.
//
// It refuses a step that would break a bound (MaxTasks, MaxItems,
// MaxTextBytes, MaxReasonBytes) or a rule with an *Error coded with one
// of the Code constants, and returns the board unchanged.
//
// Every board Apply returns passes Validate. The package keeps no state
// and does no I/O: where a board lives, and how concurrent writers are
// ordered, is the agent package's Agency (Agency.Todos); the todo tool is
// agent.TodoTool.
package todo
