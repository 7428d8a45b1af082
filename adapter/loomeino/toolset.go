package loomeino

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	einotool "github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"

	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

// emptyResult stands in for an outcome with neither text nor images, so
// the model never reads an empty tool message.
const emptyResult = "(no output)"

// Toolset is one strand's Loom tools as eino sees them, for one run of
// that strand. Every call goes through Dispatcher.DispatchOne, so the
// plane's Fence keeps an Exclusive tool (bash, fs_edit, fs_write) alone
// among the strand's calls however eino's tools node schedules them.
//
// Coordinates: the run is Call.OpID; a model turn is a step named
// "step-N" (from 1) and a call's index is its position in the turn, when
// the run's model is wrapped by Model. A call whose turn Model did not
// see (a Toolset used without Model) takes its tool-call ID as its step
// and 0 as its index: unique and stable for as long as the provider's IDs
// are.
type Toolset struct {
	// Dispatcher runs the calls; Plane.Dispatcher() holds the plane's
	// Fence. Its Registry gives the tools' names, descriptions and
	// schemas.
	Dispatcher plane.Dispatcher
	// Call is the strand's template, Plane.CallFor(strand, opID).
	Call *tool.Call
	// Only, when non-nil, narrows the tools offered to these names (a
	// sub-agent's Turn.Tools). Either way a tool is offered only while
	// the strand holds it (tool.Registry.Holds).
	Only []string

	turns *turns
}

// NewToolset returns the toolset of the strand c names, for the run
// c.OpID, dispatched through d.
func NewToolset(d plane.Dispatcher, c *tool.Call) *Toolset {
	return &Toolset{Dispatcher: d, Call: c, turns: &turns{}}
}

// Tools returns one of eino's EnhancedInvokableTools (a Tool) per tool
// the strand may call, in registration order: its result carries the outcome's images
// beside its text.
func (s *Toolset) Tools(ctx context.Context) []einotool.BaseTool {
	var out []einotool.BaseTool
	for _, t := range s.offered(ctx) {
		out = append(out, &Tool{set: s, def: t})
	}
	return out
}

// TextTools is Tools as eino's InvokableTools (TextTool), for a host whose graph wants
// text results: an outcome's images are left out, and its text says how
// many.
func (s *Toolset) TextTools(ctx context.Context) []einotool.BaseTool {
	var out []einotool.BaseTool
	for _, t := range s.offered(ctx) {
		out = append(out, &TextTool{Tool{set: s, def: t}})
	}
	return out
}

// Config returns a tools node configuration over Tools that answers a
// call to any other name in band (Unknown) instead of failing the graph.
func (s *Toolset) Config(ctx context.Context) compose.ToolsNodeConfig {
	return compose.ToolsNodeConfig{Tools: s.Tools(ctx), UnknownToolsHandler: s.Unknown}
}

// Unknown answers a call to a name the toolset does not offer, as
// compose.ToolsNodeConfig.UnknownToolsHandler: through the dispatcher, so
// the model reads the registry's refusal (unknown_tool, or tool_not_held
// for a tool the strand does not hold). It never returns an error.
func (s *Toolset) Unknown(ctx context.Context, name, input string) (string, error) {
	return modelText(s.dispatch(ctx, name, input)), nil
}

// offered lists the registered tools the strand may call.
func (s *Toolset) offered(ctx context.Context) []tool.Tool {
	return s.Dispatcher.Offered(ctx, s.strand(), s.Only)
}

func (s *Toolset) strand() string {
	if s.Call == nil {
		return ""
	}
	return s.Call.Strand
}

// dispatch runs one call at its coordinates.
func (s *Toolset) dispatch(ctx context.Context, name, args string) tool.Outcome {
	id := compose.GetToolCallID(ctx)
	step, index := id, 0
	if at, ok := s.turns.site(id); ok {
		step, index = at.step, at.index
	}
	opID := ""
	if s.Call != nil {
		opID = s.Call.OpID
	}
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	r := s.Dispatcher.DispatchOne(ctx, s.Call, opID, step, index, plane.ToolCall{ID: id, Name: name, Args: json.RawMessage(args)})
	if r.Outcome.Terminate {
		// Inside eino's ReAct agent this ends the run with this result;
		// elsewhere there is no run to end and the error says so.
		_ = react.SetReturnDirectly(ctx)
	}
	return r.Outcome
}

// Tool is one Loom tool as eino's EnhancedInvokableTool. It never
// returns an error: every failure is an outcome the model reads.
type Tool struct {
	set *Toolset
	def tool.Tool
}

// Info returns the tool's name, description and argument schema, as the
// registry holds them.
func (t *Tool) Info(context.Context) (*schema.ToolInfo, error) {
	var js jsonschema.Schema
	if err := json.Unmarshal(t.def.Schema, &js); err != nil {
		return nil, fmt.Errorf("loomeino: tool %s: schema: %w", t.def.Name, err)
	}
	return &schema.ToolInfo{Name: t.def.Name, Desc: t.def.Description, ParamsOneOf: schema.NewParamsOneOfByJSONSchema(&js)}, nil
}

// InvokableRun dispatches the call and returns its outcome as a text part
// (see the package doc) followed by one image part per image.
func (t *Tool) InvokableRun(ctx context.Context, arg *schema.ToolArgument, _ ...einotool.Option) (*schema.ToolResult, error) {
	args := ""
	if arg != nil {
		args = arg.Text
	}
	o := t.set.dispatch(ctx, t.def.Name, args)
	res := &schema.ToolResult{}
	if o.Text != "" || o.IsError || len(o.Images) == 0 {
		res.Parts = append(res.Parts, schema.ToolOutputPart{Type: schema.ToolPartTypeText, Text: modelText(tool.Outcome{Text: o.Text, IsError: o.IsError, Code: o.Code})})
	}
	for _, img := range o.Images {
		data := base64.StdEncoding.EncodeToString(img.Data)
		res.Parts = append(res.Parts, schema.ToolOutputPart{Type: schema.ToolPartTypeImage, Image: &schema.ToolOutputImage{
			MessagePartCommon: schema.MessagePartCommon{Base64Data: &data, MIMEType: img.MIME},
		}})
	}
	return res, nil
}

// TextTool is one Loom tool as eino's InvokableTool: Tool with a text
// result.
type TextTool struct{ Tool }

// InvokableRun dispatches the call and returns its outcome's text (see
// the package doc), images counted, not shown. It never returns an error.
func (t *TextTool) InvokableRun(ctx context.Context, args string, _ ...einotool.Option) (string, error) {
	return modelText(t.set.dispatch(ctx, t.def.Name, args)), nil
}

// modelText is what the model reads of an outcome where eino carries
// text alone. eino's tool messages have no error flag (and a tool's error
// aborts the graph), so an error outcome's text begins "error <code>: ",
// its tool.Code ("error: " when it has none). Images given to it are counted
// in a last line (Tool passes none: its result carries them as image
// parts). An outcome with neither text nor images reads "(no output)".
func modelText(o tool.Outcome) string {
	var b strings.Builder
	b.WriteString(o.ModelText())
	if n := len(o.Images); n > 0 {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "(%d image(s) left out: this tool's results carry text only)", n)
	}
	if b.Len() == 0 {
		return emptyResult
	}
	return b.String()
}

// turns numbers a run's model turns and remembers where each call of
// them sits.
type turns struct {
	mu    sync.Mutex
	n     int
	sites map[string]site
}

// site is a call's step and its index in that step.
type site struct {
	step  string
	index int
}

// record numbers the turn that produced msg, places its calls and
// returns its number.
func (t *turns) record(msg *schema.Message) int {
	if t == nil || msg == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n++
	if t.sites == nil {
		t.sites = map[string]site{}
	}
	for i, c := range msg.ToolCalls {
		if c.ID != "" {
			t.sites[c.ID] = site{step: fmt.Sprintf("step-%d", t.n), index: i}
		}
	}
	return t.n
}

// site returns where the call id sits, when its turn was recorded.
func (t *turns) site(id string) (site, bool) {
	if t == nil || id == "" {
		return site{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.sites[id]
	return s, ok
}
