package loomanthropic_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/agentloom/loom/adapter/loomanthropic"
	"github.com/agentloom/loom/plane"
)

// A host runs its main strand with the SDK's tool runner over the
// plane's tools, and its sub-agents with the Runner. The scripted model
// (a fake Messages API) writes a file and reads a missing one in one
// turn: the runner executes both calls at once, the plane's fence runs
// the Exclusive fs_write alone, and the failed read reaches the model
// with is_error set and its code.
func Example() {
	root, _ := os.MkdirTemp("", "loomanthropic-example-")
	defer os.RemoveAll(root)
	ws := filepath.Join(root, "ws")
	os.Mkdir(ws, 0o755)

	srv := httptest.NewServer(newFakeAPI(nil, map[string]replyFunc{
		"take notes": func(x exchange) ([]map[string]any, error) {
			if x.n == 0 {
				return []map[string]any{
					use("toolu_1", "fs_write", map[string]any{"path": "notes.txt", "content": "loom\n"}),
					use("toolu_2", "fs_read", map[string]any{"path": "missing.txt"}),
				}, nil
			}
			for _, id := range []string{"toolu_1", "toolu_2"} {
				r := x.results[id]
				fmt.Printf("%s is_error=%v %s\n", id, r.isError, strings.SplitN(r.text, "\n", 2)[0])
			}
			return []map[string]any{text("noted")}, nil
		},
	}))
	defer srv.Close()
	client := clientOf(srv)

	runner := &loomanthropic.Runner{Client: client, Model: anthropic.ModelClaudeSonnet5_5}
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
	set := loomanthropic.NewToolset(p.Dispatcher(), p.CallFor(plane.DefaultStrand, "op-1"))
	tools, err := set.Tools(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	main := client.Beta.Messages.NewToolRunner(tools, anthropic.BetaToolRunnerParams{
		BetaMessageNewParams: anthropic.BetaMessageNewParams{
			Model:     anthropic.ModelClaudeSonnet5_5,
			MaxTokens: loomanthropic.DefaultMaxTokens,
			Messages:  []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("take notes"))},
		},
	})
	set.Bind(main)
	out, err := main.RunToCompletion(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Content[0].Text)
	// Output:
	// toolu_1 is_error=false created notes.txt (5 bytes, 1 lines)
	// toolu_2 is_error=true Error: not_found: missing.txt does not exist; check the path (relative paths start at the workspace root) or create it with fs_write
	// noted
}
