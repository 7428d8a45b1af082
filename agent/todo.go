package agent

import (
	"fmt"
	"strings"
	"unicode"
)

// Bounds of a todo board.
const (
	// MaxTodoTasks bounds the tasks on one board.
	MaxTodoTasks = 50
	// MaxTodoItems bounds the items of one init or append: no more than a
	// board holds, so every item can be compared with every task.
	MaxTodoItems = MaxTodoTasks
	// MaxTodoTextBytes bounds one task's text.
	MaxTodoTextBytes = 200
	// MaxTodoReasonBytes bounds a blocked task's reason.
	MaxTodoReasonBytes = 200
	// MaxTodoRetries bounds the compare-and-set attempts of one todo call.
	MaxTodoRetries = 8
)

// TaskStatus is where a task is.
type TaskStatus string

// The task statuses. At most one task is active; when none is, no task is
// pending (the first pending one is promoted). Blocked tasks are never
// promoted.
const (
	TaskPending TaskStatus = "pending"
	TaskActive  TaskStatus = "active"
	TaskDone    TaskStatus = "done"
	TaskDropped TaskStatus = "dropped"
	TaskBlocked TaskStatus = "blocked"
)

// Task is one line of a board.
type Task struct {
	Text   string     `json:"text"`
	Status TaskStatus `json:"status"`
	// Reason says why a blocked task is blocked; empty otherwise.
	Reason string `json:"reason,omitempty"`
}

// Board is a strand's todo list, in order. The zero value is an empty
// board. A Board returned by ApplyTodo always passes Validate.
type Board struct {
	Tasks []Task `json:"tasks"`
}

// TodoOp names one todo operation.
type TodoOp string

// The todo operations. Each is written to its postcondition, so applying
// the same step twice lands the same board as applying it once.
const (
	// TodoInit replaces the board with Items, all pending.
	TodoInit TodoOp = "init"
	// TodoStart makes Task the active one; the previous active task goes
	// back to pending. A blocked task must be unblocked first.
	TodoStart TodoOp = "start"
	// TodoDone marks Task done.
	TodoDone TodoOp = "done"
	// TodoDrop marks Task dropped.
	TodoDrop TodoOp = "drop"
	// TodoBlock marks an open Task blocked, with Reason.
	TodoBlock TodoOp = "block"
	// TodoUnblock returns a blocked Task to pending; any other status is
	// left as it is.
	TodoUnblock TodoOp = "unblock"
	// TodoAppend adds the Items not already on the board, as pending.
	TodoAppend TodoOp = "append"
	// TodoRemove deletes Task; removing an absent task succeeds.
	TodoRemove TodoOp = "remove"
	// TodoView changes nothing.
	TodoView TodoOp = "view"
)

// TodoOps returns every operation, in the order the tool documents them.
func TodoOps() []TodoOp {
	return []TodoOp{TodoInit, TodoStart, TodoDone, TodoDrop, TodoBlock, TodoUnblock, TodoAppend, TodoRemove, TodoView}
}

// TodoStep is one operation with its arguments.
type TodoStep struct {
	Op TodoOp
	// Items are task texts, for init and append.
	Items []string
	// Task names one task, for start, done, drop, block, unblock and
	// remove: its exact text, or a unique case- and spacing-insensitive
	// match.
	Task string
	// Reason is why, for block.
	Reason string
}

// LooseKey is the form under which two task texts count as the same task:
// lower case with every space removed.
func LooseKey(text string) string {
	var b strings.Builder
	for _, r := range text {
		if unicode.IsSpace(r) {
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// Resolve finds the task name refers to: the task whose text equals name
// exactly, else the one task whose LooseKey equals name's. It answers -1
// and a Refusal (CodeTodoUnknownTask or CodeTodoAmbiguousTask) otherwise.
func (b Board) Resolve(name string) (int, error) {
	for i, t := range b.Tasks {
		if t.Text == name {
			return i, nil
		}
	}
	key := LooseKey(name)
	found := -1
	for i, t := range b.Tasks {
		if LooseKey(t.Text) == key {
			if found >= 0 {
				return -1, refuse(CodeTodoAmbiguousTask, "%s matches more than one task; name it exactly", quote(name))
			}
			found = i
		}
	}
	if found < 0 {
		return -1, refuse(CodeTodoUnknownTask, "no task is named %s; tasks: %s", quote(name), b.texts())
	}
	return found, nil
}

func (b Board) texts() string {
	if len(b.Tasks) == 0 {
		return "(none)"
	}
	q := make([]string, len(b.Tasks))
	for i, t := range b.Tasks {
		q[i] = quote(t.Text)
	}
	return strings.Join(q, ", ")
}

// clone returns a board sharing nothing with b.
func (b Board) clone() Board {
	return Board{Tasks: append([]Task(nil), b.Tasks...)}
}

// TodoMerge is one item of an init or append that did not become a task
// of its own: its text, trimmed, is the same task under LooseKey as Into,
// the text of an earlier item of the same step or of a task already on
// the board.
type TodoMerge struct {
	// Item is the item as it landed nowhere, trimmed.
	Item string `json:"item"`
	// Into is the text of the task it is the same as.
	Into string `json:"into"`
}

// ApplyTodo is the whole semantics of the todo tool, pure: the step, then
// Settle, then Validate. b is not modified. A refused step returns b
// unchanged and a *Refusal. ApplyTodoReport lands the same board and says
// which items were merged.
func ApplyTodo(b Board, s TodoStep) (Board, error) {
	out, _, err := ApplyTodoReport(b, s)
	return out, err
}

// ApplyTodoReport is ApplyTodo, also answering the items of an init or
// append that were merged into a task already listed, in item order (nil
// when none was, or on a refusal). Init and append take at most
// MaxTodoItems items.
func ApplyTodoReport(b Board, s TodoStep) (Board, []TodoMerge, error) {
	out := b.clone()
	var merged []TodoMerge
	switch s.Op {
	case TodoView:
		return b, nil, nil
	case TodoInit, TodoAppend:
		if s.Op == TodoInit {
			out.Tasks = nil
		}
		if len(s.Items) == 0 && s.Op == TodoAppend {
			return b, nil, refuse(CodeTodoInvalid, "%s needs at least one item", s.Op)
		}
		if len(s.Items) > MaxTodoItems {
			return b, nil, refuse(CodeTodoInvalid, "%s takes at most %d items; got %d", s.Op, MaxTodoItems, len(s.Items))
		}
		for _, item := range s.Items {
			text, err := taskText(item)
			if err != nil {
				return b, nil, err
			}
			if i := out.find(text); i >= 0 {
				merged = append(merged, TodoMerge{Item: text, Into: out.Tasks[i].Text})
				continue
			}
			out.Tasks = append(out.Tasks, Task{Text: text, Status: TaskPending})
		}
	case TodoStart, TodoDone, TodoDrop, TodoBlock, TodoUnblock, TodoRemove:
		i, err := b.Resolve(strings.TrimSpace(s.Task))
		if err != nil {
			if s.Op == TodoRemove && CodeOf(err) == CodeTodoUnknownTask {
				return b, nil, nil // already absent: the postcondition holds
			}
			return b, nil, err
		}
		t := &out.Tasks[i]
		switch s.Op {
		case TodoStart:
			if t.Status == TaskBlocked {
				return b, nil, refuse(CodeTodoInvalid, "%q is blocked (%s); unblock it first", t.Text, t.Reason)
			}
			for j := range out.Tasks {
				if out.Tasks[j].Status == TaskActive {
					out.Tasks[j].Status = TaskPending
				}
			}
			t.Status, t.Reason = TaskActive, ""
		case TodoDone:
			t.Status, t.Reason = TaskDone, ""
		case TodoDrop:
			t.Status, t.Reason = TaskDropped, ""
		case TodoBlock:
			if t.Status == TaskDone || t.Status == TaskDropped {
				return b, nil, refuse(CodeTodoInvalid, "%q is %s; only an open task can be blocked", t.Text, t.Status)
			}
			reason := strings.TrimSpace(s.Reason)
			if len(reason) > MaxTodoReasonBytes {
				return b, nil, refuse(CodeTodoInvalid, "the reason is %d bytes, more than %d", len(reason), MaxTodoReasonBytes)
			}
			t.Status, t.Reason = TaskBlocked, reason
		case TodoUnblock:
			if t.Status == TaskBlocked {
				t.Status, t.Reason = TaskPending, ""
			}
		case TodoRemove:
			out.Tasks = append(out.Tasks[:i:i], out.Tasks[i+1:]...)
		}
	default:
		return b, nil, refuse(CodeTodoInvalid, "unknown op %s; ops: %s", quote(string(s.Op)), opList())
	}
	out = Settle(out)
	if err := out.Validate(); err != nil {
		return b, nil, err
	}
	return out, merged, nil
}

func opList() string {
	ops := TodoOps()
	q := make([]string, len(ops))
	for i, o := range ops {
		q[i] = string(o)
	}
	return strings.Join(q, ", ")
}

func taskText(item string) (string, error) {
	text := strings.TrimSpace(item)
	switch {
	case text == "":
		return "", refuse(CodeTodoInvalid, "a task's text is empty")
	case len(text) > MaxTodoTextBytes:
		return "", refuse(CodeTodoInvalid, "a task's text is %d bytes, more than %d", len(text), MaxTodoTextBytes)
	}
	return text, nil
}

// find returns the index of the task that is text under LooseKey, or -1.
func (b Board) find(text string) int {
	key := LooseKey(text)
	for i, t := range b.Tasks {
		if LooseKey(t.Text) == key {
			return i
		}
	}
	return -1
}

// Settle restores the activity rules: at most one active task (the first
// one stays), and when none is active the first pending task is promoted.
// A blocked task is never promoted.
func Settle(b Board) Board {
	out := b.clone()
	active := -1
	for i := range out.Tasks {
		if out.Tasks[i].Status == TaskActive {
			if active >= 0 {
				out.Tasks[i].Status = TaskPending
				continue
			}
			active = i
		}
	}
	if active < 0 {
		for i := range out.Tasks {
			if out.Tasks[i].Status == TaskPending {
				out.Tasks[i].Status = TaskActive
				break
			}
		}
	}
	return out
}

// Validate reports whether b keeps every board rule: at most MaxTodoTasks
// tasks, each with non-empty text within MaxTodoTextBytes and a known
// status, texts distinct under LooseKey, at most one active task, and no
// pending task while none is active.
func (b Board) Validate() error {
	if len(b.Tasks) > MaxTodoTasks {
		return refuse(CodeTodoInvalid, "the board would hold %d tasks, more than %d", len(b.Tasks), MaxTodoTasks)
	}
	seen := map[string]bool{}
	active, pending := 0, 0
	for _, t := range b.Tasks {
		if _, err := taskText(t.Text); err != nil || t.Text != strings.TrimSpace(t.Text) {
			return refuse(CodeTodoInvalid, "task %q has invalid text", t.Text)
		}
		k := LooseKey(t.Text)
		if seen[k] {
			return refuse(CodeTodoInvalid, "task %q appears twice", t.Text)
		}
		seen[k] = true
		switch t.Status {
		case TaskActive:
			active++
		case TaskPending:
			pending++
		case TaskDone, TaskDropped, TaskBlocked:
		default:
			return refuse(CodeTodoInvalid, "task %q has unknown status %q", t.Text, t.Status)
		}
		if t.Status != TaskBlocked && t.Reason != "" {
			return refuse(CodeTodoInvalid, "task %q has a reason but is not blocked", t.Text)
		}
	}
	if active > 1 {
		return refuse(CodeTodoInvalid, "%d tasks are active; at most one may be", active)
	}
	if active == 0 && pending > 0 {
		return refuse(CodeTodoInvalid, "no task is active while %d are pending", pending)
	}
	return nil
}

// Active returns the active task's index, or -1.
func (b Board) Active() int {
	for i, t := range b.Tasks {
		if t.Status == TaskActive {
			return i
		}
	}
	return -1
}

var statusMark = map[TaskStatus]string{
	TaskPending: "[ ]", TaskActive: "[>]", TaskDone: "[x]", TaskDropped: "[-]", TaskBlocked: "[!]",
}

// Render shows the board to a model: a count line, then one line per task
// with its mark ([>] active, [ ] pending, [x] done, [-] dropped, [!]
// blocked, with the reason).
func (b Board) Render() string {
	if len(b.Tasks) == 0 {
		return "todo: (empty)"
	}
	done := 0
	for _, t := range b.Tasks {
		if t.Status == TaskDone {
			done++
		}
	}
	var s strings.Builder
	fmt.Fprintf(&s, "todo: %d/%d done", done, len(b.Tasks))
	for _, t := range b.Tasks {
		s.WriteString("\n" + statusMark[t.Status] + " " + t.Text)
		if t.Status == TaskBlocked && t.Reason != "" {
			s.WriteString(" (blocked: " + t.Reason + ")")
		}
	}
	return s.String()
}
