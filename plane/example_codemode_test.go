package plane_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/codemode"
	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

// exampleDirs makes a workspace and, beside it, the plane's own places
// under /var/tmp (a jail's /tmp is its own); the caller removes root.
func exampleDirs() (root string, cfg plane.Config, err error) {
	root, err = os.MkdirTemp("/var/tmp", "loom-plane-example-")
	if err != nil {
		return "", cfg, err
	}
	ws := filepath.Join(root, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		return root, cfg, err
	}
	return root, plane.Config{Workspace: ws, BlobDir: filepath.Join(root, "blobs"),
		HistoryPath: filepath.Join(root, "history.sqlite"), Scratch: filepath.Join(root, "scratch")}, nil
}

// codeMode dispatches one code_mode call as step step of operation op.
func codeMode(ctx context.Context, p *plane.Plane, c *tool.Call, step string, args map[string]any) tool.Outcome {
	raw, _ := json.Marshal(args)
	return p.Registry.Dispatch(ctx, c.At("op-1", step, 0), codemode.ToolName, raw)
}

// A launched program runs on after the call that launched it answered.
// The model checks it until it is ready (a send before execution.Ready is
// refused with execution_not_ready), sends it input, and joins it for
// what it printed. Every answer's Details is typed: ExecutionDetails for
// launch, check, send and cancel (and a join that found it running),
// Details for a join of an ended program.
func Example_codeModeLaunch() {
	root, cfg, err := exampleDirs()
	defer os.RemoveAll(root)
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg.Families = plane.FamilyFiles | plane.FamilyCodeMode
	p, err := plane.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	ctx := context.Background()

	const echo = `package main

import (
	"context"
	"fmt"
	"time"

	"cap/execution"
)

func main() {
	ctx := context.Background()
	if err := execution.Ready(ctx); err != nil {
		fmt.Println(err)
		return
	}
	in, ok, err := execution.Receive(ctx, "default", 50*time.Second)
	fmt.Printf("received %q %v %v\n", in, ok, err)
}
`
	out := codeMode(ctx, p, p.Call, "step-1", map[string]any{"mode": "launch", "program": echo})
	launched, ok := out.Details.(codemode.ExecutionDetails)
	if !ok {
		fmt.Println(out.Code, out.Text)
		return
	}
	h := launched.Handle
	fmt.Println("launch:", launched.State)
	// check with wait_ms waits, at most that long, until the program is
	// ready for input (or has ended).
	out = codeMode(ctx, p, p.Call, "step-2", map[string]any{"mode": "check", "handle": h, "wait_ms": 60000})
	if d, ok := out.Details.(codemode.ExecutionDetails); ok {
		fmt.Println("check: ready", d.Ready, d.Endpoints)
	}
	out = codeMode(ctx, p, p.Call, "step-3", map[string]any{"mode": "send", "handle": h, "input": "hello"})
	fmt.Printf("send: error %v %q\n", out.IsError, out.Code)
	out = codeMode(ctx, p, p.Call, "step-4", map[string]any{"mode": "join", "handle": h, "wait_ms": 60000})
	if d, ok := out.Details.(codemode.Details); ok && d.Exit != nil {
		// The answer's first line says how it ended; what the program
		// printed follows.
		_, printed, _ := strings.Cut(out.Text, "\n")
		fmt.Printf("join: exit %d, printed %s", *d.Exit, printed[:d.StdoutBytes])
	}
	// Another strand's handle reads as one never minted.
	other := p.CallFor("someone-else", "op-1")
	out = codeMode(ctx, p, other, "step-5", map[string]any{"mode": "check", "handle": h})
	fmt.Println("another strand's check:", out.Code)
	// Output:
	// launch: running
	// check: ready true [default]
	// send: error false ""
	// join: exit 0, printed received "hello" true <nil>
	// another strand's check: unknown_execution
}

// A code_mode call may declare permissions, as bash does. The shortfall
// is raised once, before the program starts, through the call's
// RaiseRefusal (the host's escalation plane); an approval lets the
// program's own capability calls (fs.write here) reach the granted root,
// and Details.Grants says what composed. Without an escalation plane
// nothing is asked, the program does not start, and the refusal names
// the grant an operator could approve.
func Example_codeModeApprovals() {
	root, cfg, err := exampleDirs()
	defer os.RemoveAll(root)
	if err != nil {
		fmt.Println(err)
		return
	}
	outside := filepath.Join(root, "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		fmt.Println(err)
		return
	}
	cfg.Families = plane.FamilyFiles | plane.FamilyCodeMode
	p, err := plane.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	ctx := context.Background()
	program := fmt.Sprintf(`package main

import (
	"context"
	"fmt"

	"cap/fs"
)

func main() {
	_, err := fs.Write(context.Background(), %q, []byte("approved\n"))
	fmt.Println("fs.write:", err)
}
`, filepath.Join(outside, "out.txt"))
	args := map[string]any{"program": program, "permissions": map[string]any{"writable_roots": []string{outside}}}

	// No escalation plane: nothing runs.
	out := codeMode(ctx, p, p.Call, "step-1", args)
	fmt.Println("no plane:", out.Code)

	// An operator who approves what was asked, once.
	asked := 0
	approving := p.Call.At("op-1", "", 0)
	approving.RaiseRefusal = func(_ context.Context, r tool.RaisedRefusal) tool.Escalation {
		asked++
		return tool.Escalation{Resume: true, Grants: r.Denial.Wanted}
	}
	out = codeMode(ctx, p, approving, "step-2", args)
	if d, ok := out.Details.(codemode.Details); ok {
		fmt.Println("approved:", out.IsError, d.Grants.State, "asked", asked)
		for _, g := range d.Grants.Grants {
			fmt.Println("grant:", g.Kind, g.Path == outside)
		}
	}
	b, err := os.ReadFile(filepath.Join(outside, "out.txt"))
	fmt.Printf("%q %v\n", b, err)
	// Output:
	// no plane: requirements_not_covered
	// approved: false composed asked 1
	// grant: writable_root true
	// "approved\n" <nil>
}

// With a Runner (the host's model loop for sub-agents), code_mode serves
// a second seam, "orchestration": a program importing cap/strand spawns,
// joins and messages sub-agents, touching no file, network or process.
// The seam argument picks it; an unserved seam is refused by the schema
// (an enum of the served ones, named in the refusal), and a cap/fs import on the orchestration seam is refused by
// vetting.
func Example_codeModeOrchestration() {
	root, cfg, err := exampleDirs()
	defer os.RemoveAll(root)
	if err != nil {
		fmt.Println(err)
		return
	}
	var p *plane.Plane
	// A scripted child: it writes the result its contract asks for
	// through the registry, as itself, and reports.
	cfg.Runner = agent.RunnerFunc(func(ctx context.Context, t agent.Turn) (string, error) {
		value, _ := json.Marshal(map[string]any{"words": len(t.Prompt)})
		args, _ := json.Marshal(map[string]any{"key": agent.ResultNoteKey, "value": json.RawMessage(value)})
		if out := p.Registry.Dispatch(ctx, p.CallFor(t.Strand, t.Operation).At(t.Operation, "step-1", 0), agent.NoteToolName, args); out.IsError {
			return "", errors.New(out.Text)
		}
		return "counted", nil
	})
	cfg.Families = plane.FamilyAgents | plane.FamilyCodeMode
	if p, err = plane.New(cfg); err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	ctx := context.Background()
	const fanOut = `package main

import (
	"context"
	"fmt"
	"time"

	"cap/strand"
)

func main() {
	items := []strand.Item{{Purpose: "count a", Prompt: "ab"}, {Purpose: "count b", Prompt: "abcd"}}
	contract := ` + "`" + `{"type":"object","properties":{"words":{"type":"integer"}}}` + "`" + `
	rs, err := strand.Map(context.Background(), items, strand.Options{Result: contract}, 30*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range rs {
		fmt.Println(r.Item.Purpose, r.Outcome.State, r.Outcome.ResultKind, string(r.Outcome.Result), r.Err)
	}
}
`
	out := codeMode(ctx, p, p.Call, "step-1", map[string]any{"seam": codemode.OrchestrationSeamName, "program": fanOut})
	if d, ok := out.Details.(codemode.Details); ok && d.Run != nil {
		fmt.Print(out.Text[:int(d.StdoutBytes)])
	} else {
		fmt.Println(out.Code, out.Text)
	}
	out = codeMode(ctx, p, p.Call, "step-2", map[string]any{"seam": "orchestrate", "program": fanOut})
	fmt.Println(out.Code)
	out = codeMode(ctx, p, p.Call, "step-3", map[string]any{"seam": codemode.OrchestrationSeamName,
		"program": "package main\n\nimport \"cap/fs\"\n\nfunc main() { _ = fs.Read }\n"})
	fmt.Println(out.Code)
	// Output:
	// count a completed valid {"words":2} <nil>
	// count b completed valid {"words":4} <nil>
	// invalid_arguments
	// vet_refused
}

// One program that both directs sub-agents and works on the files runs
// on codemode.CombinedSeam, which the host names in Config.CodeModeSeams:
// here it asks a sub-agent for a count and writes what came back.
func Example_codeModeCombined() {
	root, cfg, err := exampleDirs()
	defer os.RemoveAll(root)
	if err != nil {
		fmt.Println(err)
		return
	}
	var p *plane.Plane
	cfg.Runner = agent.RunnerFunc(func(ctx context.Context, t agent.Turn) (string, error) {
		value, _ := json.Marshal(map[string]any{"words": len(t.Prompt)})
		args, _ := json.Marshal(map[string]any{"key": agent.ResultNoteKey, "value": json.RawMessage(value)})
		if out := p.Registry.Dispatch(ctx, p.CallFor(t.Strand, t.Operation).At(t.Operation, "step-1", 0), agent.NoteToolName, args); out.IsError {
			return "", errors.New(out.Text)
		}
		return "counted", nil
	})
	cfg.Families = plane.FamilyFiles | plane.FamilyAgents | plane.FamilyCodeMode
	cfg.CodeModeSeams = []codemode.Seam{codemode.CombinedSeam()}
	if p, err = plane.New(cfg); err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	fmt.Println("seams:", p.CodeMode.Seams()[0].Name)
	const countAndWrite = `package main

import (
	"context"
	"fmt"
	"time"

	"cap/fs"
	"cap/strand"
)

func main() {
	ctx := context.Background()
	contract := ` + "`" + `{"type":"object","properties":{"words":{"type":"integer"}}}` + "`" + `
	rs, err := strand.Map(ctx, []strand.Item{{Purpose: "count", Prompt: "abc"}}, strand.Options{Result: contract}, 30*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := fs.Write(ctx, "count.json", rs[0].Outcome.Result); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("wrote", string(rs[0].Outcome.Result))
}
`
	out := codeMode(context.Background(), p, p.Call, "step-1", map[string]any{"program": countAndWrite})
	if d, ok := out.Details.(codemode.Details); ok && d.Run != nil {
		fmt.Print(out.Text[:int(d.StdoutBytes)])
	} else {
		fmt.Println(out.Code, out.Text)
	}
	b, err := os.ReadFile(filepath.Join(cfg.Workspace, "count.json"))
	fmt.Printf("%s %v\n", b, err)
	// Output:
	// seams: workspace+orchestration
	// wrote {"words":3}
	// {"words":3} <nil>
}
