package history_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/history/sqlite"
	"github.com/agentloom/loom/tool"
)

func ExamplePrepareNote() {
	n, err := history.PrepareNote(history.Note{
		Title:       "Deploy credentials",
		Description: "how the deploy script authenticates",
		Text:        "export OPENAI_API_KEY=sk-abcdefghijklmnopqrstuv\ncurl -H 'Authorization: Bearer 0a1b2c3d4e5f'",
		Kind:        history.Fact,
		Session:     "main",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n.Text)
	// Output:
	// export OPENAI_API_KEY=[REDACTED]
	// curl -H 'Authorization: Bearer [REDACTED]'
}

func ExampleSearchTool() {
	dir, _ := os.MkdirTemp("", "history-example-")
	defer os.RemoveAll(dir)
	idx, err := sqlite.Open(filepath.Join(dir, "history.db"), sqlite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer idx.Close()
	// The host registers both tools over the same store; the session of a
	// call is its strand (history.StrandSession) unless the host says
	// otherwise.
	reg, err := tool.NewRegistry(history.SearchTool(idx, nil), history.RememberTool(idx, nil))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	call := &tool.Call{Strand: "main"}
	remember, _ := reg.Lookup(history.RememberToolName)
	o := remember.Run(ctx, call, json.RawMessage(`{"title":"Tests need -race","description":"CI runs the race detector","note":"Run go test -race ./... before handing work back.","kind":"fact"}`))
	fmt.Println(o.Text)
	search, _ := reg.Lookup(history.SearchToolName)
	o = search.Run(ctx, call, json.RawMessage(`{"query":"race","kind":"note"}`))
	fmt.Println(strings.SplitN(o.Text, "\n", 2)[0])
	// Output:
	// Remembered fact note "Tests need -race". Later sessions find it with history_search kind=note.
	// history_search: 1 hit(s) for words query "race" (scope repository, kind "note"), newest first.
}
