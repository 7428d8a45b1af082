package loomeino_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"github.com/google/go-cmp/cmp"

	"github.com/agentloom/loom/adapter/loomeino"
	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/internal/adaptertest"
	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

var handleRE = regexp.MustCompile(`handle: (\S+)`)

// A scripted parent spawns a child through eino; the Runner runs the
// child with eino's ReAct agent; the child calls a tool; the parent waits
// and reads the child's report.
func TestSpawnedChildRunsInEino(t *testing.T) {
	runner := &loomeino.Runner{}
	p := adaptertest.NewPlane(t, plane.Config{Families: plane.FamilyFiles | plane.FamilyAgents, Runner: runner})
	var probe adaptertest.Recorder
	if err := p.Registry.Register(probe.Tool()); err != nil {
		t.Fatal(err)
	}
	var parentSaw string
	m := newScripted(map[string]turnFunc{
		"parent prompt": func(msgs []*schema.Message, n int) (*schema.Message, error) {
			switch n {
			case 0:
				return calls("p1", "agent_spawn", mustJSON(map[string]any{"purpose": "probe", "prompt": "child prompt", "tools": []string{"probe"}})), nil
			case 1:
				h := handleRE.FindStringSubmatch(resultText(toolResults(msgs)["p1-0"]))
				if h == nil {
					return nil, fmt.Errorf("no handle in %q", resultText(toolResults(msgs)["p1-0"]))
				}
				return calls("p2", "agent_wait", mustJSON(map[string]any{"handles": []string{h[1]}})), nil
			default:
				parentSaw = resultText(toolResults(msgs)["p2-0"])
				return schema.AssistantMessage("parent done", nil), nil
			}
		},
		"child prompt": func(msgs []*schema.Message, n int) (*schema.Message, error) {
			if msgs[0].Role != schema.System || !strings.Contains(msgs[0].Content, "probe") {
				return nil, fmt.Errorf("the child's first message is not its notice: %+v", msgs[0])
			}
			if n == 0 {
				return calls("k1", "probe", `{}`), nil
			}
			return schema.AssistantMessage("child report: "+resultText(toolResults(msgs)["k1-0"]), nil), nil
		},
	})
	runner.Plane = p
	runner.Model = func(context.Context, string) (model.ToolCallingChatModel, error) { return m, nil }

	set := loomeino.NewToolset(p.Dispatcher(), p.CallFor(plane.DefaultStrand, "op-1"))
	a, err := react.NewAgent(t.Context(), &react.AgentConfig{ToolCallingModel: set.Model(m), ToolsConfig: set.Config(t.Context())})
	if err != nil {
		t.Fatal(err)
	}
	out, err := a.Generate(t.Context(), []*schema.Message{schema.UserMessage("parent prompt")})
	if err != nil {
		t.Fatal(err)
	}
	if out.Content != "parent done" {
		t.Errorf("parent answered %q", out.Content)
	}
	if probed := probe.Calls(); len(probed) != 1 || !strings.HasPrefix(probed[0], "sub:main/probe-") || !strings.HasSuffix(probed[0], "@step-1/0") {
		t.Errorf("probe ran as %v, want once by the child at step-1/0", probed)
	}
	if !strings.Contains(parentSaw, "report:\nchild report: probe ran for sub:main/probe-") {
		t.Errorf("the parent's wait read %q", parentSaw)
	}
	m.mu.Lock()
	childTools := m.offered["child prompt"]
	m.mu.Unlock()
	if !slices.Contains(childTools, "probe") || slices.Contains(childTools, "fs_write") || slices.Contains(childTools, "agent_spawn") {
		t.Errorf("the child was offered %v", childTools)
	}
}

// Every tool of the default plane reaches eino with the registry's own
// schema.
func TestToolInfoIsTheRegistrySchema(t *testing.T) {
	p := adaptertest.NewPlane(t, plane.Config{})
	set := loomeino.NewToolset(p.Dispatcher(), p.CallFor(plane.DefaultStrand, "op-1"))
	tools := set.Tools(t.Context())
	if len(tools) != len(p.Registry.Registered()) || len(tools) < 10 {
		t.Fatalf("%d tools for %d registered", len(tools), len(p.Registry.Registered()))
	}
	for i, bt := range tools {
		def := p.Registry.Registered()[i]
		info, err := bt.Info(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		js, err := info.ParamsOneOf.ToJSONSchema()
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(js)
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(def.Schema, &b); err != nil {
			t.Fatal(err)
		}
		if info.Name != def.Name || info.Desc != def.Description {
			t.Errorf("tool %d is %q %q, want %q", i, info.Name, info.Desc, def.Name)
		}
		if d := cmp.Diff(b, a); d != "" {
			t.Errorf("%s schema (-registry +eino):\n%s", def.Name, d)
		}
	}
}

// A message sent to a running child joins its conversation before its
// next model turn, and an outcome asking to end the run (Terminate) ends
// it with that outcome's text as the report.
func TestRunnerDrainsInboxAndEndsOnTerminate(t *testing.T) {
	runner := &loomeino.Runner{}
	p := adaptertest.NewPlane(t, plane.Config{Families: plane.FamilyFiles})
	if err := p.Registry.Register(tool.Tool{Name: "finish", Schema: objectSchema,
		Run: func(context.Context, *tool.Call, json.RawMessage) tool.Outcome {
			return tool.Outcome{Text: "final words", Terminate: true}
		}}); err != nil {
		t.Fatal(err)
	}
	m := newScripted(map[string]turnFunc{"work": func(msgs []*schema.Message, n int) (*schema.Message, error) {
		if n > 0 {
			return nil, fmt.Errorf("a model turn after the run was ended")
		}
		if last := msgs[len(msgs)-1]; last.Role != schema.User || last.Content != "hello from parent" {
			return nil, fmt.Errorf("the inbox was not drained before the turn: %+v", last)
		}
		return calls("c", "finish", `{}`), nil
	}})
	runner.Plane = p
	runner.Model = func(context.Context, string) (model.ToolCallingChatModel, error) { return m, nil }
	inbox := []string{"hello from parent"}
	report, err := runner.Run(t.Context(), agent.Turn{Strand: plane.DefaultStrand, Operation: "op-2", Prompt: "work",
		Tools: []string{"finish"}, Inbox: func() []string { in := inbox; inbox = nil; return in }})
	if err != nil || report != "final words" {
		t.Errorf("Run = %q, %v; want the terminating outcome's text", report, err)
	}
}

// A run whose model still calls tools in its last allowed reply ends with
// a *agent.TurnLimitError, coded turn_limit, and that reply's calls are not run;
// a model that answers in its last reply (the control) ends normally.
func TestRunnerTurnLimit(t *testing.T) {
	for _, tt := range adaptertest.TurnLimitCases {
		t.Run(tt.Name, func(t *testing.T) {
			p := adaptertest.NewPlane(t, plane.Config{Families: plane.FamilyFiles})
			var probe adaptertest.Recorder
			if err := p.Registry.Register(probe.Tool()); err != nil {
				t.Fatal(err)
			}
			replies := 0
			m := newScripted(map[string]turnFunc{"work": func(_ []*schema.Message, n int) (*schema.Message, error) {
				replies++
				if n+1 >= tt.AnswerAt {
					return schema.AssistantMessage("done", nil), nil
				}
				return calls(fmt.Sprintf("c%d", n), "probe", `{}`), nil
			}})
			runner := &loomeino.Runner{Plane: p, MaxTurns: adaptertest.TurnLimit,
				Model: func(context.Context, string) (model.ToolCallingChatModel, error) { return m, nil }}
			_, err := runner.Run(t.Context(), agent.Turn{Strand: plane.DefaultStrand, Operation: "op-1", Prompt: "work", Tools: []string{"probe"}})
			tt.Check(t, err, replies, len(probe.Calls()))
		})
	}
}
