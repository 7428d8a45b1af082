package agent

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentloom/loom/todo"
)

func BenchmarkMintName(b *testing.B) {
	c := Caller{Strand: "main", OpID: "0b8e5a8e-7d4c-4f3e-9a57-1c2d3e4f5a6b", StepID: "5f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b", SourceIndex: 3}
	for b.Loop() {
		_ = MintName(c, "Review the authentication module")
	}
}

func BenchmarkParseHandle(b *testing.B) {
	s := "sub:main/review-auth-daa5856c4fe2af89/tests-0123456789abcdef#run-2"
	for b.Loop() {
		if _, err := ParseHandle(s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseResultSchema(b *testing.B) {
	raw := json.RawMessage(`{"type":"object","properties":{"files":{"type":"array","items":{"type":"string"}},"count":{"type":"integer"},"summary":{"type":"string"}},"required":["files","count"]}`)
	for b.Loop() {
		if _, err := ParseResultSchema(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkApplyTodo(b *testing.B) {
	var items []string
	for i := range todo.MaxTasks / 2 {
		items = append(items, fmt.Sprintf("task number %d", i))
	}
	board, err := todo.Apply(todo.Board{}, todo.Step{Op: todo.OpInit, Items: items})
	if err != nil {
		b.Fatal(err)
	}
	step := todo.Step{Op: todo.OpDone, Task: "Task Number 20"}
	for b.Loop() {
		if _, err := todo.Apply(board, step); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSpawnWait(b *testing.B) {
	a := NewAgency(echo, Options{})
	defer a.Close()
	i := 0
	for b.Loop() {
		c := Caller{Strand: "main", OpID: "op", StepID: "s", SourceIndex: i}
		i++
		sp, err := a.Spawn(bg, c, spawnReq("bench"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := a.Wait(bg, c, []Handle{sp.Handle}, a.opts.MaxWait); err != nil {
			b.Fatal(err)
		}
	}
}
