// Package todo is a strand's task board, pure: the board, the steps a
// model takes on it, and the rules every board keeps.
//
// It owns the board's semantics (Apply): one task is active at a time,
// and with none active the first pending one is; a blocked task is never
// promoted; texts equal but for case and spacing are one task, so an
// item of an init or append that matches a task already listed is merged
// into it (ApplyReport says which). Every step is written to its
// postcondition, so applying the same step twice lands the same board as
// applying it once, and a replayed call changes nothing.
//
// It refuses a step that would break a bound (MaxTasks, MaxItems,
// MaxTextBytes, MaxReasonBytes) or a rule, with an *Error whose code is
// one of the Code constants, and then returns the board unchanged.
//
// It guarantees that every board Apply returns passes Validate. It keeps
// no state and does no I/O: where a board lives, and how concurrent
// writers are ordered, is the agent package's Agency (Agency.Todos), and
// the todo tool is agent.TodoTool.
package todo
