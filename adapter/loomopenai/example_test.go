package loomopenai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentloom/loom/adapter/loomopenai"
	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/plane"
)

// A host runs its main strand and its sub-agents with the same Runner:
// it is the plane's Runner, so agent_spawn runs each child as its own
// Responses loop. Here a scripted Responses endpoint stands in for the
// provider: its model reads a missing file, and the failure reaches it
// with its code.
func Example() {
	root, _ := os.MkdirTemp("", "loomopenai-example-")
	defer os.RemoveAll(root)
	ws := filepath.Join(root, "ws")
	os.Mkdir(ws, 0o755)
	srv := httptest.NewServer(scriptedResponses())
	defer srv.Close()

	runner := &loomopenai.Runner{
		Client: openai.NewClient(option.WithAPIKey("sk-..."), option.WithBaseURL(srv.URL+"/v1/"), option.WithMaxRetries(0)),
		Model:  "gpt-5",
	}
	p, err := plane.New(plane.Config{Workspace: ws, BlobDir: filepath.Join(root, "blobs"),
		HistoryPath: filepath.Join(root, "history.sqlite"), Scratch: filepath.Join(root, "scratch"),
		Runner: runner})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	runner.Plane = p // the Runner dispatches every strand's calls through the plane

	answer, err := runner.Run(context.Background(), agent.Turn{Strand: p.Call.Strand, Operation: "op-1",
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

// scriptedResponses plays a model over the Responses API: it reads
// notes.txt, then answers from what the read returned.
func scriptedResponses() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []struct {
				Type   string `json:"type"`
				Output string `json:"output"`
			} `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		output := []any{map[string]any{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "fs_read",
			"arguments": `{"path":"notes.txt"}`, "status": "completed"}}
		for _, in := range req.Input {
			if in.Type == "function_call_output" {
				fmt.Println("the model read:", strings.SplitN(in.Output, ";", 2)[0])
				output = []any{map[string]any{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
					"content": []any{map[string]any{"type": "output_text", "text": "There are no notes yet.", "annotations": []any{}}}}}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "resp_1", "object": "response", "created_at": 1, "status": "completed",
			"model": "gpt-5", "output": output, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}})
	}
}
