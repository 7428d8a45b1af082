package todo

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// Bounds of a board.
const (
	// MaxTasks bounds the tasks on one board.
	MaxTasks = 50
	// MaxItems bounds the items of one init or append: no more than a
	// board holds, so every item can be compared with every task.
	MaxItems = MaxTasks
	// MaxTextBytes bounds one task's text.
	MaxTextBytes = 200
	// MaxReasonBytes bounds a blocked task's reason.
	MaxReasonBytes = 200
)

// Status is where a task is.
type Status string

// The task statuses. Pending and Active are open; Done and Dropped are
// closed; Blocked is open but never promoted (see the package doc).
const (
	// Pending: not started. The first pending task becomes Active when
	// no task is.
	Pending Status = "pending"
	// Active: the one task being worked on.
	Active Status = "active"
	// Done: finished.
	Done Status = "done"
	// Dropped: given up.
	Dropped Status = "dropped"
	// Blocked: waiting on something; Task.Reason says what.
	Blocked Status = "blocked"
)

// Task is one line of a board.
type Task struct {
	// Text is the task, trimmed: not empty, at most MaxTextBytes, and
	// distinct from every other task's but for case and spacing.
	Text string `json:"text"`
	// Status is where the task is.
	Status Status `json:"status"`
	// Reason says why a blocked task is blocked, at most MaxReasonBytes;
	// empty otherwise.
	Reason string `json:"reason,omitempty"`
}

// Board is a strand's todo list, in order. The zero value is an empty
// board. A Board returned by Apply always passes Validate.
type Board struct {
	Tasks []Task `json:"tasks"`
}

// Op names one todo operation.
type Op string

// The todo operations, each written to its postcondition.
const (
	// OpInit replaces the board with Items, all pending.
	OpInit Op = "init"
	// OpStart makes Task the active one; the previous active task goes
	// back to pending. A blocked task must be unblocked first.
	OpStart Op = "start"
	// OpDone marks Task done.
	OpDone Op = "done"
	// OpDrop marks Task dropped.
	OpDrop Op = "drop"
	// OpBlock marks an open Task blocked, with Reason.
	OpBlock Op = "block"
	// OpUnblock returns a blocked Task to pending; any other status is
	// left as it is.
	OpUnblock Op = "unblock"
	// OpAppend adds the Items not already on the board, as pending.
	OpAppend Op = "append"
	// OpRemove deletes Task; removing an absent task succeeds.
	OpRemove Op = "remove"
	// OpView changes nothing.
	OpView Op = "view"
)

// Ops returns every operation, in the order the tool documents them.
func Ops() []Op {
	return []Op{OpInit, OpStart, OpDone, OpDrop, OpBlock, OpUnblock, OpAppend, OpRemove, OpView}
}

// Step is one operation with its arguments.
type Step struct {
	// Op is the operation.
	Op Op
	// Items are task texts, for init and append: at most MaxItems.
	Items []string
	// Task names one task, for start, done, drop, block, unblock and
	// remove: its exact text, or a unique case- and spacing-insensitive
	// match.
	Task string
	// Reason is why, for block.
	Reason string
}

// looseKey is the form under which two task texts count as the same task:
// lower case with every space removed.
func looseKey(text string) string {
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
// exactly, else the one task whose text equals name's but for case and
// spacing. It answers -1 and an *Error (CodeUnknownTask or
// CodeAmbiguousTask) otherwise.
func (b Board) Resolve(name string) (int, error) {
	for i, t := range b.Tasks {
		if t.Text == name {
			return i, nil
		}
	}
	key := looseKey(name)
	found := -1
	for i, t := range b.Tasks {
		if looseKey(t.Text) == key {
			if found >= 0 {
				return -1, refuse(CodeAmbiguousTask, "%s matches more than one task; name it exactly", quote(name))
			}
			found = i
		}
	}
	if found < 0 {
		return -1, refuse(CodeUnknownTask, "no task is named %s; tasks: %s", quote(name), b.texts())
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

// Clone returns a board sharing nothing with b.
func (b Board) Clone() Board {
	return Board{Tasks: append([]Task(nil), b.Tasks...)}
}

// Merge is one item of an init or append that did not become a task of
// its own. Its text, trimmed, equals Into but for case and spacing; Into
// is the text of an earlier item of the same step or of a task already on
// the board.
type Merge struct {
	// Item is the item as it landed nowhere, trimmed.
	Item string `json:"item"`
	// Into is the text of the task it is the same as.
	Into string `json:"into"`
}

// Apply is the whole semantics of the todo tool, pure: the step, then the
// activity rules (see the package doc), then Validate. b is not modified.
// A refused step returns b unchanged and an *Error. ApplyReport lands the
// same board and says which items were merged.
func Apply(b Board, s Step) (Board, error) {
	out, _, err := ApplyReport(b, s)
	return out, err
}

// ApplyReport is Apply, also answering the items of an init or append
// that were merged into a task already listed, in item order (nil when
// none was, or on a refusal).
func ApplyReport(b Board, s Step) (Board, []Merge, error) {
	out := b.Clone()
	var merged []Merge
	switch s.Op {
	case OpView:
		return b, nil, nil
	case OpInit, OpAppend:
		if s.Op == OpInit {
			out.Tasks = nil
		}
		if len(s.Items) == 0 && s.Op == OpAppend {
			return b, nil, refuse(CodeInvalid, "%s needs at least one item", s.Op)
		}
		if len(s.Items) > MaxItems {
			return b, nil, refuse(CodeInvalid, "%s takes at most %d items; got %d", s.Op, MaxItems, len(s.Items))
		}
		for _, item := range s.Items {
			text, err := taskText(item)
			if err != nil {
				return b, nil, err
			}
			if i := out.find(text); i >= 0 {
				merged = append(merged, Merge{Item: text, Into: out.Tasks[i].Text})
				continue
			}
			out.Tasks = append(out.Tasks, Task{Text: text, Status: Pending})
		}
	case OpStart, OpDone, OpDrop, OpBlock, OpUnblock, OpRemove:
		i, err := b.Resolve(strings.TrimSpace(s.Task))
		if err != nil {
			var e *Error
			if s.Op == OpRemove && errors.As(err, &e) && e.Code == CodeUnknownTask {
				return b, nil, nil // already absent: the postcondition holds
			}
			return b, nil, err
		}
		t := &out.Tasks[i]
		switch s.Op {
		case OpStart:
			if t.Status == Blocked {
				return b, nil, refuse(CodeInvalid, "%q is blocked (%s); unblock it first", t.Text, t.Reason)
			}
			for j := range out.Tasks {
				if out.Tasks[j].Status == Active {
					out.Tasks[j].Status = Pending
				}
			}
			t.Status, t.Reason = Active, ""
		case OpDone:
			t.Status, t.Reason = Done, ""
		case OpDrop:
			t.Status, t.Reason = Dropped, ""
		case OpBlock:
			if t.Status == Done || t.Status == Dropped {
				return b, nil, refuse(CodeInvalid, "%q is %s; only an open task can be blocked", t.Text, t.Status)
			}
			reason := strings.TrimSpace(s.Reason)
			if len(reason) > MaxReasonBytes {
				return b, nil, refuse(CodeInvalid, "the reason is %d bytes, more than %d", len(reason), MaxReasonBytes)
			}
			t.Status, t.Reason = Blocked, reason
		case OpUnblock:
			if t.Status == Blocked {
				t.Status, t.Reason = Pending, ""
			}
		case OpRemove:
			out.Tasks = append(out.Tasks[:i:i], out.Tasks[i+1:]...)
		}
	default:
		return b, nil, refuse(CodeInvalid, "unknown op %s; ops: %s", quote(string(s.Op)), opList())
	}
	out = settle(out)
	if err := out.Validate(); err != nil {
		return b, nil, err
	}
	return out, merged, nil
}

func opList() string {
	ops := Ops()
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
		return "", refuse(CodeInvalid, "a task's text is empty")
	case len(text) > MaxTextBytes:
		return "", refuse(CodeInvalid, "a task's text is %d bytes, more than %d", len(text), MaxTextBytes)
	}
	return text, nil
}

// find returns the index of the task that is text under looseKey, or -1.
func (b Board) find(text string) int {
	key := looseKey(text)
	for i, t := range b.Tasks {
		if looseKey(t.Text) == key {
			return i
		}
	}
	return -1
}

// settle restores the activity rules: at most one active task (the first
// one stays), and when none is active the first pending task is promoted.
// A blocked task is never promoted.
func settle(b Board) Board {
	out := b.Clone()
	active := -1
	for i := range out.Tasks {
		if out.Tasks[i].Status == Active {
			if active >= 0 {
				out.Tasks[i].Status = Pending
				continue
			}
			active = i
		}
	}
	if active < 0 {
		for i := range out.Tasks {
			if out.Tasks[i].Status == Pending {
				out.Tasks[i].Status = Active
				break
			}
		}
	}
	return out
}

// Validate answers nil when b keeps every board rule, and otherwise an
// *Error coded CodeInvalid naming the first rule it breaks. A board holds
// at most MaxTasks tasks. Each has a trimmed, non-empty text within
// MaxTextBytes and a known status, and only a blocked one has a reason.
// No two texts are equal but for case and spacing. At most one task is
// active, and none is pending while none is active.
func (b Board) Validate() error {
	if len(b.Tasks) > MaxTasks {
		return refuse(CodeInvalid, "the board would hold %d tasks, more than %d", len(b.Tasks), MaxTasks)
	}
	seen := map[string]bool{}
	active, pending := 0, 0
	for _, t := range b.Tasks {
		if _, err := taskText(t.Text); err != nil || t.Text != strings.TrimSpace(t.Text) {
			return refuse(CodeInvalid, "task %q has invalid text", t.Text)
		}
		k := looseKey(t.Text)
		if seen[k] {
			return refuse(CodeInvalid, "task %q appears twice", t.Text)
		}
		seen[k] = true
		switch t.Status {
		case Active:
			active++
		case Pending:
			pending++
		case Done, Dropped, Blocked:
		default:
			return refuse(CodeInvalid, "task %q has unknown status %q", t.Text, t.Status)
		}
		if t.Status != Blocked && t.Reason != "" {
			return refuse(CodeInvalid, "task %q has a reason but is not blocked", t.Text)
		}
	}
	if active > 1 {
		return refuse(CodeInvalid, "%d tasks are active; at most one may be", active)
	}
	if active == 0 && pending > 0 {
		return refuse(CodeInvalid, "no task is active while %d are pending", pending)
	}
	return nil
}

// Active returns the active task's index, or -1.
func (b Board) Active() int {
	for i, t := range b.Tasks {
		if t.Status == Active {
			return i
		}
	}
	return -1
}

var statusMark = map[Status]string{
	Pending: "[ ]", Active: "[>]", Done: "[x]", Dropped: "[-]", Blocked: "[!]",
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
		if t.Status == Done {
			done++
		}
	}
	var s strings.Builder
	fmt.Fprintf(&s, "todo: %d/%d done", done, len(b.Tasks))
	for _, t := range b.Tasks {
		s.WriteString("\n" + statusMark[t.Status] + " " + t.Text)
		if t.Status == Blocked && t.Reason != "" {
			s.WriteString(" (blocked: " + t.Reason + ")")
		}
	}
	return s.String()
}
