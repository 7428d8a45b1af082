package history_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/tool"
)

func ExampleOpenSQLite() {
	dir, _ := os.MkdirTemp("", "history-example-")
	defer os.RemoveAll(dir)
	idx, err := history.OpenSQLite(filepath.Join(dir, "history.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer idx.Close()
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	// A host indexes its session log as it grows.
	_, err = idx.IndexBatch(ctx, []history.Entry{
		{Session: "s1", ID: "1", Kind: "message", Role: "user", Text: "Why does the retry loop spin?", Time: at},
		{Session: "s1", ID: "2", Kind: "message", Role: "assistant", Text: "It never backs off; see backoff.go.", Time: at},
	})
	if err != nil {
		log.Fatal(err)
	}
	hits, err := idx.Search(ctx, history.Query{Text: "retry OR backoff*", Limit: history.DefaultLimit})
	if err != nil {
		log.Fatal(err)
	}
	for _, h := range hits {
		fmt.Printf("%d %s/%s %s: %s\n", h.Seq, h.Session, h.Entry, h.Role, h.Snippet)
	}
	// Output:
	// 2 s1/2 assistant: It never backs off; see **backoff**.go.
	// 1 s1/1 user: Why does the **retry** loop spin?
}

func ExampleSQLite_WordsToFTS5() {
	dir, _ := os.MkdirTemp("", "history-example-")
	defer os.RemoveAll(dir)
	idx, err := history.OpenSQLite(filepath.Join(dir, "history.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer idx.Close()
	for _, q := range []string{`retry loop`, `retry OR backoff* spin`, `"quoted" NOT col:x -`} {
		expr, _ := idx.WordsToFTS5(context.Background(), q)
		fmt.Println(expr)
	}
	// Output:
	// "retry" "loop"
	// "spin" AND ("retry" OR "backoff"*)
	// """quoted""" "NOT" "col:x"
}

func ExampleRedact() {
	fmt.Println(history.Redact("export OPENAI_API_KEY=sk-abcdefghijklmnopqrstuv"))
	fmt.Println(history.Redact("curl -H 'Authorization: Bearer 0a1b2c3d4e5f'"))
	// Output:
	// export OPENAI_API_KEY=[REDACTED]
	// curl -H 'Authorization: Bearer [REDACTED]'
}

func ExampleSearchTool() {
	dir, _ := os.MkdirTemp("", "history-example-")
	defer os.RemoveAll(dir)
	idx, err := history.OpenSQLite(filepath.Join(dir, "history.db"))
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
