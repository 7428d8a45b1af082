package codemode

// The recipes the code_mode description shows: complete programs a model
// may copy. The test suite runs each verbatim through every stage, so
// the description never shows a program that does not work.
const (
	// recipeSurvey reads, lists and searches at once.
	recipeSurvey = `package main

import (
	"context"
	"fmt"
	"sync"

	"cap/fs"
	"cap/search"
)

func main() {
	ctx := context.Background()
	g, err := search.Glob(ctx, "*.go", "")
	if err != nil {
		fmt.Println("glob:", err)
		return
	}
	var wg sync.WaitGroup
	sizes := make([]int, len(g.Paths))
	for i, p := range g.Paths {
		wg.Add(1)
		go func() { // calls are safe from goroutines
			defer wg.Done()
			if f, err := fs.Read(ctx, p); err == nil {
				sizes[i] = f.Size
			}
		}()
	}
	wg.Wait()
	for i, p := range g.Paths {
		fmt.Println(p, sizes[i])
	}
	todo, _ := search.Grep(ctx, "TODO", search.GrepOptions{Glob: "*.go"})
	fmt.Println(len(todo.Matches), "TODOs")
}
`
	// recipeCheck runs a command and reports on it.
	recipeCheck = `package main

import (
	"context"
	"errors"
	"fmt"

	"cap/proc"
)

func main() {
	r, err := proc.Run(context.Background(), proc.Cmd{Argv: []string{"git", "status", "--short"}})
	var e *proc.Error
	if errors.As(err, &e) {
		fmt.Println("refused:", e.Code, e.Message)
		return
	}
	fmt.Printf("exit %d\n%s%s", r.Exit, r.Stdout, r.Stderr)
}
`
)
