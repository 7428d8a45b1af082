package loomopenai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

// EmptyOutput stands in for an outcome with neither text nor images, so
// the model never reads an empty function_call_output.
const EmptyOutput = "(no output)"

// FunctionTools returns tools as Responses function tools: each one's
// name, description and argument schema, as Loom declares them. Strict
// mode is off: Loom's schemas have optional properties, which strict
// mode refuses. It fails only on a schema that is not a JSON object,
// which a Registry never holds.
func FunctionTools(tools []tool.Tool) ([]responses.ToolUnionParam, error) {
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

// HeldTools returns the tools of reg that strand holds (Registry.Holds),
// in registration order: what a strand's model is offered.
func HeldTools(ctx context.Context, reg *tool.Registry, strand string) []tool.Tool {
	var out []tool.Tool
	for _, t := range reg.Registered() {
		if reg.Holds(ctx, strand, t.Name) {
			out = append(out, t)
		}
	}
	return out
}

// Calls returns the function calls of a response's output, in the order
// the model wrote them: ID is the call's call_id, which its
// function_call_output answers.
func Calls(output []responses.ResponseOutputItemUnion) []plane.ToolCall {
	var calls []plane.ToolCall
	for _, item := range output {
		if item.Type != "function_call" {
			continue
		}
		fc := item.AsFunctionCall()
		calls = append(calls, plane.ToolCall{ID: fc.CallID, Name: fc.Name, Args: json.RawMessage(fc.Arguments)})
	}
	return calls
}

// Dispatch runs the function calls of output as step stepID of c's
// operation, the call at position i (among the function calls) at index
// i, through d (Plane.Dispatcher: Concurrent calls side by side,
// Exclusive ones alone, fenced among the strand's other calls), and
// returns one function_call_output item per call, in the order of the
// calls. A name d's registry does not know is answered in band, coded
// tool.CodeUnknownTool.
func Dispatch(ctx context.Context, d plane.Dispatcher, c *tool.Call, stepID string, output []responses.ResponseOutputItemUnion) []responses.ResponseInputItemUnionParam {
	calls := Calls(output)
	if len(calls) == 0 {
		return nil
	}
	opID := ""
	if c != nil {
		opID = c.OpID
	}
	results := d.Dispatch(ctx, c, opID, stepID, calls)
	items := make([]responses.ResponseInputItemUnionParam, len(results))
	for i, r := range results {
		items[i] = Output(r)
	}
	return items
}

// Output returns r as a function_call_output item answering r.ID. The
// Responses API has no error flag: an error outcome's text starts with
// "error <code>: " (ErrorText). Images follow the text as input_image
// parts, each a base64 data URL.
func Output(r plane.Result) responses.ResponseInputItemUnionParam {
	text := ErrorText(r.Outcome)
	if text == "" && len(r.Outcome.Images) == 0 {
		text = EmptyOutput
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

// ErrorText is the text the model reads for o: o.Text, prefixed by
// "error <code>: " when o is an error, since a function_call_output
// carries no error flag.
func ErrorText(o tool.Outcome) string {
	if !o.IsError {
		return o.Text
	}
	if o.Code == "" {
		return "error: " + o.Text
	}
	return "error " + string(o.Code) + ": " + o.Text
}
