package job_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// A host runs a plane for the session and closes it at the end; bash
// starts jobs on it, and the job tools read, feed and stop them.
func ExampleNewPlane() {
	ws, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(ws)
	plane := job.NewPlane(broker.New(broker.Options{AllowUnconfined: true}), job.Options{})
	defer plane.Close(context.Background())

	owner := job.Owner{Strand: "main", OpID: "op1", StepID: "step1"}
	started, err := plane.Start(context.Background(), owner, job.Spec{
		Command: "echo hello from a job",
		Argv:    []string{"sh", "-c", "echo hello from a job"},
		Dir:     ws,
		Env:     map[string]string{"PATH": "/usr/bin:/bin"},
		Policy: sandbox.Policy{
			ReadableRoots: sandbox.SystemReadableRoots(),
			WritableRoots: []string{ws},
			EnvAllow:      []string{"PATH"},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	cur := job.Cursors{}
	for {
		p, err := plane.Poll(context.Background(), owner, started.ID, cur, time.Second)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Print(p.Stdout.Text)
		cur = p.Next
		if !p.State.Pending() {
			fmt.Println(p.State, p.Exit.ExitCode)
			return
		}
	}
	// Output:
	// hello from a job
	// exited 0
}

// The three tools are registered together, over the host's plane (or over
// NoPlane, which refuses every call in band).
func ExampleTools() {
	reg, err := tool.NewRegistry(job.Tools(job.NoPlane())...)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(reg.Names())
	out := reg.Dispatch(context.Background(), &tool.Call{Strand: "main"}, job.PollToolName, nil)
	fmt.Println(out.IsError, out.Code)
	// Output:
	// [job_kill job_poll job_send]
	// true no_job_plane
}

// A cursor travels to the model as one opaque token bound to its job.
func ExampleParseCursor() {
	token := job.Cursors{Stdout: 120, Stderr: 7}.Token("j1-ab12")
	cur, err := job.ParseCursor("j1-ab12", token)
	fmt.Println(cur, err)
	_, err = job.ParseCursor("j2-cd34", token)
	fmt.Println(err != nil)
	// Output:
	// {120 7} <nil>
	// true
}
