package agent_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/tool"
)

func ExampleMintName() {
	c := agent.Caller{Strand: "main", OpID: "op-7", StepID: "step-3", SourceIndex: 0}
	fmt.Println(agent.MintName(c, "Review the auth module"))
	// The purpose only decorates: the digest is the call site's.
	fmt.Println(agent.MintName(c, "something else entirely"))
	// Output:
	// sub:main/review-the-auth-module-daa5856c4fe2af89
	// sub:main/something-else-entirely-daa5856c4fe2af89
}

func ExampleParseHandle() {
	h, err := agent.ParseHandle("sub:main/scan-daa5856c4fe2af89#run-1")
	fmt.Println(h.Strand, h.Operation, err)
	_, err = agent.ParseHandle("sub:main/scan#")
	fmt.Println(tool.CodeOf(err))
	// Output:
	// sub:main/scan-daa5856c4fe2af89 run-1 <nil>
	// malformed_handle
}

func ExampleParseResultSchema() {
	s, err := agent.ParseResultSchema(json.RawMessage(`{
		"type": "object",
		"properties": {"files": {"type": "array", "items": {"type": "string"}}, "count": {"type": "integer"}},
		"required": ["files"]}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(s)
	fmt.Println(agent.Judge(s, json.RawMessage(`{"files":["a.go"],"extra":1}`)).Kind)
	fmt.Println(agent.Judge(s, json.RawMessage(`{"files":"a.go"}`)).Mismatch.Problems)
	// Output:
	// {count: integer?, files: array of string}
	// valid
	// [files is a string, want array]
}

func ExampleNewAgency() {
	runner := agent.RunnerFunc(func(ctx context.Context, t agent.Turn) (string, error) {
		return "checked " + t.Prompt, nil
	})
	a := agent.NewAgency(runner, agent.Options{})
	defer a.Close()

	parent := agent.Caller{Strand: "main", OpID: "op-1", StepID: "step-1"}
	sp, err := a.Spawn(context.Background(), parent, agent.SpawnRequest{Purpose: "check", Prompt: "go.mod"})
	if err != nil {
		panic(err)
	}
	ws, err := a.Wait(context.Background(), parent, []agent.Handle{sp.Handle}, a.Options().MaxWait)
	if err != nil {
		panic(err)
	}
	fmt.Println(ws[0].State, ws[0].Report)
	// Output: completed checked go.mod
}

func ExampleTools() {
	runner := agent.RunnerFunc(func(ctx context.Context, t agent.Turn) (string, error) {
		return "all tests pass", nil
	})
	a := agent.NewAgency(runner, agent.Options{})
	defer a.Close()
	reg, err := tool.NewRegistry(agent.Tools(a)...)
	if err != nil {
		panic(err)
	}
	// The host builds each Call from its own coordinates; the model
	// supplies only the arguments.
	call := &tool.Call{Strand: "main", OpID: "op-1", StepID: "step-1"}
	out := reg.Dispatch(context.Background(), call, agent.SpawnToolName,
		json.RawMessage(`{"purpose":"run tests","prompt":"Run the test suite and report."}`))
	handle := out.Details.(agent.SpawnDetails).Handle

	out = reg.Dispatch(context.Background(), call.At("op-1", "step-2", 0), agent.WaitToolName,
		json.RawMessage(`{"handles":["`+handle+`"]}`))
	fmt.Println(out.IsError)
	fmt.Println(out.Text)
	// Output:
	// false
	// sub:main/run-tests-80797d5250cc455b#run-1: completed
	// report:
	// all tests pass
}
