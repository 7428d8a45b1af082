package hashline_test

import (
	"errors"
	"fmt"

	"github.com/agentloom/loom/hashline"
)

func ExampleAnnotate() {
	content := []byte("package main\n\nfunc main() {}\n")
	lines := hashline.Annotate(content)
	fmt.Println("digest:", hashline.Digest(content))
	fmt.Print(hashline.RenderLines(lines))

	win, next, more := hashline.Window(lines, 1, 2)
	fmt.Printf("window of %d lines, more=%v, continue at offset %d\n", len(win), more, next)
	// Output:
	// digest: 0d3581fc3dfd656a-29
	// 1:55021290|package main
	// 2:cbf29ce4|
	// 3:9812086b|func main() {}
	// window of 2 lines, more=true, continue at offset 3
}

func ExampleNewPlan() {
	content := []byte("one\ntwo\nthree\n")
	lines := hashline.Annotate(content)

	// Hunks as a model would send them, addressed by "line:anchor".
	data := fmt.Sprintf(`[
		{"op": "replace", "start": %q, "lines": ["TWO", "two and a half"]},
		{"op": "append", "lines": ["four"]}
	]`, hashline.Ref{Line: 2, Anchor: lines[1].Anchor})
	hunks, err := hashline.DecodeHunks([]byte(data))
	if err != nil {
		fmt.Println(err)
		return
	}
	plan, err := hashline.NewPlan(content, hunks)
	if err != nil {
		fmt.Println(err)
		return
	}
	applied, err := plan.Apply(content)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s", applied.Content)
	fmt.Println("regions:", applied.Regions)
	fresh, complete, _ := hashline.RenderRegionsOf(applied.Content, applied.Regions, 0, hashline.MaxFreshAnchorBytes)
	fmt.Print(fresh)
	fmt.Println("complete:", complete)

	// The plan is bound to the original digest: it cannot apply twice.
	_, err = plan.Apply(applied.Content)
	var stale *hashline.StaleError
	fmt.Println(errors.As(err, &stale), stale.Code)
	// Output:
	// one
	// TWO
	// two and a half
	// three
	// four
	// regions: [{2 3} {5 5}]
	// 2:6cb11319|TWO
	// 3:1dfb32b3|two and a half
	// ...
	// 5:dd33fe79|four
	// complete: true
	// true stale_digest
}
