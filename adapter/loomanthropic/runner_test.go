package loomanthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/agentloom/loom/adapter/loomanthropic"
	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/internal/adaptertest"
	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

var handleRE = regexp.MustCompile(`handle: (\S+)`)

// A scripted parent spawns a child through the SDK's tool runner; the
// Runner runs the child with the SDK's tool runner; the child calls a
// tool; the parent waits and reads the child's report.
func TestSpawnedChildRunsInTheSDKsToolRunner(t *testing.T) {
	runner := &loomanthropic.Runner{Model: "test-model"}
	p := adaptertest.NewPlane(t, plane.Config{Families: plane.FamilyFiles | plane.FamilyAgents, Runner: runner})
	var probe adaptertest.Recorder
	if err := p.Registry.Register(probe.Tool()); err != nil {
		t.Fatal(err)
	}
	var parentSaw string
	var childTools []string
	api := newFakeAPI(t, map[string]replyFunc{
		"parent prompt": func(x exchange) ([]map[string]any, error) {
			switch x.n {
			case 0:
				return []map[string]any{use("p1", "agent_spawn", map[string]any{"purpose": "probe", "prompt": "child prompt", "tools": []string{"probe"}})}, nil
			case 1:
				r, err := x.result("p1")
				if err != nil {
					return nil, err
				}
				h := handleRE.FindStringSubmatch(r.text)
				if h == nil {
					return nil, fmt.Errorf("no handle in %+v", r)
				}
				return []map[string]any{use("p2", "agent_wait", map[string]any{"handles": []string{h[1]}})}, nil
			default:
				r, err := x.result("p2")
				parentSaw = r.text
				return []map[string]any{text("parent done")}, err
			}
		},
		"child prompt": func(x exchange) ([]map[string]any, error) {
			if !strings.Contains(x.system, "probe") {
				return nil, fmt.Errorf("the child's system prompt is not its notice: %q", x.system)
			}
			if x.n == 0 {
				childTools = x.tools
				return []map[string]any{use("k1", "probe", map[string]any{})}, nil
			}
			r, err := x.result("k1")
			return []map[string]any{text("child report: " + r.text)}, err
		},
	})
	runner.Client = api.client(t)
	runner.Plane = p

	set := loomanthropic.NewToolset(p.Dispatcher(), p.CallFor(plane.DefaultStrand, "op-1"))
	tools, err := set.Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	main := runner.Client.Beta.Messages.NewToolRunner(tools, anthropic.BetaToolRunnerParams{BetaMessageNewParams: anthropic.BetaMessageNewParams{
		Model: "test-model", MaxTokens: 100, Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("parent prompt"))}}})
	set.Bind(main)
	out, err := main.RunToCompletion(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if out.Content[0].Text != "parent done" {
		t.Errorf("parent answered %+v", out.Content)
	}
	if probed := probe.Calls(); len(probed) != 1 || !strings.HasPrefix(probed[0], "sub:main/probe-") || !strings.HasSuffix(probed[0], "@step-1/0") {
		t.Errorf("probe ran as %v, want once by the child at step-1/0", probed)
	}
	if !strings.Contains(parentSaw, "report:\nchild report: probe ran for sub:main/probe-") {
		t.Errorf("the parent's wait read %q", parentSaw)
	}
	if !slices.Contains(childTools, "probe") || slices.Contains(childTools, "fs_write") || slices.Contains(childTools, "agent_spawn") {
		t.Errorf("the child was offered %v", childTools)
	}
}

// A message sent to a running child joins its conversation after the
// results of the calls before it, and an outcome asking to end the run
// (Terminate) ends it, with no request after its batch, its text the
// report.
func TestRunnerDrainsInboxAndEndsOnTerminate(t *testing.T) {
	p := adaptertest.NewPlane(t, plane.Config{Families: plane.FamilyFiles})
	if err := p.Registry.Register(tool.Tool{Name: "finish", Schema: objectSchema,
		Run: func(context.Context, *tool.Call, json.RawMessage) tool.Outcome {
			return tool.Outcome{Text: "final words", Terminate: true}
		}}); err != nil {
		t.Fatal(err)
	}
	api := newFakeAPI(t, map[string]replyFunc{"work": func(x exchange) ([]map[string]any, error) {
		switch x.n {
		case 0:
			return []map[string]any{use("w1", "fs_write", map[string]any{"path": "a.txt", "content": "a\n"})}, nil
		case 1:
			if _, err := x.result("w1"); err != nil {
				return nil, err
			}
			// The reply, its results, then the message sent meanwhile.
			var order []string
			for _, m := range x.messages[len(x.messages)-3:] {
				order = append(order, m.Role+":"+m.Content[0].Type)
			}
			if want := []string{"assistant:tool_use", "user:tool_result", "user:text"}; !slices.Equal(order, want) || !slices.Equal(x.texts, []string{"hello from parent"}) {
				return nil, fmt.Errorf("the conversation ends %v with texts %q, want %v", order, x.texts, want)
			}
			return []map[string]any{use("f1", "finish", map[string]any{})}, nil
		default:
			return nil, fmt.Errorf("a request after the run was ended")
		}
	}})
	runner := &loomanthropic.Runner{Plane: p, Client: api.client(t), Model: "test-model"}
	inbox := []string{"hello from parent"}
	report, err := runner.Run(t.Context(), agent.Turn{Strand: plane.DefaultStrand, Operation: "op-2", Prompt: "work",
		Tools: []string{"fs_write", "finish"}, Inbox: func() []string { in := inbox; inbox = nil; return in }})
	if err != nil || report != "final words" {
		t.Errorf("Run = %q, %v; want the terminating outcome's text", report, err)
	}
}

// Every tool of the default plane reaches the API with the registry's
// own schema as its input_schema.
func TestToolDefinitionIsTheRegistrySchema(t *testing.T) {
	p := adaptertest.NewPlane(t, plane.Config{})
	var sent []wireTool
	api := newFakeAPI(t, map[string]replyFunc{"hi": func(x exchange) ([]map[string]any, error) {
		return []map[string]any{text("hello")}, nil
	}})
	// The fake keeps what it was sent; the first request carries the tools.
	set := loomanthropic.NewToolset(p.Dispatcher(), p.CallFor(plane.DefaultStrand, "op-1"))
	tools, err := set.Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	client := api.client(t)
	runner := client.Beta.Messages.NewToolRunner(tools, anthropic.BetaToolRunnerParams{BetaMessageNewParams: anthropic.BetaMessageNewParams{
		Model: "test-model", MaxTokens: 100, Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("hi"))}}})
	if _, err := runner.RunToCompletion(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, conv := range api.history {
		sent = conv.Tools
	}
	reg := p.Registry.Registered()
	if len(sent) != len(reg) || len(sent) < 10 {
		t.Fatalf("%d tools sent for %d registered", len(sent), len(reg))
	}
	for i, w := range sent {
		var got, want any
		if err := json.Unmarshal(w.InputSchema, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(reg[i].Schema, &want); err != nil {
			t.Fatal(err)
		}
		if w.Name != reg[i].Name || w.Description != reg[i].Description {
			t.Errorf("tool %d is %q, want %q", i, w.Name, reg[i].Name)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s input_schema (-registry +sent):\n%s", w.Name, d)
		}
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
			var replies atomic.Int32
			api := newFakeAPI(t, map[string]replyFunc{"work": func(x exchange) ([]map[string]any, error) {
				replies.Add(1)
				if x.n+1 >= tt.AnswerAt {
					return []map[string]any{text("done")}, nil
				}
				return []map[string]any{use(fmt.Sprintf("l%d", x.n), "probe", map[string]any{})}, nil
			}})
			runner := &loomanthropic.Runner{Plane: p, Client: api.client(t), Model: "test-model", MaxTurns: adaptertest.TurnLimit}
			_, err := runner.Run(t.Context(), agent.Turn{Strand: plane.DefaultStrand, Operation: "op-1", Prompt: "work", Tools: []string{"probe"}})
			tt.Check(t, err, int(replies.Load()), len(probe.Calls()))
		})
	}
}
