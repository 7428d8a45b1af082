package main

import (
	"context"
	"encoding/json"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentloom/loom/adapter/loomopenai"
)

// DefaultOpenAIModel is the OpenAI model asked when -model names none.
const DefaultOpenAIModel = "gpt-5"

// OpenAI is the Provider over the OpenAI Responses API. The conversation
// is sent whole each call (nothing is stored on the server); tool
// definitions, function calls and their outputs are converted by
// loomopenai, so an error outcome reads "error <code>: ..." (the API has
// no error flag) and images travel as input_image parts.
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
	tools, err := loomopenai.FunctionTools(req.Tools)
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
		Calls: loomopenai.Calls(resp.Output),
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
			items = append(items, loomopenai.Output(r))
		}
		if m.Text != "" {
			items = append(items, responses.ResponseInputItemParamOfMessage(m.Text, responses.EasyInputMessageRoleUser))
		}
	}
	return items
}
