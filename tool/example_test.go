package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/agentloom/loom/tool"
)

// A tool's schema and decoder both come from its argument struct.
func ExampleTyped() {
	type greetArgs struct {
		Name string `json:"name" jsonschema:"who to greet"`
	}
	greet := tool.Typed(tool.Tool{Name: "greet", Description: "Greet someone."},
		func(_ context.Context, _ *tool.Call, a greetArgs) tool.Outcome {
			return tool.Success("hello, " + a.Name)
		})
	reg, _ := tool.NewRegistry(greet)

	fmt.Println(string(greet.Schema))
	fmt.Println(reg.Dispatch(context.Background(), &tool.Call{}, "greet", json.RawMessage(`{"name":"loom"}`)).Text)
	fmt.Println(reg.Dispatch(context.Background(), &tool.Call{}, "greet", json.RawMessage(`{"nmae":"loom"}`)).Text)
	// Output:
	// {"type":"object","properties":{"name":{"type":"string","description":"who to greet"}},"required":["name"],"additionalProperties":false}
	// hello, loom
	// invalid arguments for greet: unknown property "nmae"; accepted properties: name
}

// Dispatch is total: an unknown tool is an error outcome, not a Go error.
func ExampleRegistry_Dispatch() {
	ws, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(ws)
	reg, _ := tool.NewRegistry(tool.FileTools()...)
	c := &tool.Call{Workspace: ws}

	out := reg.Dispatch(context.Background(), c, "fs_write", json.RawMessage(`{"path":"notes/a.txt","content":"one\ntwo\n"}`))
	fmt.Print(out.Text)
	out = reg.Dispatch(context.Background(), c, "fs_delete", nil)
	fmt.Println(out.IsError, out.Text)
	// Output:
	// created notes/a.txt (8 bytes, 2 lines)
	// digest: 7b9c7bc72169cef7-8
	// Fresh anchors:
	// 1:1a08aa19|one
	// 2:5714d319|two
	// true unknown tool "fs_delete"; available tools: fs_edit, fs_read, fs_write, working_directory
}
