package loomanthropic_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/agentloom/loom/adapter/loomanthropic"
	"github.com/agentloom/loom/internal/adaptertest"
	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

var objectSchema = json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)

// naiveTool is what the adapter must not be: a tool that dispatches
// through the registry alone, bypassing the plane's Fence.
type naiveTool struct {
	reg  *tool.Registry
	name string
}

func (n naiveTool) Name() string        { return n.name }
func (n naiveTool) Description() string { return n.name }
func (n naiveTool) InputSchema() anthropic.BetaToolInputSchemaParam {
	return anthropic.BetaToolInputSchemaParam{}
}
func (n naiveTool) Execute(ctx context.Context, input json.RawMessage) ([]anthropic.BetaToolResultBlockParamContentUnion, error) {
	o := n.reg.Dispatch(ctx, &tool.Call{Strand: "main"}, n.name, input)
	return []anthropic.BetaToolResultBlockParamContentUnion{{OfText: &anthropic.BetaTextBlockParam{Text: o.Text}}}, nil
}

// fenceRun has the SDK's tool runner run, in a synctest bubble, two
// turns: an Exclusive call between two Concurrent ones, then the same
// calls again, with the tools tools makes; the runner executes each
// turn's calls in parallel. It returns what the probes saw.
func fenceRun(t *testing.T, tools func(d plane.Dispatcher, c *tool.Call) (*loomanthropic.Toolset, []anthropic.BetaTool)) *adaptertest.Probes {
	p := adaptertest.NewProbes(3)
	synctest.Test(t, func(t *testing.T) {
		d := plane.Dispatcher{Registry: p.Registry(t), Fence: &plane.Fence{}}
		set, list := tools(d, &tool.Call{Strand: "main", OpID: "op-1"})
		api := newFakeAPI(t, map[string]replyFunc{"go": func(x exchange) ([]map[string]any, error) {
			if x.n < 2 {
				key := func(k string) map[string]any { return map[string]any{"key": fmt.Sprint(k, x.n)} }
				return []map[string]any{use(fmt.Sprint("a", x.n), "shared", key("a")), use(fmt.Sprint("e", x.n), "alone", key("e")),
					use(fmt.Sprint("b", x.n), "shared", key("b"))}, nil
			}
			return []map[string]any{text("finished")}, nil
		}})
		client := api.memoryClient()
		runner := client.Beta.Messages.NewToolRunner(list, anthropic.BetaToolRunnerParams{BetaMessageNewParams: anthropic.BetaMessageNewParams{
			Model: "test-model", MaxTokens: 100, Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("go"))}}})
		if set != nil {
			set.Bind(runner)
		}
		msg, err := runner.RunToCompletion(t.Context())
		if err != nil || msg.Content[0].Text != "finished" {
			t.Fatalf("RunToCompletion: %v, %v", msg, err)
		}
	})
	return p
}

func TestExclusiveCallRunsAloneInTheSDKsParallelToolRunner(t *testing.T) {
	p := fenceRun(t, func(d plane.Dispatcher, c *tool.Call) (*loomanthropic.Toolset, []anthropic.BetaTool) {
		set := loomanthropic.NewToolset(d, c)
		tools, err := set.Tools(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return set, tools
	})
	if o := p.Overlaps(); len(o) > 0 {
		t.Errorf("calls ran beside the Exclusive call: %v", o)
	}
	want := map[string]string{
		"a0": "op-1/step-1/0", "e0": "op-1/step-1/1", "b0": "op-1/step-1/2",
		"a1": "op-1/step-2/0", "e1": "op-1/step-2/1", "b1": "op-1/step-2/2",
	}
	if got := p.Coords(); !maps.Equal(got, want) {
		t.Errorf("calls dispatched at %v, want %v", got, want)
	}
}

// The control: the same turns through tools that bypass DispatchOne run
// the Exclusive call beside the others, so the test above can fail.
func TestNaiveToolsRunExclusiveCallBesideOthers(t *testing.T) {
	p := fenceRun(t, func(d plane.Dispatcher, c *tool.Call) (*loomanthropic.Toolset, []anthropic.BetaTool) {
		var list []anthropic.BetaTool
		for _, n := range d.Registry.Names() {
			list = append(list, naiveTool{reg: d.Registry, name: n})
		}
		return nil, list
	})
	if len(p.Overlaps()) == 0 {
		t.Errorf("the naive tools kept the Exclusive call alone; the fence test could not fail")
	}
}

// Two calls alike in name and input take the two indexes of their turn;
// an unbound toolset makes each call a step of its own.
func TestCoordinates(t *testing.T) {
	for _, bound := range []bool{true, false} {
		var mu sync.Mutex
		var sites []string
		reg, err := tool.NewRegistry(tool.Tool{Name: "same", Schema: objectSchema, Run: func(_ context.Context, c *tool.Call, _ json.RawMessage) tool.Outcome {
			mu.Lock()
			sites = append(sites, c.StepID+"/"+fmt.Sprint(c.SourceIndex))
			mu.Unlock()
			return tool.Success("ok")
		}})
		if err != nil {
			t.Fatal(err)
		}
		set := loomanthropic.NewToolset(plane.Dispatcher{Registry: reg, Fence: &plane.Fence{}}, &tool.Call{Strand: "main", OpID: "op-1"})
		tools, _ := set.Tools(t.Context())
		api := newFakeAPI(t, map[string]replyFunc{"go": func(x exchange) ([]map[string]any, error) {
			if x.n == 0 {
				return []map[string]any{text("twice"), use("s0", "same", map[string]any{}), use("s1", "same", map[string]any{})}, nil
			}
			return []map[string]any{text("done")}, nil
		}})
		client := api.client(t)
		runner := client.Beta.Messages.NewToolRunner(tools, anthropic.BetaToolRunnerParams{BetaMessageNewParams: anthropic.BetaMessageNewParams{
			Model: "test-model", MaxTokens: 100, Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("go"))}}})
		if bound {
			set.Bind(runner)
		}
		if _, err := runner.RunToCompletion(t.Context()); err != nil {
			t.Fatal(err)
		}
		slices.Sort(sites)
		want := []string{"step-1/0", "step-1/1"}
		if !bound {
			want = []string{"call-1/0", "call-2/0"}
		}
		if !slices.Equal(sites, want) {
			t.Errorf("bound %v: calls at %v, want %v", bound, sites, want)
		}
	}
}

var png = []byte("\x89PNG\r\n\x1a\nfake")

func TestOutcomesReachTheModel(t *testing.T) {
	b64 := "image/png:" + base64.StdEncoding.EncodeToString(png)
	fixed := func(name string, o tool.Outcome) tool.Tool {
		return tool.Tool{Name: name, Schema: objectSchema, Run: func(context.Context, *tool.Call, json.RawMessage) tool.Outcome { return o }}
	}
	failed := tool.Fail(tool.CodeNotFound, "no such file: a.txt; list the directory first")
	failedPicture := failed
	failedPicture.Images = []tool.Image{{MIME: "image/png", Data: png}}
	reg, err := tool.NewRegistry(
		fixed("ok", tool.Success("all good")),
		fixed("fails", failed),
		fixed("fails_picture", failedPicture),
		fixed("picture", tool.Outcome{Text: "one image", Images: []tool.Image{{MIME: "image/png", Data: png}}}),
		fixed("only_picture", tool.Outcome{Images: []tool.Image{{MIME: "image/png", Data: png}, {MIME: "image/png", Data: png}}}),
		fixed("silent", tool.Outcome{}),
		fixed("not_held", tool.Success("must not run")),
	)
	if err != nil {
		t.Fatal(err)
	}
	reg.SetHolds(func(_ context.Context, _, name string) bool { return name != "not_held" })
	tests := []struct {
		call string
		want result
	}{
		{"ok", result{text: "all good"}},
		{"fails", result{isError: true, text: "Error: not_found: no such file: a.txt; list the directory first"}},
		{"fails_picture", result{isError: true, text: "Error: not_found: no such file: a.txt; list the directory first\n(1 image(s) left out: an error result carries text only)"}},
		{"picture", result{text: "one image", images: []string{b64}}},
		{"only_picture", result{images: []string{b64, b64}}},
		{"silent", result{text: "(no output)"}},
		{"nope", result{isError: true, text: "Error: Tool 'nope' not found"}},
		{"not_held", result{isError: true, text: "Error: Tool 'not_held' not found"}},
	}
	var got map[string]result
	var offered []string
	api := newFakeAPI(t, map[string]replyFunc{"go": func(x exchange) ([]map[string]any, error) {
		if x.n == 0 {
			offered = x.tools
			var blocks []map[string]any
			for _, tt := range tests {
				blocks = append(blocks, use("id_"+tt.call, tt.call, map[string]any{}))
			}
			return blocks, nil
		}
		got = x.results
		return []map[string]any{text("done")}, nil
	}})
	set := loomanthropic.NewToolset(plane.Dispatcher{Registry: reg, Fence: &plane.Fence{}}, &tool.Call{Strand: "main", OpID: "op-1"})
	tools, err := set.Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	client := api.client(t)
	runner := client.Beta.Messages.NewToolRunner(tools, anthropic.BetaToolRunnerParams{BetaMessageNewParams: anthropic.BetaMessageNewParams{
		Model: "test-model", MaxTokens: 100, Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("go"))}}})
	set.Bind(runner)
	if _, err := runner.RunToCompletion(t.Context()); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(offered, "not_held") || !slices.Contains(offered, "ok") {
		t.Errorf("offered %v", offered)
	}
	for _, tt := range tests {
		r := got["id_"+tt.call]
		if r.isError != tt.want.isError || r.text != tt.want.text || !slices.Equal(r.images, tt.want.images) {
			t.Errorf("%s: the model read %+v, want %+v", tt.call, r, tt.want)
		}
	}
}
