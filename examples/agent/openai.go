package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

// DefaultOpenAIModel is the OpenAI model asked when -model names none.
const DefaultOpenAIModel = "gpt-5"

// OpenAI is the Provider over the OpenAI Responses API. The conversation
// is sent whole each call (nothing is stored on the server); tool
// definitions, function calls and their outputs are converted here as
// loomopenai converts them, so an error outcome reads "error <code>: ..."
// (the API has no error flag) and images travel as input_image parts.
// (loomopenai.Runner is the whole loop; this example keeps its own, one
// loop for either provider.)
type OpenAI struct {
	client openai.Client
	model  string
}

// NewOpenAI returns the provider calling model with apiKey; a non-empty
// baseURL replaces the API's address (a proxy, or a test server).
func NewOpenAI(apiKey, baseURL, model string) *OpenAI {
	opts := []option.RequestOption{option.WithAPIKey(apiKey)}
	if baseURL != "" {
		opts = append(opts, option.WithBaseURL(baseURL))
	}
	return &OpenAI{client: openai.NewClient(opts...), model: model}
}

// Next implements Provider: one POST /v1/responses.
func (o *OpenAI) Next(ctx context.Context, req Request) (Reply, error) {
	tools, err := functionTools(req.Tools)
	if err != nil {
		return Reply{}, err
	}
	params := responses.ResponseNewParams{
		Model: o.model,
		Tools: tools,
		Store: openai.Bool(false),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: inputItems(req.Messages)},
	}
	if req.System != "" {
		params.Instructions = openai.String(req.System)
	}
	resp, err := o.client.Responses.New(ctx, params)
	if err != nil {
		return Reply{}, err
	}
	cached := int(resp.Usage.InputTokensDetails.CachedTokens)
	return Reply{
		Text:  resp.OutputText(),
		Calls: functionCalls(resp.Output),
		Usage: Usage{Input: int(resp.Usage.InputTokens) - cached, CacheRead: cached, Output: int(resp.Usage.OutputTokens)},
	}, nil
}

// inputItems is the conversation on the wire: an assistant turn's text
// and function calls, a user turn's function_call_output items (in the
// order of the calls they answer) followed by its text.
func inputItems(msgs []Message) responses.ResponseInputParam {
	var items responses.ResponseInputParam
	for _, m := range msgs {
		if m.Role == Assistant {
			if m.Text != "" {
				items = append(items, responses.ResponseInputItemParamOfMessage(m.Text, responses.EasyInputMessageRoleAssistant))
			}
			for _, c := range m.Calls {
				args := c.Args
				if len(args) == 0 {
					args = json.RawMessage(`{}`)
				}
				items = append(items, responses.ResponseInputItemParamOfFunctionCall(string(args), c.ID, c.Name))
			}
			continue
		}
		for _, r := range m.Results {
			items = append(items, functionOutput(r))
		}
		if m.Text != "" {
			items = append(items, responses.ResponseInputItemParamOfMessage(m.Text, responses.EasyInputMessageRoleUser))
		}
	}
	return items
}

// functionTools returns tools as Responses function tools, strict mode
// off: Loom's schemas have optional properties, which it refuses.
func functionTools(tools []tool.Tool) ([]responses.ToolUnionParam, error) {
	out := make([]responses.ToolUnionParam, 0, len(tools))
	for _, t := range tools {
		var schema map[string]any
		if err := json.Unmarshal(t.Schema, &schema); err != nil || schema == nil {
			return nil, fmt.Errorf("tool %s: the schema is not a JSON object: %s", t.Name, t.Schema)
		}
		fn := responses.FunctionToolParam{Name: t.Name, Parameters: schema, Strict: openai.Bool(false)}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		out = append(out, responses.ToolUnionParam{OfFunction: &fn})
	}
	return out, nil
}

// functionCalls returns the function calls of a response's output, in
// the order the model wrote them, each identified by its call_id.
func functionCalls(output []responses.ResponseOutputItemUnion) []plane.ToolCall {
	var calls []plane.ToolCall
	for _, item := range output {
		if item.Type == "function_call" {
			fc := item.AsFunctionCall()
			calls = append(calls, plane.ToolCall{ID: fc.CallID, Name: fc.Name, Args: json.RawMessage(fc.Arguments)})
		}
	}
	return calls
}

// functionOutput returns r as a function_call_output item answering
// r.ID: an error outcome's text prefixed by "error <code>: ", then one
// input_image part per image.
func functionOutput(r plane.Result) responses.ResponseInputItemUnionParam {
	o := r.Outcome
	text := o.ModelText()
	if text == "" && len(o.Images) == 0 {
		text = "(no output)"
	}
	var item responses.ResponseInputItemUnionParam
	if len(o.Images) == 0 {
		item = responses.ResponseInputItemParamOfFunctionCallOutput(text)
	} else {
		var parts responses.ResponseFunctionCallOutputItemListParam
		if text != "" {
			parts = append(parts, responses.ResponseFunctionCallOutputItemUnionParam{OfInputText: &responses.ResponseInputTextContentParam{Text: text}})
		}
		for _, img := range o.Images {
			url := "data:" + img.MIME + ";base64," + base64.StdEncoding.EncodeToString(img.Data)
			parts = append(parts, responses.ResponseFunctionCallOutputItemUnionParam{OfInputImage: &responses.ResponseInputImageContentParam{ImageURL: openai.String(url)}})
		}
		item = responses.ResponseInputItemParamOfFunctionCallOutput(parts)
	}
	item.OfFunctionCallOutput.CallID = openai.String(r.ID)
	return item
}
