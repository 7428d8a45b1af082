package search_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentloom/loom/internal/search"
)

// Search a small tree with the Go engine and render the hits relative to
// the root, as the grep tool does.
func ExampleGo() {
	root, _ := os.MkdirTemp("", "search-example")
	defer os.RemoveAll(root)
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\ntwo needle\nthree\n"), 0o644)
	os.WriteFile(filepath.Join(root, "b.log"), []byte("needle in a log\n"), 0o644)
	os.WriteFile(filepath.Join(root, ".gitignore"), []byte("*.log\n"), 0o644)

	res, err := search.Go(context.Background(), root, search.Options{Pattern: "needle", Context: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	rel := func(p string) string { return strings.TrimPrefix(p, root+"/") }
	fmt.Print(search.Render(res.Hits, 1, rel))
	fmt.Println(res.Matches, res.Files)
	// Output:
	// a.txt-1-one
	// a.txt:2:two needle
	// a.txt-3-three
	// 1 1
}
