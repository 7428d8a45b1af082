package loomeino_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	einotool "github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"

	"github.com/agentloom/loom/adapter/loomeino"
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

func (n naiveTool) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{Name: n.name, Desc: n.name}, nil
}

func (n naiveTool) InvokableRun(ctx context.Context, args string, _ ...einotool.Option) (string, error) {
	return n.reg.Dispatch(ctx, &tool.Call{Strand: "main"}, n.name, json.RawMessage(args)).Text, nil
}

// fenceRun has eino's ReAct agent run, in a synctest bubble, one turn
// of three calls, an Exclusive one between two Concurrent ones, with the
// tools tools makes, and returns what the probes saw. eino's tools node
// runs the three in parallel.
func fenceRun(t *testing.T, tools func(d plane.Dispatcher, c *tool.Call) (*loomeino.Toolset, []einotool.BaseTool)) *adaptertest.Probes {
	p := adaptertest.NewProbes(3)
	synctest.Test(t, func(t *testing.T) {
		d := plane.Dispatcher{Registry: p.Registry(t), Fence: &plane.Fence{}}
		set, list := tools(d, &tool.Call{Strand: "main", OpID: "op-1"})
		m := newScripted(map[string]turnFunc{"go": func(msgs []*schema.Message, n int) (*schema.Message, error) {
			if n == 0 {
				return calls("c", "shared", `{"key":"a"}`, "alone", `{"key":"e"}`, "shared", `{"key":"b"}`), nil
			}
			return schema.AssistantMessage("finished", nil), nil
		}})
		cfg := &react.AgentConfig{ToolCallingModel: m, ToolsConfig: compose.ToolsNodeConfig{Tools: list}}
		if set != nil {
			cfg.ToolCallingModel = set.Model(m)
		}
		a, err := react.NewAgent(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		out, err := a.Generate(t.Context(), []*schema.Message{schema.UserMessage("go")})
		if err != nil || out.Content != "finished" {
			t.Fatalf("Generate: %v, %v", out, err)
		}
	})
	return p
}

func TestExclusiveCallRunsAloneInEinosParallelToolsNode(t *testing.T) {
	p := fenceRun(t, func(d plane.Dispatcher, c *tool.Call) (*loomeino.Toolset, []einotool.BaseTool) {
		set := loomeino.NewToolset(d, c)
		return set, set.Tools(t.Context())
	})
	if o := p.Overlaps(); len(o) > 0 {
		t.Errorf("calls ran beside the Exclusive call: %v", o)
	}
	want := map[string]string{"a": "op-1/step-1/0", "e": "op-1/step-1/1", "b": "op-1/step-1/2"}
	if got := p.Coords(); !maps.Equal(got, want) {
		t.Errorf("calls dispatched at %v, want %v", got, want)
	}
}

// The control: the same turn through tools that bypass DispatchOne runs
// the Exclusive call beside the others, so the test above can fail.
func TestNaiveToolsRunExclusiveCallBesideOthers(t *testing.T) {
	p := fenceRun(t, func(d plane.Dispatcher, c *tool.Call) (*loomeino.Toolset, []einotool.BaseTool) {
		var list []einotool.BaseTool
		for _, n := range d.Registry.Names() {
			list = append(list, naiveTool{reg: d.Registry, name: n})
		}
		return nil, list
	})
	if len(p.Overlaps()) == 0 {
		t.Errorf("the naive tools kept the Exclusive call alone; the fence test could not fail")
	}
}

// Without Model, a call's step is its tool-call ID.
func TestCoordinatesWithoutModelAreTheCallID(t *testing.T) {
	p := fenceRun(t, func(d plane.Dispatcher, c *tool.Call) (*loomeino.Toolset, []einotool.BaseTool) {
		return nil, (&loomeino.Toolset{Dispatcher: d, Call: c}).TextTools(t.Context())
	})
	if o := p.Overlaps(); len(o) > 0 {
		t.Errorf("calls ran beside the Exclusive call: %v", o)
	}
	if got := p.Coords()["e"]; got != "op-1/c-1/0" {
		t.Errorf("the Exclusive call dispatched at %q, want op-1/c-1/0", got)
	}
}

var png = []byte("\x89PNG\r\n\x1a\nfake")

// outcomeTools answers each call with a fixed outcome.
func outcomeTools(t *testing.T) *tool.Registry {
	t.Helper()
	fixed := func(name string, o tool.Outcome) tool.Tool {
		return tool.Tool{Name: name, Schema: objectSchema, Run: func(context.Context, *tool.Call, json.RawMessage) tool.Outcome { return o }}
	}
	reg, err := tool.NewRegistry(
		fixed("ok", tool.Success("all good")),
		fixed("fails", tool.Fail(tool.CodeNotFound, "no such file: a.txt; list the directory first")),
		fixed("picture", tool.Outcome{Text: "one image", Images: []tool.Image{{MIME: "image/png", Data: png}}}),
		fixed("only_picture", tool.Outcome{Images: []tool.Image{{MIME: "image/png", Data: png}, {MIME: "image/png", Data: png}}}),
		fixed("silent", tool.Outcome{}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// image is one image part of a tool message.
type image struct{ mime, data string }

func TestOutcomesReachTheModel(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString(png)
	tests := []struct {
		name, call string
		text       string // Tools' text
		images     []image
		textOnly   string // TextTools' text
	}{
		{name: "success", call: "ok", text: "all good", textOnly: "all good"},
		{name: "error flag and code", call: "fails",
			text:     "error not_found: no such file: a.txt; list the directory first",
			textOnly: "error not_found: no such file: a.txt; list the directory first"},
		{name: "image", call: "picture", text: "one image", images: []image{{"image/png", b64}},
			textOnly: "one image\n(1 image(s) left out: this tool's results carry text only)"},
		{name: "images alone", call: "only_picture", images: []image{{"image/png", b64}, {"image/png", b64}},
			textOnly: "(2 image(s) left out: this tool's results carry text only)"},
		{name: "empty", call: "silent", text: "(no output)", textOnly: "(no output)"},
		{name: "unknown tool in band", call: "nope",
			text:     "error unknown_tool: unknown tool \"nope\"; available tools: fails, ok, only_picture, picture, silent",
			textOnly: "error unknown_tool: unknown tool \"nope\"; available tools: fails, ok, only_picture, picture, silent"},
	}
	set := loomeino.NewToolset(plane.Dispatcher{Registry: outcomeTools(t), Fence: &plane.Fence{}}, &tool.Call{Strand: "main", OpID: "op-1"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, textOnly := range []bool{false, true} {
				cfg := set.Config(t.Context())
				if textOnly {
					cfg.Tools = set.TextTools(t.Context())
				}
				node, err := compose.NewToolNode(t.Context(), &cfg)
				if err != nil {
					t.Fatal(err)
				}
				msgs, err := node.Invoke(t.Context(), calls("c", tt.call, `{}`))
				if err != nil {
					t.Fatalf("Invoke: %v", err)
				}
				m := msgs[0]
				var imgs []image
				for _, p := range m.UserInputMultiContent {
					if p.Type == schema.ChatMessagePartTypeImageURL {
						imgs = append(imgs, image{p.Image.MIMEType, *p.Image.Base64Data})
					}
				}
				want, wantImgs := tt.text, tt.images
				if textOnly || tt.call == "nope" {
					want, wantImgs = tt.textOnly, nil
				}
				if got := resultText(m); got != want {
					t.Errorf("text only %v: text %q, want %q", textOnly, got, want)
				}
				if !slices.Equal(imgs, wantImgs) {
					t.Errorf("text only %v: images %v, want %v", textOnly, imgs, wantImgs)
				}
			}
		})
	}
}

// A gated registry: a strand is offered only what it holds, and a call
// to a tool it does not hold is refused in band.
func TestOnlyHeldToolsAreOffered(t *testing.T) {
	reg := outcomeTools(t)
	reg.SetHolds(func(_ context.Context, strand, name string) bool { return name != "fails" })
	set := loomeino.NewToolset(plane.Dispatcher{Registry: reg, Fence: &plane.Fence{}}, &tool.Call{Strand: "sub:main/x-1", OpID: "op-1"})
	set.Only = []string{"ok", "fails", "picture"}
	var names []string
	for _, bt := range set.Tools(t.Context()) {
		info, err := bt.Info(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, info.Name)
	}
	if want := []string{"ok", "picture"}; !slices.Equal(names, want) {
		t.Errorf("offered %v, want %v", names, want)
	}
	cfg := set.Config(t.Context())
	node, err := compose.NewToolNode(t.Context(), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := node.Invoke(t.Context(), calls("c", "fails", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(msgs[0]); !strings.HasPrefix(got, "error tool_not_held: ") {
		t.Errorf("a call to a tool not held reads %q", got)
	}
}
