package loomeino_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"

	"github.com/agentloom/loom/adapter/loomeino"
	"github.com/agentloom/loom/plane"
)

// A host runs its main strand with eino's ReAct agent over the plane's
// tools, and its sub-agents with the Runner. The scripted model writes a
// file and reads a missing one in one turn: eino runs both calls at
// once, the plane's fence runs the Exclusive fs_write alone, and the
// failed read reaches the model with its code.
func Example() {
	root, _ := os.MkdirTemp("", "loomeino-example-")
	defer os.RemoveAll(root)
	ws := filepath.Join(root, "ws")
	os.Mkdir(ws, 0o755)

	var m model.ToolCallingChatModel = newScripted(map[string]turnFunc{
		"take notes": func(msgs []*schema.Message, n int) (*schema.Message, error) {
			if n == 0 {
				return calls("call", "fs_write", `{"path":"notes.txt","content":"loom\n"}`,
					"fs_read", `{"path":"missing.txt"}`), nil
			}
			for _, id := range []string{"call-0", "call-1"} {
				text := resultText(toolResults(msgs)[id])
				fmt.Printf("%s: %s\n", id, strings.SplitN(text, "\n", 2)[0])
			}
			return schema.AssistantMessage("noted", nil), nil
		},
	})
	runner := &loomeino.Runner{Model: func(context.Context, string) (model.ToolCallingChatModel, error) { return m, nil }}
	p, err := plane.New(plane.Config{Workspace: ws, BlobDir: filepath.Join(root, "blobs"),
		HistoryPath: filepath.Join(root, "history.sqlite"), Scratch: filepath.Join(root, "scratch"),
		Runner: runner})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	runner.Plane = p

	ctx := context.Background()
	set := loomeino.NewToolset(p.Dispatcher(), p.CallFor(plane.DefaultStrand, "op-1"))
	agent, err := react.NewAgent(ctx, &react.AgentConfig{ToolCallingModel: set.Model(m), ToolsConfig: set.Config(ctx)})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := agent.Generate(ctx, []*schema.Message{schema.UserMessage("take notes")})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Content)
	// Output:
	// call-0: created notes.txt (5 bytes, 1 lines)
	// call-1: error not_found: missing.txt does not exist; check the path (relative paths start at the workspace root) or create it with fs_write
	// noted
}
