package codemode_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/codemode"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/tool"
)

// A host that drives the engine itself, without the code_mode tool or
// package plane: New over a registry (whose tools authorize the
// capabilities) and a broker, then Execute one Request on a Call's
// authority. The error, when there is one, is the refusal of one stage
// (errors.As finds its type); Execution.Widening says how the declared
// permissions came out whatever the error.
func ExampleEngine_Execute() {
	root, err := os.MkdirTemp("/var/tmp", "loom-codemode-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(root)
	ws := filepath.Join(root, "ws")
	os.Mkdir(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module example.com/m\n"), 0o644)

	b := broker.New(broker.Options{})
	defer b.Close()
	reg, err := tool.NewRegistry(tool.FileTools()...)
	if err != nil {
		fmt.Println(err)
		return
	}
	e, err := codemode.New(codemode.Options{Registry: reg, Broker: b})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	defer e.Close(ctx)
	c := &tool.Call{Workspace: ws, Strand: "main", OpID: "op-1", StepID: "step-1", Broker: b}

	x, err := e.Execute(ctx, c, codemode.Request{Source: []byte(`package main

import (
	"context"
	"fmt"

	"cap/fs"
)

func main() {
	f, err := fs.Read(context.Background(), "go.mod")
	fmt.Println(f.Size, err)
}
`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(x.Run.Stdout)
	fmt.Println("exit", x.Run.Exit, "calls", x.Run.Record.Total, "grants", x.Widening.State)

	// Permissions beyond the session, with no escalation plane on the
	// Call (RaiseRefusal nil): nothing is asked and the program never
	// starts.
	outside := filepath.Join(root, "outside")
	x, err = e.Execute(ctx, c.At("op-1", "step-2", 0), codemode.Request{
		Source:      []byte("package main\n\nfunc main() {}\n"),
		Permissions: &codemode.Permissions{Permissions: job.Permissions{WritableRoots: []string{outside}}},
	})
	var ce *codemode.CapError
	if errors.As(err, &ce) {
		fmt.Println(ce.Code, "started:", x.Run != nil, "asked:", x.Widening.Asked)
	}
	// Output:
	// 21 <nil>
	// exit 0 calls 1 grants none
	// requirements_not_covered started: false asked: false
}

// An Engine with an Agency serves two seams: the workspace seam (the
// default) and the orchestration seam, whose programs direct sub-agents
// and import no package that reaches the disk, the network or a process.
// VetOn vets against one of them by name; a name it does not serve is a
// *CapError coded CodeUnknownSeam. Vetting only parses: nothing runs.
func ExampleEngine_VetOn() {
	b := broker.New(broker.Options{})
	defer b.Close()
	// No child runs here, so the Runner is never called.
	agency := agent.NewAgency(agent.RunnerFunc(func(context.Context, agent.Turn) (string, error) { return "", nil }), agent.Options{})
	defer agency.Close()
	reg, err := tool.NewRegistry(append(tool.FileTools(), agent.Tools(agency)...)...)
	if err != nil {
		fmt.Println(err)
		return
	}
	e, err := codemode.New(codemode.Options{Registry: reg, Broker: b, Agency: agency})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close(context.Background())
	for _, s := range e.Seams() {
		fmt.Println("serves", s.Name, s.Packages)
	}
	src := []byte("package main\n\nimport \"cap/fs\"\n\nfunc main() { _ = fs.Read }\n")
	if _, err := e.VetOn(src, codemode.WorkspaceSeamName); err == nil {
		fmt.Println("workspace: vetted")
	}
	_, err = e.VetOn(src, codemode.OrchestrationSeamName)
	var ve *codemode.VetError
	if errors.As(err, &ve) {
		fmt.Println("orchestration:", ve.Violations[0].Rule, ve.Violations[0].Construct)
	}
	_, err = e.VetOn(src, "orchestrate")
	var ce *codemode.CapError
	if errors.As(err, &ce) {
		fmt.Println("orchestrate:", ce.Code)
	}
	// Output:
	// serves workspace [cap/fs cap/search cap/kv cap/report cap/notes cap/execution]
	// serves orchestration [cap/strand cap/notes cap/report cap/execution]
	// workspace: vetted
	// orchestration: import_not_allowed import "cap/fs"
	// orchestrate: unknown_seam
}
