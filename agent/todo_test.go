package agent

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/agentloom/loom/tool"
)

func board(spec ...string) Board {
	// spec entries are "status:text".
	var b Board
	for _, s := range spec {
		st, text, _ := strings.Cut(s, ":")
		b.Tasks = append(b.Tasks, Task{Text: text, Status: TaskStatus(st)})
	}
	return b
}

func TestApplyTodo(t *testing.T) {
	tests := []struct {
		name string
		in   Board
		step TodoStep
		want Board
		code tool.Code
	}{
		{"init promotes the first", Board{}, TodoStep{Op: TodoInit, Items: []string{"a", " b ", "A"}},
			board("active:a", "pending:b"), ""},
		{"start demotes the active", board("active:a", "pending:b"), TodoStep{Op: TodoStart, Task: "b"},
			board("pending:a", "active:b"), ""},
		{"done promotes the next pending", board("active:a", "blocked:b", "pending:c"), TodoStep{Op: TodoDone, Task: "a"},
			board("done:a", "blocked:b", "active:c"), ""},
		{"blocked is never promoted", board("active:a", "blocked:b"), TodoStep{Op: TodoDrop, Task: "a"},
			board("dropped:a", "blocked:b"), ""},
		{"loose match", board("active:Write Tests"), TodoStep{Op: TodoDone, Task: "write   tests"},
			board("done:Write Tests"), ""},
		{"unknown task", board("active:a"), TodoStep{Op: TodoDone, Task: "z"}, board("active:a"), CodeTodoUnknownTask},
		{"remove absent succeeds", board("active:a"), TodoStep{Op: TodoRemove, Task: "z"}, board("active:a"), ""},
		{"remove promotes", board("active:a", "pending:b"), TodoStep{Op: TodoRemove, Task: "a"}, board("active:b"), ""},
		{"start blocked refused", board("active:a", "blocked:b"), TodoStep{Op: TodoStart, Task: "b"}, board("active:a", "blocked:b"), CodeTodoInvalid},
		{"block done refused", board("done:a"), TodoStep{Op: TodoBlock, Task: "a"}, board("done:a"), CodeTodoInvalid},
		{"unblock returns to pending and promotes", board("blocked:a", "done:b"), TodoStep{Op: TodoUnblock, Task: "a"}, board("active:a", "done:b"), ""},
		{"append skips present", board("active:a"), TodoStep{Op: TodoAppend, Items: []string{"A", "b"}}, board("active:a", "pending:b"), ""},
		{"append nothing refused", board("active:a"), TodoStep{Op: TodoAppend}, board("active:a"), CodeTodoInvalid},
		{"empty text refused", Board{}, TodoStep{Op: TodoInit, Items: []string{"  "}}, Board{}, CodeTodoInvalid},
		{"unknown op", Board{}, TodoStep{Op: "frob"}, Board{}, CodeTodoInvalid},
		{"view changes nothing", board("active:a"), TodoStep{Op: TodoView}, board("active:a"), ""},
		{"text at the bound", Board{}, TodoStep{Op: TodoInit, Items: []string{strings.Repeat("x", MaxTodoTextBytes)}},
			board("active:" + strings.Repeat("x", MaxTodoTextBytes)), ""},
		{"text past the bound", Board{}, TodoStep{Op: TodoInit, Items: []string{strings.Repeat("x", MaxTodoTextBytes+1)}}, Board{}, CodeTodoInvalid},
	}
	for _, tt := range tests {
		got, err := ApplyTodo(tt.in, tt.step)
		if CodeOf(err) != tt.code {
			t.Errorf("%s: err = %v, want code %q", tt.name, err, tt.code)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tt.name, diff)
		}
	}
}

func TestResolve(t *testing.T) {
	// Boards from ApplyTodo are distinct under LooseKey; Resolve still
	// answers a board that is not, preferring the exact text.
	b := board("active:ab", "pending:a b", "pending:A B")
	if i, err := b.Resolve("a b"); i != 1 || err != nil {
		t.Errorf("exact: %d, %v", i, err)
	}
	if _, err := b.Resolve("AB "); CodeOf(err) != CodeTodoAmbiguousTask {
		t.Errorf("ambiguous: %v", err)
	}
	if _, err := b.Resolve("c"); CodeOf(err) != CodeTodoUnknownTask {
		t.Errorf("unknown: %v", err)
	}
}

func TestTodoTaskCountBound(t *testing.T) {
	items := func(n int) []string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf("task %d", i)
		}
		return s
	}
	if _, err := ApplyTodo(Board{}, TodoStep{Op: TodoInit, Items: items(MaxTodoTasks)}); err != nil {
		t.Fatalf("%d tasks refused: %v", MaxTodoTasks, err)
	}
	if _, err := ApplyTodo(Board{}, TodoStep{Op: TodoInit, Items: items(MaxTodoTasks + 1)}); CodeOf(err) != CodeTodoInvalid {
		t.Fatalf("%d tasks: err = %v", MaxTodoTasks+1, err)
	}
}

// todoModel is an independent restatement of the board rules, written
// from the tool's description rather than from ApplyTodo.
type todoModel struct {
	texts    []string
	statuses []string
	reasons  []string
}

func looseModel(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), "")) }

func (m *todoModel) find(name string) (int, tool.Code) {
	name = strings.TrimSpace(name)
	for i, t := range m.texts {
		if t == name {
			return i, ""
		}
	}
	var hits []int
	for i, t := range m.texts {
		if looseModel(t) == looseModel(name) {
			hits = append(hits, i)
		}
	}
	switch len(hits) {
	case 0:
		return -1, CodeTodoUnknownTask
	case 1:
		return hits[0], ""
	}
	return -1, CodeTodoAmbiguousTask
}

func (m *todoModel) add(items []string) tool.Code {
	for _, it := range items {
		it = strings.TrimSpace(it)
		if it == "" || len(it) > MaxTodoTextBytes {
			return CodeTodoInvalid
		}
		dup := false
		for _, t := range m.texts {
			dup = dup || looseModel(t) == looseModel(it)
		}
		if !dup {
			m.texts = append(m.texts, it)
			m.statuses = append(m.statuses, "pending")
			m.reasons = append(m.reasons, "")
		}
	}
	if len(m.texts) > MaxTodoTasks {
		return CodeTodoInvalid
	}
	return ""
}

func (m todoModel) copy() todoModel {
	return todoModel{append([]string(nil), m.texts...), append([]string(nil), m.statuses...), append([]string(nil), m.reasons...)}
}

// apply returns the refusal code, leaving m unchanged on refusal.
func (m *todoModel) apply(s TodoStep) tool.Code {
	next := m.copy()
	var code tool.Code
	switch s.Op {
	case TodoView:
	case TodoInit:
		next = todoModel{}
		code = next.add(s.Items)
	case TodoAppend:
		if len(s.Items) == 0 {
			code = CodeTodoInvalid
		} else {
			code = next.add(s.Items)
		}
	case TodoStart, TodoDone, TodoDrop, TodoBlock, TodoUnblock, TodoRemove:
		i, c := next.find(s.Task)
		if c != "" {
			if s.Op == TodoRemove && c == CodeTodoUnknownTask {
				return ""
			}
			return c
		}
		st := next.statuses[i]
		switch s.Op {
		case TodoStart:
			if st == "blocked" {
				return CodeTodoInvalid
			}
			for j := range next.statuses {
				if next.statuses[j] == "active" {
					next.statuses[j] = "pending"
				}
			}
			next.statuses[i], next.reasons[i] = "active", ""
		case TodoDone:
			next.statuses[i], next.reasons[i] = "done", ""
		case TodoDrop:
			next.statuses[i], next.reasons[i] = "dropped", ""
		case TodoBlock:
			if st == "done" || st == "dropped" || len(strings.TrimSpace(s.Reason)) > MaxTodoReasonBytes {
				return CodeTodoInvalid
			}
			next.statuses[i], next.reasons[i] = "blocked", strings.TrimSpace(s.Reason)
		case TodoUnblock:
			if st == "blocked" {
				next.statuses[i], next.reasons[i] = "pending", ""
			}
		case TodoRemove:
			next.texts = append(next.texts[:i], next.texts[i+1:]...)
			next.statuses = append(next.statuses[:i], next.statuses[i+1:]...)
			next.reasons = append(next.reasons[:i], next.reasons[i+1:]...)
		}
	default:
		code = CodeTodoInvalid
	}
	if code != "" {
		return code
	}
	hasActive := false
	for _, st := range next.statuses {
		hasActive = hasActive || st == "active"
	}
	if !hasActive {
		for j, st := range next.statuses {
			if st == "pending" {
				next.statuses[j] = "active"
				break
			}
		}
	}
	*m = next
	return ""
}

func (m todoModel) board() Board {
	var b Board
	for i := range m.texts {
		b.Tasks = append(b.Tasks, Task{Text: m.texts[i], Status: TaskStatus(m.statuses[i]), Reason: m.reasons[i]})
	}
	return b
}

var todoPool = []string{"write tests", "Write  Tests", "fix the bug", "ship", "review", "docs", "  ", "Ship"}

// Reach counters: the generator must reach the states the rules are about.
var reachedActive, reachedBlocked, reachedPromotion, reachedRefusal atomic.Int64

func drawTodoStep(t *rapid.T, m *todoModel) TodoStep {
	op := rapid.SampledFrom(append(TodoOps(), "bogus")).Draw(t, "op")
	s := TodoStep{Op: op}
	switch op {
	case TodoInit, TodoAppend:
		s.Items = rapid.SliceOfN(rapid.SampledFrom(todoPool), 0, 4).Draw(t, "items")
	default:
		if len(m.texts) == 0 || rapid.IntRange(0, 5).Draw(t, "unknown") == 0 {
			s.Task = rapid.SampledFrom(todoPool).Draw(t, "name")
		} else {
			text := m.texts[rapid.IntRange(0, 1<<10).Draw(t, "index")%len(m.texts)]
			switch rapid.IntRange(0, 2).Draw(t, "spelling") {
			case 1:
				text = strings.ToUpper(text)
			case 2:
				text = " " + strings.ReplaceAll(text, " ", "   ") + " "
			}
			s.Task = text
		}
		s.Reason = rapid.SampledFrom([]string{"", "waiting on review"}).Draw(t, "reason")
	}
	return s
}

func TestTodoBoardMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var b Board
		var m todoModel
		t.Repeat(map[string]func(*rapid.T){
			"step": func(t *rapid.T) {
				s := drawTodoStep(t, &m)
				hadActive := b.Active() >= 0
				got, err := ApplyTodo(b, s)
				want := m.apply(s)
				if CodeOf(err) != want {
					t.Fatalf("%+v: code %q, model says %q (%v)", s, CodeOf(err), want, err)
				}
				if err != nil {
					reachedRefusal.Add(1)
					if !cmp.Equal(got, b) {
						t.Fatalf("%+v: a refused step changed the board", s)
					}
				}
				if vErr := got.Validate(); vErr != nil {
					t.Fatalf("%+v: landed an invalid board: %v", s, vErr)
				}
				if diff := cmp.Diff(m.board(), got, cmp.Comparer(func(a, b []Task) bool { return len(a) == 0 && len(b) == 0 || cmp.Equal(a, b) })); diff != "" {
					t.Fatalf("%+v: board differs from the model (-model +board)\n%s", s, diff)
				}
				again, rErr := ApplyTodo(got, s)
				if CodeOf(rErr) != CodeOf(err) || !cmp.Equal(again, got) {
					t.Fatalf("%+v: replay is not idempotent: %v\n%s", s, rErr, cmp.Diff(got, again))
				}
				if got.Active() >= 0 {
					reachedActive.Add(1)
					if !hadActive && len(b.Tasks) > 0 && s.Op != TodoStart && s.Op != TodoInit {
						reachedPromotion.Add(1)
					}
				}
				for _, task := range got.Tasks {
					if task.Status == TaskBlocked {
						reachedBlocked.Add(1)
					}
				}
				b = got
			},
		})
	})
	for name, n := range map[string]int64{"active": reachedActive.Load(), "blocked": reachedBlocked.Load(), "promotion": reachedPromotion.Load(), "refusal": reachedRefusal.Load()} {
		if n == 0 {
			t.Errorf("the generator never reached a %s state", name)
		}
	}
}

func TestRenderBoard(t *testing.T) {
	b := board("done:a", "active:b", "pending:c", "dropped:d")
	b.Tasks = append(b.Tasks, Task{Text: "e", Status: TaskBlocked, Reason: "needs review"})
	want := "todo: 1/5 done\n[x] a\n[>] b\n[ ] c\n[-] d\n[!] e (blocked: needs review)"
	if got := b.Render(); got != want {
		t.Fatalf("Render() =\n%s\nwant\n%s", got, want)
	}
	if got := (Board{}).Render(); got != "todo: (empty)" {
		t.Fatalf("empty board renders %q", got)
	}
}
