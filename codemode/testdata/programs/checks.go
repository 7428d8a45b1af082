// Run go vet and git log in jails concurrently, keep the last commit seen in kv, and emit a markdown report.
package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"cap/kv"
	"cap/proc"
	"cap/report"
)

func main() {
	ctx := context.Background()
	var vet, log proc.Result
	var vetErr, logErr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		vet, vetErr = proc.Run(ctx, proc.Cmd{Argv: []string{"go", "vet", "./..."}, Timeout: 90 * time.Second})
	}()
	go func() {
		defer wg.Done()
		log, logErr = proc.Run(ctx, proc.Cmd{Argv: []string{"git", "log", "--oneline", "-n", "5"}})
	}()
	wg.Wait()

	var b strings.Builder
	b.WriteString("# Checks\n\n## go vet\n\n")
	switch {
	case vetErr != nil:
		fmt.Fprintf(&b, "could not run: %v\n", vetErr)
	case vet.Exit == 0:
		b.WriteString("clean\n")
	default:
		fmt.Fprintf(&b, "exit %d:\n\n```\n%s```\n", vet.Exit, vet.Stderr)
	}
	b.WriteString("\n## recent commits\n\n")
	head := ""
	switch {
	case logErr != nil:
		fmt.Fprintf(&b, "could not run: %v\n", logErr)
	case log.Exit != 0:
		fmt.Fprintf(&b, "git log exit %d: %s\n", log.Exit, log.Stderr)
	default:
		lines := strings.Split(strings.TrimSpace(string(log.Stdout)), "\n")
		head, _, _ = strings.Cut(lines[0], " ")
		for _, l := range lines {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}

	if head != "" {
		prev, found, err := kv.Get(ctx, "checks/last-head")
		if err == nil {
			switch {
			case !found:
				fmt.Println("first run: no earlier head recorded")
			case string(prev) == head:
				fmt.Println("no new commits since the last run")
			default:
				fmt.Printf("new commits since %s\n", prev)
			}
		}
		if err := kv.Set(ctx, "checks/last-head", []byte(head)); err != nil {
			fmt.Println("kv.set:", err)
		}
	}

	a, err := report.Emit(ctx, "checks.md", []byte(b.String()), "text/markdown")
	if err != nil {
		fmt.Println("emit:", err)
		return
	}
	fmt.Printf("vet exit %d; report %s (%d bytes)\n", vet.Exit, a.Digest, a.Bytes)
}
