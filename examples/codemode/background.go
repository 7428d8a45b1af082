package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/agentloom/loom/codemode"
	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

// counter is the background program: it registers the endpoint "paths",
// declares itself ready, and for every path it receives prints how many
// lines the file has, until it receives "done".
const counter = `package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"cap/execution"
	"cap/fs"
)

func main() {
	ctx := context.Background()
	if err := execution.Register(ctx, "paths"); err != nil {
		fmt.Println("register:", err)
		return
	}
	if err := execution.Ready(ctx); err != nil {
		fmt.Println("ready:", err)
		return
	}
	for {
		in, ok, err := execution.Receive(ctx, "paths", 30*time.Second)
		switch {
		case err != nil:
			fmt.Println("receive:", err)
			return
		case !ok:
			fmt.Println("no path came in 30 s")
			return
		case string(in) == "done":
			return
		}
		f, err := fs.Read(ctx, string(in))
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s: %d lines\n", f.Path, strings.Count(f.Text(), "\n"))
	}
}
`

// readyWaitMs is how long check waits for the launched program to be
// ready for input.
const readyWaitMs = 60_000

// runBackground launches counter and drives it through the modes a model
// uses: check (waiting until it is ready: a send before execution.Ready
// is refused), send (to the endpoint it registered), join (its result,
// rendered as run renders it, without the call record).
func runBackground(w io.Writer, p *plane.Plane) error {
	ctx := context.Background()
	step := 0
	call := func(args map[string]any) tool.Outcome {
		step++
		raw, _ := json.Marshal(args)
		out := p.Registry.Dispatch(ctx, p.Call.At("op-2", fmt.Sprint(step), 0), codemode.ToolName, raw)
		fmt.Fprintf(w, "\n> code_mode mode %s (error: %v, code %q):\n%s\n", args["mode"], out.IsError, out.Code, out.Text)
		return out
	}
	io.WriteString(w, "\nbackground program:\n"+counter)
	out := call(map[string]any{"mode": "launch", "program": counter})
	d, ok := out.Details.(codemode.ExecutionDetails)
	if !ok {
		return fmt.Errorf("launch: %s", out.Text)
	}
	h := d.Handle
	out = call(map[string]any{"mode": "check", "handle": h, "wait_ms": readyWaitMs})
	d, ok = out.Details.(codemode.ExecutionDetails)
	if !ok || !d.Ready {
		return fmt.Errorf("not ready after %d ms: %s", readyWaitMs, out.Text)
	}
	for _, in := range []string{"main.go", "greet/greet.go", "done"} {
		if out = call(map[string]any{"mode": "send", "handle": h, "endpoint": "paths", "input": in}); out.IsError {
			return fmt.Errorf("send: %s", out.Text)
		}
	}
	if out = call(map[string]any{"mode": "join", "handle": h}); out.IsError {
		return fmt.Errorf("join: %s", out.Code)
	}
	return nil
}
