package loomopenai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

// emptyOutput stands in for an outcome with neither text nor images, so
// the model never reads an empty function_call_output.
const emptyOutput = "(no output)"

// Toolset is one strand's Loom tools as Responses function tools, for
// one run of that strand. Every call goes through Dispatcher, so the
// plane's Fence keeps an Exclusive tool (bash, fs_edit, fs_write) alone
// among the strand's calls while a turn's Concurrent calls run side by
// side.
//
// Coordinates: the run is Call.OpID; the Nth response handed to Dispatch
// is step "step-N", and a call's index is its position among that
// response's function calls; its call_id is the plane.ToolCall's ID.
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

	mu   sync.Mutex
	step int
}

// NewToolset returns the toolset of the strand c names, for the run
// c.OpID, dispatched through d.
func NewToolset(d plane.Dispatcher, c *tool.Call) *Toolset {
	return &Toolset{Dispatcher: d, Call: c}
}

// Tools returns one function tool per tool the strand may call, in
// registration order: each one's name, description and argument schema,
// as Loom declares them. Strict mode is off: Loom's schemas have
// optional properties, which strict mode refuses. It fails only on a
// schema that is not a JSON object, which a Registry never holds.
func (s *Toolset) Tools(ctx context.Context) ([]responses.ToolUnionParam, error) {
	return functionTools(s.Dispatcher.Offered(ctx, s.strand(), s.Only))
}

// Dispatch runs the function calls of one response's output as the
// run's next step and returns what the next request adds to the
// conversation: the response's own turn (replay) followed by one
// function_call_output per call, in the order of the calls. It returns
// nil when the response calls no function: the run is over. A name the
// registry does not know is answered in band, coded
// tool.CodeUnknownTool.
func (s *Toolset) Dispatch(ctx context.Context, output []responses.ResponseOutputItemUnion) []responses.ResponseInputItemUnionParam {
	s.mu.Lock()
	s.step++
	step := fmt.Sprintf("step-%d", s.step)
	s.mu.Unlock()
	cs := calls(output)
	if len(cs) == 0 {
		return nil
	}
	opID := ""
	if s.Call != nil {
		opID = s.Call.OpID
	}
	items := replay(output)
	for _, r := range s.Dispatcher.Dispatch(ctx, s.Call, opID, step, cs) {
		items = append(items, functionOutput(r))
	}
	return items
}

func (s *Toolset) strand() string {
	if s.Call == nil {
		return ""
	}
	return s.Call.Strand
}

// functionTools returns tools as Responses function tools.
func functionTools(tools []tool.Tool) ([]responses.ToolUnionParam, error) {
	out := make([]responses.ToolUnionParam, 0, len(tools))
	for _, t := range tools {
		var schema map[string]any
		if err := json.Unmarshal(t.Schema, &schema); err != nil || schema == nil {
			return nil, fmt.Errorf("loomopenai: tool %s: the schema is not a JSON object: %s", t.Name, t.Schema)
		}
		fn := responses.FunctionToolParam{Name: t.Name, Parameters: schema}
		fn.Strict = openai.Bool(false)
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		out = append(out, responses.ToolUnionParam{OfFunction: &fn})
	}
	return out, nil
}

// calls returns the function calls of a response's output, in the order
// the model wrote them: ID is the call's call_id, which its
// function_call_output answers.
func calls(output []responses.ResponseOutputItemUnion) []plane.ToolCall {
	var out []plane.ToolCall
	for _, item := range output {
		if item.Type != "function_call" {
			continue
		}
		fc := item.AsFunctionCall()
		out = append(out, plane.ToolCall{ID: fc.CallID, Name: fc.Name, Args: json.RawMessage(fc.Arguments)})
	}
	return out
}

// replay returns a response's output items as input items, so the next
// request carries the model's own turn: its messages, function calls and
// reasoning. Items of other kinds (hosted tools' calls) are left out.
func replay(output []responses.ResponseOutputItemUnion) []responses.ResponseInputItemUnionParam {
	var items []responses.ResponseInputItemUnionParam
	for _, item := range output {
		switch item.Type {
		case "message":
			m := item.AsMessage().ToParam()
			items = append(items, responses.ResponseInputItemUnionParam{OfOutputMessage: &m})
		case "function_call":
			fc := item.AsFunctionCall().ToParam()
			items = append(items, responses.ResponseInputItemUnionParam{OfFunctionCall: &fc})
		case "reasoning":
			r := item.AsReasoning().ToParam()
			items = append(items, responses.ResponseInputItemUnionParam{OfReasoning: &r})
		}
	}
	return items
}

// functionOutput returns r as a function_call_output item answering
// r.ID. The Responses API has no error flag: an error outcome's text
// starts with "error <code>: " (tool.Outcome.ModelText). Images follow the text as
// input_image parts, each a base64 data URL.
func functionOutput(r plane.Result) responses.ResponseInputItemUnionParam {
	text := r.Outcome.ModelText()
	if text == "" && len(r.Outcome.Images) == 0 {
		text = emptyOutput
	}
	var item responses.ResponseInputItemUnionParam
	if len(r.Outcome.Images) == 0 {
		item = responses.ResponseInputItemParamOfFunctionCallOutput(text)
	} else {
		var parts responses.ResponseFunctionCallOutputItemListParam
		if text != "" {
			parts = append(parts, responses.ResponseFunctionCallOutputItemUnionParam{OfInputText: &responses.ResponseInputTextContentParam{Text: text}})
		}
		for _, img := range r.Outcome.Images {
			url := "data:" + img.MIME + ";base64," + base64.StdEncoding.EncodeToString(img.Data)
			parts = append(parts, responses.ResponseFunctionCallOutputItemUnionParam{OfInputImage: &responses.ResponseInputImageContentParam{ImageURL: openai.String(url)}})
		}
		item = responses.ResponseInputItemParamOfFunctionCallOutput(parts)
	}
	item.OfFunctionCallOutput.CallID = openai.String(r.ID)
	return item
}
