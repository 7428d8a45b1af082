package todo

import (
	"errors"
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
		b.Tasks = append(b.Tasks, Task{Text: text, Status: Status(st)})
	}
	return b
}

func TestApplyTodo(t *testing.T) {
	tests := []struct {
		name string
		in   Board
		step Step
		want Board
		code tool.Code
	}{
		{"init promotes the first", Board{}, Step{Op: OpInit, Items: []string{"a", " b ", "A"}},
			board("active:a", "pending:b"), ""},
		{"start demotes the active", board("active:a", "pending:b"), Step{Op: OpStart, Task: "b"},
			board("pending:a", "active:b"), ""},
		{"done promotes the next pending", board("active:a", "blocked:b", "pending:c"), Step{Op: OpDone, Task: "a"},
			board("done:a", "blocked:b", "active:c"), ""},
		{"blocked is never promoted", board("active:a", "blocked:b"), Step{Op: OpDrop, Task: "a"},
			board("dropped:a", "blocked:b"), ""},
		{"loose match", board("active:Write Tests"), Step{Op: OpDone, Task: "write   tests"},
			board("done:Write Tests"), ""},
		{"unknown task", board("active:a"), Step{Op: OpDone, Task: "z"}, board("active:a"), CodeUnknownTask},
		{"remove absent succeeds", board("active:a"), Step{Op: OpRemove, Task: "z"}, board("active:a"), ""},
		{"remove promotes", board("active:a", "pending:b"), Step{Op: OpRemove, Task: "a"}, board("active:b"), ""},
		{"start blocked refused", board("active:a", "blocked:b"), Step{Op: OpStart, Task: "b"}, board("active:a", "blocked:b"), CodeInvalid},
		{"block done refused", board("done:a"), Step{Op: OpBlock, Task: "a"}, board("done:a"), CodeInvalid},
		{"unblock returns to pending and promotes", board("blocked:a", "done:b"), Step{Op: OpUnblock, Task: "a"}, board("active:a", "done:b"), ""},
		{"append skips present", board("active:a"), Step{Op: OpAppend, Items: []string{"A", "b"}}, board("active:a", "pending:b"), ""},
		{"append nothing refused", board("active:a"), Step{Op: OpAppend}, board("active:a"), CodeInvalid},
		{"empty text refused", Board{}, Step{Op: OpInit, Items: []string{"  "}}, Board{}, CodeInvalid},
		{"unknown op", Board{}, Step{Op: "frob"}, Board{}, CodeInvalid},
		{"view changes nothing", board("active:a"), Step{Op: OpView}, board("active:a"), ""},
		{"text at the bound", Board{}, Step{Op: OpInit, Items: []string{strings.Repeat("x", MaxTextBytes)}},
			board("active:" + strings.Repeat("x", MaxTextBytes)), ""},
		{"text past the bound", Board{}, Step{Op: OpInit, Items: []string{strings.Repeat("x", MaxTextBytes+1)}}, Board{}, CodeInvalid},
	}
	for _, tt := range tests {
		got, err := Apply(tt.in, tt.step)
		if errorCode(err) != tt.code {
			t.Errorf("%s: err = %v, want code %q", tt.name, err, tt.code)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tt.name, diff)
		}
	}
}

func TestResolve(t *testing.T) {
	// Boards from Apply are distinct under looseKey; Resolve still
	// answers a board that is not, preferring the exact text.
	b := board("active:ab", "pending:a b", "pending:A B")
	if i, err := b.Resolve("a b"); i != 1 || err != nil {
		t.Errorf("exact: %d, %v", i, err)
	}
	if _, err := b.Resolve("AB "); errorCode(err) != CodeAmbiguousTask {
		t.Errorf("ambiguous: %v", err)
	}
	if _, err := b.Resolve("c"); errorCode(err) != CodeUnknownTask {
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
	if _, err := Apply(Board{}, Step{Op: OpInit, Items: items(MaxTasks)}); err != nil {
		t.Fatalf("%d tasks refused: %v", MaxTasks, err)
	}
	if _, err := Apply(Board{}, Step{Op: OpInit, Items: items(MaxTasks + 1)}); errorCode(err) != CodeInvalid {
		t.Fatalf("%d tasks: err = %v", MaxTasks+1, err)
	}
}

// todoModel is an independent restatement of the board rules, written
// from the tool's description rather than from Apply.
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
		return -1, CodeUnknownTask
	case 1:
		return hits[0], ""
	}
	return -1, CodeAmbiguousTask
}

func (m *todoModel) add(items []string) tool.Code {
	for _, it := range items {
		it = strings.TrimSpace(it)
		if it == "" || len(it) > MaxTextBytes {
			return CodeInvalid
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
	if len(m.texts) > MaxTasks {
		return CodeInvalid
	}
	return ""
}

func (m todoModel) copy() todoModel {
	return todoModel{append([]string(nil), m.texts...), append([]string(nil), m.statuses...), append([]string(nil), m.reasons...)}
}

// apply returns the refusal code, leaving m unchanged on refusal.
func (m *todoModel) apply(s Step) tool.Code {
	next := m.copy()
	var code tool.Code
	switch s.Op {
	case OpView:
	case OpInit:
		next = todoModel{}
		code = next.add(s.Items)
	case OpAppend:
		if len(s.Items) == 0 {
			code = CodeInvalid
		} else {
			code = next.add(s.Items)
		}
	case OpStart, OpDone, OpDrop, OpBlock, OpUnblock, OpRemove:
		i, c := next.find(s.Task)
		if c != "" {
			if s.Op == OpRemove && c == CodeUnknownTask {
				return ""
			}
			return c
		}
		st := next.statuses[i]
		switch s.Op {
		case OpStart:
			if st == "blocked" {
				return CodeInvalid
			}
			for j := range next.statuses {
				if next.statuses[j] == "active" {
					next.statuses[j] = "pending"
				}
			}
			next.statuses[i], next.reasons[i] = "active", ""
		case OpDone:
			next.statuses[i], next.reasons[i] = "done", ""
		case OpDrop:
			next.statuses[i], next.reasons[i] = "dropped", ""
		case OpBlock:
			if st == "done" || st == "dropped" || len(strings.TrimSpace(s.Reason)) > MaxReasonBytes {
				return CodeInvalid
			}
			next.statuses[i], next.reasons[i] = "blocked", strings.TrimSpace(s.Reason)
		case OpUnblock:
			if st == "blocked" {
				next.statuses[i], next.reasons[i] = "pending", ""
			}
		case OpRemove:
			next.texts = append(next.texts[:i], next.texts[i+1:]...)
			next.statuses = append(next.statuses[:i], next.statuses[i+1:]...)
			next.reasons = append(next.reasons[:i], next.reasons[i+1:]...)
		}
	default:
		code = CodeInvalid
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
		b.Tasks = append(b.Tasks, Task{Text: m.texts[i], Status: Status(m.statuses[i]), Reason: m.reasons[i]})
	}
	return b
}

var todoPool = []string{"write tests", "Write  Tests", "fix the bug", "ship", "review", "docs", "  ", "Ship"}

// Reach counters: the generator must reach the states the rules are about.
var reachedActive, reachedBlocked, reachedPromotion, reachedRefusal atomic.Int64

func drawTodoStep(t *rapid.T, m *todoModel) Step {
	op := rapid.SampledFrom(append(Ops(), "bogus")).Draw(t, "op")
	s := Step{Op: op}
	switch op {
	case OpInit, OpAppend:
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
				got, err := Apply(b, s)
				want := m.apply(s)
				if errorCode(err) != want {
					t.Fatalf("%+v: code %q, model says %q (%v)", s, errorCode(err), want, err)
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
				again, rErr := Apply(got, s)
				if errorCode(rErr) != errorCode(err) || !cmp.Equal(again, got) {
					t.Fatalf("%+v: replay is not idempotent: %v\n%s", s, rErr, cmp.Diff(got, again))
				}
				if got.Active() >= 0 {
					reachedActive.Add(1)
					if !hadActive && len(b.Tasks) > 0 && s.Op != OpStart && s.Op != OpInit {
						reachedPromotion.Add(1)
					}
				}
				for _, task := range got.Tasks {
					if task.Status == Blocked {
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
	b.Tasks = append(b.Tasks, Task{Text: "e", Status: Blocked, Reason: "needs review"})
	want := "todo: 1/5 done\n[x] a\n[>] b\n[ ] c\n[-] d\n[!] e (blocked: needs review)"
	if got := b.Render(); got != want {
		t.Fatalf("Render() =\n%s\nwant\n%s", got, want)
	}
	if got := (Board{}).Render(); got != "todo: (empty)" {
		t.Fatalf("empty board renders %q", got)
	}
}

// errorCode is the code of err's *Error, or "".
func errorCode(err error) tool.Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
