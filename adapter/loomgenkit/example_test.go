package loomgenkit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"

	"github.com/agentloom/loom/adapter/loomgenkit"
	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/plane"
)

// A host runs its main strand and its sub-agents with the same Runner in
// Genkit's tool loop: it is the plane's Runner, so agent_spawn runs each
// child as its own Generate. The model comes from a plugin
// (genkit.WithPlugins) or DefineModel; here a scripted one reads a
// missing file, and the failure reaches it with its code.
func Example() {
	root, _ := os.MkdirTemp("", "loomgenkit-example-")
	defer os.RemoveAll(root)
	ws := filepath.Join(root, "ws")
	os.Mkdir(ws, 0o755)

	ctx := context.Background()
	g := genkit.Init(ctx)
	genkit.DefineModel(g, "example/scripted", &ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true, SystemRole: true}},
		func(_ context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			if last := req.Messages[len(req.Messages)-1]; last.Role == ai.RoleTool {
				out, _ := last.Content[0].ToolResponse.Output.(string)
				fmt.Println("the model read:", strings.SplitN(out, ";", 2)[0])
				return &ai.ModelResponse{Message: ai.NewModelTextMessage("There are no notes yet.")}, nil
			}
			return &ai.ModelResponse{Message: ai.NewModelMessage(ai.NewToolRequestPart(&ai.ToolRequest{Ref: "r1", Name: "fs_read",
				Input: map[string]any{"path": "notes.txt"}}))}, nil
		})

	runner := &loomgenkit.Runner{Genkit: g, Model: "example/scripted"}
	p, err := plane.New(plane.Config{Workspace: ws, BlobDir: filepath.Join(root, "blobs"),
		HistoryPath: filepath.Join(root, "history.sqlite"), Scratch: filepath.Join(root, "scratch"),
		Runner: runner})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	runner.Plane = p // the Runner dispatches every strand's calls through the plane

	answer, err := runner.Run(ctx, agent.Turn{Strand: p.Call.Strand, Operation: "op-1",
		Notice: "You are a careful engineer.", Prompt: "read notes.txt"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(answer)
	// Output:
	// the model read: error not_found: notes.txt does not exist
	// There are no notes yet.
}
