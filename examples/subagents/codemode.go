package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/codemode"
	"github.com/agentloom/loom/plane"
)

// runCodeMode plays the same review as run, as one code-mode program on
// the orchestration seam: codemode.RecipeFanOut (the sample the code_mode
// description shows) spawns the three reviewers with the result
// contract, joins them with one wait and emits a report. The children are
// the same scripted reviewers, calling agent_note through the plane's
// registry as themselves.
func runCodeMode(ctx context.Context, w io.Writer) error {
	root, err := os.MkdirTemp("/var/tmp", "loom-subagents-")
	if err != nil {
		root, err = os.MkdirTemp("", "loom-subagents-")
	}
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return err
	}
	var p *plane.Plane
	runner := agent.RunnerFunc(func(ctx context.Context, t agent.Turn) (string, error) {
		area := strings.TrimPrefix(t.Prompt, "Review ")
		issues := len(area) % 3
		var result any = map[string]any{"area": area, "issues": issues}
		if area == "billing" {
			result = map[string]any{"area": area, "issues": "two"} // breaks the contract
		}
		value, _ := json.Marshal(result)
		args, _ := json.Marshal(map[string]any{"key": agent.ResultNoteKey, "value": json.RawMessage(value)})
		if out := p.Registry.Dispatch(ctx, p.CallFor(t.Strand, t.Operation).At(t.Operation, "step-1", 0), agent.NoteToolName, args); out.IsError {
			return "", fmt.Errorf("child result: %s", out.Text)
		}
		return fmt.Sprintf("Reviewed %s: found %d issue(s).", area, issues), nil
	})
	p, err = plane.New(plane.Config{Workspace: ws, Families: plane.FamilyAgents | plane.FamilyCodeMode, Runner: runner,
		BlobDir: filepath.Join(root, "blobs"), Scratch: filepath.Join(root, "scratch")})
	if err != nil {
		return err
	}
	defer p.Close()
	fmt.Fprintf(w, "> %s on seam %s:\n%s\n", codemode.ToolName, codemode.OrchestrationSeamName, codemode.RecipeFanOut)
	raw, _ := json.Marshal(map[string]any{"program": codemode.RecipeFanOut, "seam": codemode.OrchestrationSeamName})
	out := p.Registry.Dispatch(ctx, p.Call.At("op-2", "step-1", 0), codemode.ToolName, raw)
	status := "ok"
	if out.IsError {
		status = "error"
	}
	fmt.Fprintf(w, "[%s]\n%s\n", status, out.Text)
	if out.IsError {
		return fmt.Errorf("the fan-out program failed: %s", out.Code)
	}
	return nil
}
