package loomgenkit_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/firebase/genkit/go/ai"

	"github.com/agentloom/loom/adapter/loomgenkit"
	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/internal/adaptertest"
	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

const (
	task        = "Write the note, look around, and delegate the check."
	childPrompt = "Child: read notes/a.txt and report its second line."
	childReport = "child-report: the second line is world"
	finalAnswer = "All done."
)

// TestAgentRunsThePlane runs a scripted parent model in Genkit's tool
// loop over the plane's file and agent tools: definitions with Loom's
// schemas, an Exclusive write, an error with its code, bad arguments and
// an unknown tool answered in band, an image, then a child spawned
// through agent_spawn that runs its own Generate over the one tool it
// holds and reports back.
func TestAgentRunsThePlane(t *testing.T) {
	var pngData []byte
	var fsReadSchema json.RawMessage
	parent := []step{
		func(t *testing.T, x exchange) []*ai.Part {
			names := x.toolNames()
			if !slices.Contains(names, "fs_write") || !slices.Contains(names, agent.SpawnToolName) || slices.Contains(names, loomgenkit.UnknownToolName) {
				t.Errorf("the parent is offered %v", names)
			}
			for _, d := range x.req.Tools {
				if d.Description == "" || d.InputSchema["type"] != "object" {
					t.Errorf("tool %s: description %q, schema %v", d.Name, d.Description, d.InputSchema)
				}
				if d.Name == "fs_read" {
					var want any
					json.Unmarshal(fsReadSchema, &want)
					if mustJSON(d.InputSchema) != mustJSON(want) {
						t.Errorf("fs_read's schema %s, want Loom's %s", mustJSON(d.InputSchema), fsReadSchema)
					}
				}
			}
			if x.system() != "You are the parent." {
				t.Errorf("system %q", x.system())
			}
			return []*ai.Part{ai.NewTextPart("Writing."),
				request("w1", "fs_write", map[string]any{"path": "notes/a.txt", "content": "hello\nworld\n"}),
				request("r1", "fs_read", map[string]any{"path": "missing.txt"}),
				request("b1", "fs_read", map[string]any{"path": 5}),
				request("u1", "no_such_tool", map[string]any{"x": 1}),
				request("i1", "fs_read", map[string]any{"path": "pixel.png"})}
		},
		func(t *testing.T, x exchange) []*ai.Part {
			x.output(t, "w1", "", "notes/a.txt")
			x.output(t, "r1", "error "+string(tool.CodeNotFound)+": ", "missing.txt")
			x.output(t, "b1", "error "+string(tool.CodeInvalidArguments)+": ")
			x.output(t, "u1", "error "+string(tool.CodeUnknownTool)+": ", "no_such_tool")
			// The model reads its call, and the answer, under the name it wrote.
			for _, m := range x.req.Messages {
				for _, p := range m.Content {
					if (p.ToolRequest != nil && p.ToolRequest.Ref == "u1" && p.ToolRequest.Name != "no_such_tool") ||
						(p.ToolResponse != nil && p.ToolResponse.Ref == "u1" && p.ToolResponse.Name != "no_such_tool") {
						t.Errorf("the unknown call reads as %s", mustJSON(p))
					}
				}
			}
			want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngData)
			if r := x.responses["i1"]; r == nil || len(r.Content) != 1 || !r.Content[0].IsMedia() || r.Content[0].ContentType != "image/png" || r.Content[0].Text != want {
				t.Errorf("image response: %s", mustJSON(r))
			}
			return []*ai.Part{request("s1", agent.SpawnToolName, map[string]any{"purpose": "check the file", "prompt": childPrompt, "tools": []string{"fs_read"}})}
		},
		func(t *testing.T, x exchange) []*ai.Part {
			handle := regexp.MustCompile(`sub:main/[^\s.,;)"']+#run-1`).FindString(x.output(t, "s1", ""))
			return []*ai.Part{request("a1", agent.WaitToolName, map[string]any{"handles": []string{handle}, "wait_ms": 60000})}
		},
		func(t *testing.T, x exchange) []*ai.Part {
			x.output(t, "a1", "", childReport)
			return []*ai.Part{ai.NewTextPart(finalAnswer)}
		},
	}
	child := []step{
		func(t *testing.T, x exchange) []*ai.Part {
			if !strings.Contains(x.system(), "You are sub-agent sub:main/") {
				t.Errorf("the child's system message is not its notice: %q", x.system())
			}
			if want := []string{agent.NoteToolName, agent.SendToolName, "fs_read"}; !slices.Equal(x.toolNames(), want) {
				t.Errorf("the child is offered %v, want %v", x.toolNames(), want)
			}
			// fs_write is not the child's: Loom refuses it in band.
			return []*ai.Part{request("c1", "fs_read", map[string]any{"path": "notes/a.txt"}),
				request("c2", "fs_write", map[string]any{"path": "escaped.txt", "content": "x"})}
		},
		func(t *testing.T, x exchange) []*ai.Part {
			x.output(t, "c1", "", "|world")
			x.output(t, "c2", "error "+string(tool.CodeToolNotHeld)+": ")
			return []*ai.Part{ai.NewTextPart(childReport)}
		},
	}
	g, model := newModel(t, map[string][]step{task: parent, childPrompt: child})
	a := &loomgenkit.Runner{Genkit: g, Model: model}
	pngData = adaptertest.Pixel()
	p := adaptertest.NewPlane(t, plane.Config{Families: plane.FamilyFiles | plane.FamilyAgents, Runner: a},
		adaptertest.File{Name: "pixel.png", Data: pngData})
	a.Plane = p
	if fr, ok := p.Registry.Lookup("fs_read"); ok {
		fsReadSchema = fr.Schema
	}
	answer, err := a.Run(context.Background(), agent.Turn{Strand: p.Call.Strand, Operation: "op-1", Notice: "You are the parent.", Prompt: task})
	if err != nil || answer != finalAnswer {
		t.Fatalf("run: %q, %v", answer, err)
	}
	if _, err := os.Stat(filepath.Join(p.Call.Workspace, "escaped.txt")); err == nil {
		t.Errorf("the child ran a tool it does not hold")
	}
}

// TestRunnerTurnLimit: a run whose model still calls tools in its last
// allowed reply ends with a *agent.TurnLimitError, coded turn_limit, and that
// reply's calls are not run; a model that answers in its last reply (the
// control) ends normally.
func TestRunnerTurnLimit(t *testing.T) {
	for _, tt := range adaptertest.TurnLimitCases {
		t.Run(tt.Name, func(t *testing.T) {
			var replies atomic.Int32
			reply := func(t *testing.T, x exchange) []*ai.Part {
				n := int(replies.Add(1))
				if n >= tt.AnswerAt {
					return []*ai.Part{ai.NewTextPart(finalAnswer)}
				}
				return []*ai.Part{request(fmt.Sprintf("l%d", n), "probe", map[string]any{})}
			}
			g, model := newModel(t, map[string][]step{task: {reply, reply, reply}})
			a := &loomgenkit.Runner{Genkit: g, Model: model, MaxTurns: adaptertest.TurnLimit}
			p := adaptertest.NewPlane(t, plane.Config{Families: plane.FamilyFiles | plane.FamilyAgents, Runner: a})
			a.Plane = p
			var probe adaptertest.Recorder
			if err := p.Registry.Register(probe.Tool()); err != nil {
				t.Fatal(err)
			}
			_, err := a.Run(context.Background(), agent.Turn{Strand: p.Call.Strand, Operation: "op-1", Prompt: task})
			tt.Check(t, err, int(replies.Load()), len(probe.Calls()))
		})
	}
}
