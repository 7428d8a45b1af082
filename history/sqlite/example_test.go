package sqlite_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/history/sqlite"
)

func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "history-example-")
	defer os.RemoveAll(dir)
	idx, err := sqlite.Open(filepath.Join(dir, "history.db"), sqlite.Options{})
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
	hits, err := idx.Search(ctx, history.Query{Text: "retry OR backoff*", Limit: 10})
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

func ExampleStore_WordsToFTS5() {
	dir, _ := os.MkdirTemp("", "history-example-")
	defer os.RemoveAll(dir)
	idx, err := sqlite.Open(filepath.Join(dir, "history.db"), sqlite.Options{})
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
