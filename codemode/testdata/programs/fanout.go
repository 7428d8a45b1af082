// Read every Go file under the workspace with 8 goroutines at once and report the largest files and total lines.
package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"cap/fs"
	"cap/search"
)

type stat struct {
	path  string
	lines int
	bytes int
}

func main() {
	ctx := context.Background()
	files, err := search.Glob(ctx, "**/*.go", "")
	if err != nil {
		fmt.Println("glob:", err)
		return
	}

	paths := make(chan string)
	var mu sync.Mutex
	var stats []stat
	var failed []string
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range paths {
				f, err := fs.Read(ctx, p)
				mu.Lock()
				if err != nil {
					failed = append(failed, p+": "+err.Error())
				} else {
					stats = append(stats, stat{path: p, lines: strings.Count(f.Text(), "\n"), bytes: f.Size})
				}
				mu.Unlock()
			}
		}()
	}
	for _, p := range files.Paths {
		paths <- p
	}
	close(paths)
	wg.Wait()

	total := 0
	for _, s := range stats {
		total += s.lines
	}
	sort.Slice(stats, func(i, j int) bool { return stats[i].lines > stats[j].lines })
	fmt.Printf("%d Go files read, %d lines in all, %d unreadable\n", len(stats), total, len(failed))
	for i, s := range stats {
		if i == 5 {
			break
		}
		fmt.Printf("  %6d lines %8d bytes  %s\n", s.lines, s.bytes, s.path)
	}
	for _, f := range failed {
		fmt.Println("  unreadable:", f)
	}
}
