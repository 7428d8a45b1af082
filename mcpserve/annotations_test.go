package mcpserve

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/tool"
)

// TestAnnotationsFollowDeclarations: every family's tools are listed
// with a title, readOnlyHint exactly for the tools that read and change
// nothing, and idempotentHint for those and the replay-safe ones.
func TestAnnotationsFollowDeclarations(t *testing.T) {
	plane := job.NewPlane(nil, job.Options{})
	t.Cleanup(func() { plane.Close(context.Background()) })
	agency := agent.NewAgency(agent.RunnerFunc(func(context.Context, agent.Turn) (string, error) { return "", nil }),
		agent.Options{MaxWait: time.Minute})
	t.Cleanup(func() { agency.Close() })
	tools := append(tool.FileTools(), tool.GrepTool(), job.BashTool(plane))
	tools = append(tools, job.Tools(plane)...)
	tools = append(tools, agent.Tools(agency)...)
	tools = append(tools, history.SearchTool(nil, nil), history.RememberTool(nil, nil))
	srv := newServer(t, nil, nil, tools...)
	res, err := connect(t, srv, nil).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	readOnly := []string{"fs_read", "grep", "job_poll", "history_search", "agent_roster", "agent_wait", "agent_notes"}
	replay := map[string]tool.ReplaySafety{}
	for _, tl := range tools {
		replay[tl.Name] = tl.Replay
	}
	if len(res.Tools) != len(tools) {
		t.Fatalf("listed %d tools of %d", len(res.Tools), len(tools))
	}
	for _, lt := range res.Tools {
		a := lt.Annotations
		if a == nil || lt.Title == "" || a.Title != lt.Title {
			t.Errorf("%s: title %q, annotations %+v", lt.Name, lt.Title, a)
			continue
		}
		if want := slices.Contains(readOnly, lt.Name); a.ReadOnlyHint != want {
			t.Errorf("%s: readOnlyHint %v, want %v", lt.Name, a.ReadOnlyHint, want)
		}
		if want := a.ReadOnlyHint || replay[lt.Name] == tool.ReplaySafe; a.IdempotentHint != want {
			t.Errorf("%s: idempotentHint %v, want %v", lt.Name, a.IdempotentHint, want)
		}
		if a.DestructiveHint != nil {
			t.Errorf("%s: destructiveHint stated", lt.Name)
		}
	}
	// A tool without a title is listed under its name, spaced.
	if got := title(tool.Tool{Name: "code_mode"}); got != "Code mode" {
		t.Errorf("title of code_mode = %q", got)
	}
}
