package plane_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentloom/loom/plane"
)

// A host assembles the whole plane from a workspace, hands one model
// turn's tool calls to the dispatcher, and sends the outcomes back in
// order. The fs_write is Exclusive, so it ends before the two reads
// (Concurrent) start, side by side.
func Example() {
	root, _ := os.MkdirTemp("/var/tmp", "loom-plane-example-")
	defer os.RemoveAll(root)
	ws := filepath.Join(root, "ws")
	os.Mkdir(ws, 0o755)

	p, err := plane.New(plane.Config{
		Workspace: ws,
		// A host usually leaves these three empty: they default to
		// places in the user cache directory, outside the workspace.
		BlobDir:     filepath.Join(root, "blobs"),
		HistoryPath: filepath.Join(root, "history.sqlite"),
		Scratch:     filepath.Join(root, "scratch"),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()

	turn := []plane.ToolCall{
		{ID: "toolu_1", Name: "fs_write", Args: json.RawMessage(`{"path":"notes.txt","content":"loom\n"}`)},
		{ID: "toolu_2", Name: "grep", Args: json.RawMessage(`{"pattern":"lo+m"}`)},
		{ID: "toolu_3", Name: "fs_read", Args: json.RawMessage(`{"path":"missing.txt"}`)},
	}
	for _, r := range p.Dispatcher().Dispatch(context.Background(), p.Call, "op-1", "step-1", turn) {
		fmt.Printf("%s %s error=%v code=%q\n", r.ID, r.Name, r.Outcome.IsError, r.Outcome.Code)
	}
	// Output:
	// toolu_1 fs_write error=false code=""
	// toolu_2 grep error=false code=""
	// toolu_3 fs_read error=true code="not_found"
}
