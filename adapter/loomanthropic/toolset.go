package loomanthropic

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

// emptyResult stands in for an outcome with neither text nor images: the
// Messages API refuses an empty text block.
const emptyResult = "(no output)"

// Turns is what a Toolset reads of the tool runner it serves to place a
// call: *anthropic.BetaToolRunner and *anthropic.BetaToolRunnerStreaming
// have both methods.
type Turns interface {
	// LastMessage is the reply whose calls the runner is executing.
	LastMessage() *anthropic.BetaMessage
	// IterationCount is how many replies the runner has asked for.
	IterationCount() int
}

// Toolset is one strand's Loom tools as the SDK's tool runner sees them,
// for one run of that strand. Every call goes through
// Dispatcher.DispatchOne, so the plane's Fence keeps an Exclusive tool
// (bash, fs_edit, fs_write) alone among the strand's calls although the
// runner executes a turn's calls in parallel.
//
// Coordinates: the run is Call.OpID. The SDK hands a tool its input
// alone, neither the tool_use ID nor its position, so a Toolset bound to
// its runner (Bind) reads the reply being executed: the Nth reply is step
// "step-N", and a call's index is the position of the first tool_use
// block of that reply with the same name and input not yet claimed.
// Unbound, each call is a step of its own, "call-K" for the Kth call of
// the run, at index 0.
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

	mu         sync.Mutex
	turns      Turns
	claimed    map[int]bool // indexes of step claimedAt already placed
	claimedAt  string
	unbound    int
	terminated *tool.Outcome
}

// NewToolset returns the toolset of the strand c names, for the run
// c.OpID, dispatched through d.
func NewToolset(d plane.Dispatcher, c *tool.Call) *Toolset {
	return &Toolset{Dispatcher: d, Call: c}
}

// Bind ties s to the runner executing its tools, before the runner's
// first step, so calls are placed at their step and index.
func (s *Toolset) Bind(t Turns) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = t
}

// Tools returns one anthropic.BetaTool per tool the strand may call, in
// registration order, each defined by the registry's name, description
// and JSON Schema. It fails only on a schema that is not a JSON object.
func (s *Toolset) Tools(ctx context.Context) ([]anthropic.BetaTool, error) {
	strand := ""
	if s.Call != nil {
		strand = s.Call.Strand
	}
	var out []anthropic.BetaTool
	for _, t := range s.Dispatcher.Offered(ctx, strand, s.Only) {
		in, err := inputSchema(t.Schema)
		if err != nil {
			return nil, fmt.Errorf("loomanthropic: tool %s: %w", t.Name, err)
		}
		out = append(out, &Tool{set: s, def: t, schema: in})
	}
	return out, nil
}

// Terminated returns the outcome that asked to end the run
// (tool.Outcome.Terminate), if one did. The SDK's runner cannot be ended
// by a tool: Runner stops before its next request; a host stepping a
// runner itself checks Terminated between steps.
func (s *Toolset) Terminated() (tool.Outcome, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.terminated == nil {
		return tool.Outcome{}, false
	}
	return *s.terminated, true
}

// inputSchema is a JSON object schema as the SDK's input_schema.
func inputSchema(raw json.RawMessage) (anthropic.BetaToolInputSchemaParam, error) {
	var schema map[string]json.RawMessage
	if err := json.Unmarshal(raw, &schema); err != nil {
		return anthropic.BetaToolInputSchemaParam{}, fmt.Errorf("schema: %w", err)
	}
	in := anthropic.BetaToolInputSchemaParam{ExtraFields: map[string]any{}}
	for k, v := range schema {
		switch k {
		case "type":
		case "properties":
			in.Properties = v
		case "required":
			if err := json.Unmarshal(v, &in.Required); err != nil {
				return anthropic.BetaToolInputSchemaParam{}, fmt.Errorf("schema required: %w", err)
			}
		default:
			in.ExtraFields[k] = v
		}
	}
	return in, nil
}

// site places a call of name with input: its step and index.
func (s *Toolset) site(name string, input json.RawMessage) (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turns != nil {
		if msg := s.turns.LastMessage(); msg != nil {
			step := fmt.Sprintf("step-%d", s.turns.IterationCount())
			if step != s.claimedAt {
				s.claimedAt, s.claimed = step, map[int]bool{}
			}
			for i, b := range toolUses(msg) {
				if b.Name != name || s.claimed[i] {
					continue
				}
				if in, err := json.Marshal(b.Input); err == nil && bytes.Equal(in, input) {
					s.claimed[i] = true
					return step, i
				}
			}
		}
	}
	s.unbound++
	return fmt.Sprintf("call-%d", s.unbound), 0
}

// toolUses returns the tool_use blocks of msg the runner executes: those
// after its last fallback block, in order.
func toolUses(msg *anthropic.BetaMessage) []anthropic.BetaToolUseBlock {
	var out []anthropic.BetaToolUseBlock
	for _, b := range msg.Content {
		switch b.Type {
		case "fallback":
			out = out[:0]
		case "tool_use":
			out = append(out, b.AsToolUse())
		}
	}
	return out
}

// Tool is one Loom tool as an anthropic.BetaTool.
type Tool struct {
	set    *Toolset
	def    tool.Tool
	schema anthropic.BetaToolInputSchemaParam
}

// Name returns the tool's name.
func (t *Tool) Name() string { return t.def.Name }

// Description returns the tool's model-facing description.
func (t *Tool) Description() string { return t.def.Description }

// InputSchema returns the tool's argument schema.
func (t *Tool) InputSchema() anthropic.BetaToolInputSchemaParam { return t.schema }

// Execute dispatches the call. A successful outcome is its text block and
// one image block per image. An error outcome is returned as an error,
// which the runner sends as a tool_result with is_error set and the text
// "Error: <code>: <text>"; its images, if any, are left out and counted
// in that text.
func (t *Tool) Execute(ctx context.Context, input json.RawMessage) ([]anthropic.BetaToolResultBlockParamContentUnion, error) {
	s := t.set
	step, index := s.site(t.def.Name, input)
	opID := ""
	if s.Call != nil {
		opID = s.Call.OpID
	}
	o := s.Dispatcher.DispatchOne(ctx, s.Call, opID, step, index, plane.ToolCall{Name: t.def.Name, Args: input}).Outcome
	if o.Terminate {
		s.mu.Lock()
		if s.terminated == nil {
			s.terminated = &o
		}
		s.mu.Unlock()
	}
	if o.IsError {
		return nil, &outcomeError{o}
	}
	var out []anthropic.BetaToolResultBlockParamContentUnion
	if o.Text != "" || len(o.Images) == 0 {
		text := o.Text
		if text == "" {
			text = emptyResult
		}
		out = append(out, anthropic.BetaToolResultBlockParamContentUnion{OfText: &anthropic.BetaTextBlockParam{Text: text}})
	}
	for _, img := range o.Images {
		out = append(out, anthropic.BetaToolResultBlockParamContentUnion{OfImage: &anthropic.BetaImageBlockParam{
			Source: anthropic.BetaImageBlockParamSourceUnion{OfBase64: &anthropic.BetaBase64ImageSourceParam{
				Data:      base64.StdEncoding.EncodeToString(img.Data),
				MediaType: anthropic.BetaBase64ImageSourceMediaType(img.MIME),
			}},
		}})
	}
	return out, nil
}

// outcomeError carries an error outcome through the runner, which reads
// only its message.
type outcomeError struct{ o tool.Outcome }

func (e *outcomeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.o.Code, e.o.Text)
	if n := len(e.o.Images); n > 0 {
		fmt.Fprintf(&b, "\n(%d image(s) left out: an error result carries text only)", n)
	}
	return b.String()
}

// ErrorCode returns the outcome's code (see tool.CodedError).
func (e *outcomeError) ErrorCode() string { return string(e.o.Code) }
