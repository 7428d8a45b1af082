package codemode

// RecipeFanOut is the orchestration seam's recipe, shown in the code_mode
// description and run as examples/subagents' code-mode fan-out: three
// children spawned with one result contract, joined by one wait, their
// outcomes emitted as a report. The test suite runs it verbatim with a
// scripted Runner.
const RecipeFanOut = `package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"cap/report"
	"cap/strand"
)

func main() {
	ctx := context.Background()
	contract := ` + "`" + `{"type":"object","properties":{"area":{"type":"string"},"issues":{"type":"integer"}}}` + "`" + `
	var hs []string
	for _, area := range []string{"auth", "storage", "billing"} {
		c, err := strand.Spawn(ctx, "review "+area, "Review "+area, strand.Options{Result: contract})
		if err != nil {
			fmt.Println(err)
			return
		}
		hs = append(hs, c.Handle)
	}
	outs, err := strand.Wait(ctx, hs, 30*time.Second)
	if err != nil {
		fmt.Println("wait:", err)
		return
	}
	var b strings.Builder
	for _, o := range outs {
		fmt.Fprintf(&b, "%s: %s, result %s %s %s\n", o.Strand, o.State, o.ResultKind, o.Result, o.Mismatch)
	}
	if _, err := report.Emit(ctx, "reviews.txt", []byte(b.String()), "text/plain"); err != nil {
		fmt.Println("report:", err)
	}
	fmt.Print(b.String())
}
`
