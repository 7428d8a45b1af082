package loomopenai_test

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

	"github.com/agentloom/loom/adapter/loomopenai"
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

// TestAgentRunsThePlane runs a scripted parent model over the plane's
// file and agent tools: an Exclusive write, an error outcome, an unknown
// tool, an image, then a child spawned through agent_spawn that runs its
// own Responses loop over the one tool it holds and reports back.
func TestAgentRunsThePlane(t *testing.T) {
	var pngData []byte
	var handle string
	parent := []step{
		func(t *testing.T, x exchange) []map[string]any {
			if !slices.Contains(x.toolNames(), "fs_write") || !slices.Contains(x.toolNames(), agent.SpawnToolName) {
				t.Errorf("the parent is offered %v", x.toolNames())
			}
			for _, tl := range x.req.Tools {
				var schema struct{ Type string }
				if tl.Type != "function" || tl.Description == "" || tl.Strict == nil || *tl.Strict ||
					json.Unmarshal(tl.Parameters, &schema) != nil || schema.Type != "object" {
					t.Errorf("tool %s: type %q, strict %v, parameters %s", tl.Name, tl.Type, tl.Strict, tl.Parameters)
				}
			}
			if x.req.Instructions != "You are the parent." {
				t.Errorf("instructions %q", x.req.Instructions)
			}
			return []map[string]any{say("Writing."),
				call("w1", "fs_write", map[string]any{"path": "notes/a.txt", "content": "hello\nworld\n"}),
				call("r1", "fs_read", map[string]any{"path": "missing.txt"}),
				call("u1", "no_such_tool", map[string]any{}),
				call("i1", "fs_read", map[string]any{"path": "pixel.png"})}
		},
		func(t *testing.T, x exchange) []map[string]any {
			x.expect(t, "w1", "", "notes/a.txt")
			x.expect(t, "r1", "error "+string(tool.CodeNotFound)+": ", "missing.txt")
			x.expect(t, "u1", "error "+string(tool.CodeUnknownTool)+": ", "no_such_tool")
			if o := x.outputs["i1"]; len(o.images) != 1 || o.images[0] != "data:image/png;base64,"+base64.StdEncoding.EncodeToString(pngData) {
				t.Errorf("image output: %+v", o)
			}
			return []map[string]any{call("s1", agent.SpawnToolName, map[string]any{"purpose": "check the file", "prompt": childPrompt, "tools": []string{"fs_read"}})}
		},
		func(t *testing.T, x exchange) []map[string]any {
			sp := x.expect(t, "s1", "")
			handle = strings.TrimRight(regexp.MustCompile(`sub:main/\S+#run-1`).FindString(sp.text), ".,;)\"'")
			return []map[string]any{call("a1", agent.WaitToolName, map[string]any{"handles": []string{handle}, "wait_ms": 60000})}
		},
		func(t *testing.T, x exchange) []map[string]any {
			x.expect(t, "a1", "", childReport)
			return []map[string]any{say(finalAnswer)}
		},
	}
	child := []step{
		func(t *testing.T, x exchange) []map[string]any {
			if !strings.Contains(x.req.Instructions, "You are sub-agent sub:main/") {
				t.Errorf("the child's instructions are not its notice: %q", x.req.Instructions)
			}
			if want := []string{agent.NoteToolName, agent.SendToolName, "fs_read"}; !slices.Equal(x.toolNames(), want) {
				t.Errorf("the child is offered %v, want %v", x.toolNames(), want)
			}
			// fs_write is not the child's: the governed registry refuses it.
			return []map[string]any{call("c1", "fs_read", map[string]any{"path": "notes/a.txt"}),
				call("c2", "fs_write", map[string]any{"path": "escaped.txt", "content": "x"})}
		},
		func(t *testing.T, x exchange) []map[string]any {
			x.expect(t, "c1", "", "|world")
			x.expect(t, "c2", "error "+string(tool.CodeToolNotHeld)+": ")
			return []map[string]any{say(childReport)}
		},
	}
	a := &loomopenai.Runner{Client: newServer(t, map[string][]step{task: parent, childPrompt: child}), Model: "gpt-test"}
	pngData = adaptertest.Pixel()
	p := adaptertest.NewPlane(t, plane.Config{Families: plane.FamilyFiles | plane.FamilyAgents, Runner: a},
		adaptertest.File{Name: "pixel.png", Data: pngData})
	a.Plane = p
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
			reply := func(t *testing.T, x exchange) []map[string]any {
				n := int(replies.Add(1))
				if n >= tt.AnswerAt {
					return []map[string]any{say(finalAnswer)}
				}
				return []map[string]any{call(fmt.Sprintf("l%d", n), "probe", map[string]any{})}
			}
			a := &loomopenai.Runner{Client: newServer(t, map[string][]step{task: {reply, reply, reply}}), Model: "gpt-test", MaxTurns: adaptertest.TurnLimit}
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
