package loomopenai

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

// DefaultMaxTurns bounds the model calls of one run when Agent.MaxTurns
// is zero or less.
const DefaultMaxTurns = 50

// ErrTurnLimit is returned by Run when the model still calls tools after
// MaxTurns model calls.
var ErrTurnLimit = errors.New("loomopenai: the model kept calling tools past the turn limit")

// Agent is a Responses API tool loop over a Plane: it asks the model for
// the next output, dispatches its function calls through the plane and
// sends the outcomes back, until the model answers without calling a
// tool. The conversation is sent whole each step (nothing is stored on
// the server). As a Runner it runs every sub-agent of the plane the same
// way, over the child's tools. Its fields must not change once it runs.
type Agent struct {
	// Client calls the Responses API (openai.NewClient).
	Client openai.Client
	// Model is the model asked, for every strand.
	Model string
	// Plane dispatches the calls; it may be set after plane.New, before
	// the first run.
	Plane *plane.Plane
	// MaxTurns bounds one run's model calls; zero or less means
	// DefaultMaxTurns.
	MaxTurns int
}

// Run runs one strand's turn and returns the model's final text: c is
// the strand's call template (Plane.CallFor), instructions its system
// message, prompt its first message; inbox, when set, drains messages
// sent to the strand, added as a user message after each step's
// outputs. The model is offered the tools the strand holds. Step n is
// "step-n" of c's operation.
func (a *Agent) Run(ctx context.Context, c *tool.Call, instructions, prompt string, inbox func() []string) (string, error) {
	tools, err := FunctionTools(HeldTools(ctx, a.Plane.Registry, c.Strand))
	if err != nil {
		return "", err
	}
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage(prompt, responses.EasyInputMessageRoleUser)}
	max := a.MaxTurns
	if max <= 0 {
		max = DefaultMaxTurns
	}
	d := a.Plane.Dispatcher()
	for n := 1; n <= max; n++ {
		params := responses.ResponseNewParams{
			Model: a.Model,
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input},
			Tools: tools,
			Store: openai.Bool(false),
		}
		if instructions != "" {
			params.Instructions = openai.String(instructions)
		}
		resp, err := a.Client.Responses.New(ctx, params)
		if err != nil {
			return "", fmt.Errorf("loomopenai: %s step-%d: %w", c.Strand, n, err)
		}
		input = append(input, Replay(resp.Output)...)
		outputs := Dispatch(ctx, d, c, fmt.Sprintf("step-%d", n), resp.Output)
		if len(outputs) == 0 {
			return resp.OutputText(), nil
		}
		input = append(input, outputs...)
		if inbox != nil {
			if msgs := inbox(); len(msgs) > 0 {
				input = append(input, responses.ResponseInputItemParamOfMessage(strings.Join(msgs, "\n\n"), responses.EasyInputMessageRoleUser))
			}
		}
	}
	return "", fmt.Errorf("%s: %w (%d)", c.Strand, ErrTurnLimit, max)
}

// Runner returns a as the plane's sub-agent Runner (plane.Config.Runner):
// each child runs its own Responses loop with the tools it holds, its
// Notice as instructions, and its calls dispatched at its coordinates
// (Plane.CallFor(turn.Strand, turn.Operation)).
func (a *Agent) Runner() agent.Runner {
	return agent.RunnerFunc(func(ctx context.Context, t agent.Turn) (string, error) {
		return a.Run(ctx, a.Plane.CallFor(t.Strand, t.Operation), t.Notice, t.Prompt, t.Inbox)
	})
}

// Replay returns a response's output items as input items, so the next
// request carries the model's own turn: its messages, function calls and
// reasoning. Items of other kinds (hosted tools' calls) are left out.
func Replay(output []responses.ResponseOutputItemUnion) []responses.ResponseInputItemUnionParam {
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
