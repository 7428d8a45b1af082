// Survey the workspace: list the root, read go.mod, count Go files and TODO comments, print a summary.
package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"cap/fs"
	"cap/search"
)

func main() {
	ctx := context.Background()

	root, err := fs.List(ctx, ".")
	if err != nil {
		fmt.Println("cannot list the workspace:", err)
		return
	}
	var dirs []string
	for _, e := range root.Entries {
		if e.Kind == fs.KindDir && !strings.HasPrefix(e.Name, ".") {
			dirs = append(dirs, e.Name)
		}
	}
	sort.Strings(dirs)
	fmt.Printf("top-level directories (%d): %s\n", len(dirs), strings.Join(dirs, ", "))

	mod, err := fs.Read(ctx, "go.mod")
	var e *fs.Error
	switch {
	case errors.As(err, &e) && e.Code == "not_found":
		fmt.Println("no go.mod at the root")
	case err != nil:
		fmt.Println("reading go.mod:", err)
	default:
		first, _, _ := strings.Cut(mod.Text(), "\n")
		fmt.Printf("go.mod: %s (%d bytes)\n", first, mod.Size)
	}

	files, err := search.Glob(ctx, "**/*.go", "")
	if err != nil {
		fmt.Println("glob:", err)
		return
	}
	fmt.Printf("Go files: %d (truncated: %t)\n", len(files.Paths), files.Truncated)

	todos, err := search.Grep(ctx, `\b(TODO|FIXME)\b`, search.GrepOptions{Glob: "*.go", MaxResults: 200})
	if err != nil {
		fmt.Println("grep:", err)
		return
	}
	perFile := map[string]int{}
	for _, m := range todos.Matches {
		perFile[m.Path]++
	}
	paths := make([]string, 0, len(perFile))
	for p := range perFile {
		paths = append(paths, p)
	}
	sort.Slice(paths, func(i, j int) bool {
		if perFile[paths[i]] != perFile[paths[j]] {
			return perFile[paths[i]] > perFile[paths[j]]
		}
		return paths[i] < paths[j]
	})
	fmt.Printf("TODO/FIXME comments: %d in %d files\n", len(todos.Matches), len(paths))
	for i, p := range paths {
		if i == 5 {
			break
		}
		fmt.Printf("  %4d  %s\n", perFile[p], p)
	}
}
