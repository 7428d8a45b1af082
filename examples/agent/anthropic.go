package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

// DefaultModel is the Anthropic model asked when -model names none.
const DefaultModel = anthropic.ModelClaudeSonnet4_5

// MaxTokens bounds one reply of the Anthropic provider.
const MaxTokens = 8192

// emptyResult stands in for a tool result with neither text nor images:
// the Messages API refuses an empty text block.
const emptyResult = "(no output)"

// Anthropic is the Provider over the Anthropic Messages API.
type Anthropic struct {
	client anthropic.Client
	model  anthropic.Model
}

// NewAnthropic returns the provider calling model with apiKey; a
// non-empty baseURL replaces the API's address (a proxy, or a test
// server).
func NewAnthropic(apiKey, baseURL, model string) *Anthropic {
	opts := []option.RequestOption{option.WithAPIKey(apiKey)}
	if baseURL != "" {
		opts = append(opts, option.WithBaseURL(baseURL))
	}
	return &Anthropic{client: anthropic.NewClient(opts...), model: anthropic.Model(model)}
}

// Next implements Provider: one POST /v1/messages.
func (a *Anthropic) Next(ctx context.Context, req Request) (Reply, error) {
	params := anthropic.MessageNewParams{
		Model:     a.model,
		MaxTokens: MaxTokens,
		Messages:  make([]anthropic.MessageParam, 0, len(req.Messages)),
	}
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	for _, t := range req.Tools {
		def, err := toolParam(t)
		if err != nil {
			return Reply{}, err
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &def})
	}
	for _, m := range req.Messages {
		params.Messages = append(params.Messages, messageParam(m))
	}
	msg, err := a.client.Messages.New(ctx, params)
	if err != nil {
		return Reply{}, err
	}
	reply := Reply{Usage: Usage{Input: int(msg.Usage.InputTokens), CacheCreation: int(msg.Usage.CacheCreationInputTokens),
		CacheRead: int(msg.Usage.CacheReadInputTokens), Output: int(msg.Usage.OutputTokens)}}
	var texts []string
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "tool_use":
			reply.Calls = append(reply.Calls, plane.ToolCall{ID: b.ID, Name: b.Name, Args: b.Input})
		}
	}
	reply.Text = strings.Join(texts, "\n")
	return reply, nil
}

// toolParam is a tool's definition: its name, description and argument
// schema as the input_schema.
func toolParam(t tool.Tool) (anthropic.ToolParam, error) {
	var schema map[string]json.RawMessage
	if err := json.Unmarshal(t.Schema, &schema); err != nil {
		return anthropic.ToolParam{}, fmt.Errorf("tool %s: schema: %w", t.Name, err)
	}
	in := anthropic.ToolInputSchemaParam{ExtraFields: map[string]any{}}
	for k, v := range schema {
		switch k {
		case "type":
		case "properties":
			in.Properties = v
		case "required":
			if err := json.Unmarshal(v, &in.Required); err != nil {
				return anthropic.ToolParam{}, fmt.Errorf("tool %s: schema required: %w", t.Name, err)
			}
		default:
			in.ExtraFields[k] = v
		}
	}
	return anthropic.ToolParam{Name: t.Name, Description: anthropic.String(t.Description), InputSchema: in}, nil
}

// messageParam is one conversation turn on the wire: an assistant turn's
// text and tool_use blocks, a user turn's tool_result blocks (in the
// order of the calls they answer) followed by its text.
func messageParam(m Message) anthropic.MessageParam {
	var blocks []anthropic.ContentBlockParamUnion
	if m.Role == Assistant {
		if m.Text != "" {
			blocks = append(blocks, anthropic.NewTextBlock(m.Text))
		}
		for _, c := range m.Calls {
			args := c.Args
			if len(args) == 0 {
				args = json.RawMessage(`{}`)
			}
			blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, args, c.Name))
		}
		return anthropic.NewAssistantMessage(blocks...)
	}
	for _, r := range m.Results {
		blocks = append(blocks, anthropic.ContentBlockParamUnion{OfToolResult: toolResult(r)})
	}
	if m.Text != "" {
		blocks = append(blocks, anthropic.NewTextBlock(m.Text))
	}
	return anthropic.NewUserMessage(blocks...)
}

// toolResult is one outcome as a tool_result block: is_error, the text
// the model reads, and the images beside it.
func toolResult(r plane.Result) *anthropic.ToolResultBlockParam {
	res := &anthropic.ToolResultBlockParam{ToolUseID: r.ID}
	if r.Outcome.IsError {
		res.IsError = anthropic.Bool(true)
	}
	text := r.Outcome.Text
	if text == "" && len(r.Outcome.Images) == 0 {
		text = emptyResult
	}
	if text != "" {
		res.Content = append(res.Content, anthropic.ToolResultBlockParamContentUnion{OfText: &anthropic.TextBlockParam{Text: text}})
	}
	for _, img := range r.Outcome.Images {
		res.Content = append(res.Content, anthropic.ToolResultBlockParamContentUnion{OfImage: &anthropic.ImageBlockParam{
			Source: anthropic.ImageBlockParamSourceUnion{OfBase64: &anthropic.Base64ImageSourceParam{
				Data:      base64.StdEncoding.EncodeToString(img.Data),
				MediaType: anthropic.Base64ImageSourceMediaType(img.MIME),
			}},
		}})
	}
	return res
}
