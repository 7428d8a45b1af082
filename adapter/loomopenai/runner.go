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
)

// DefaultMaxTurns bounds a run's model replies when Runner.MaxTurns is
// zero or less.
const DefaultMaxTurns = 50

// Runner is an agent.Runner that runs each turn as a Responses API tool
// loop over the strand's tools (a Toolset): it asks the model for the
// next output, dispatches its function calls through the plane and sends
// the outcomes back, until the model answers without calling a tool.
// openai-go has no agent loop of its own, so this is the loop.
// plane.Config{Runner: r} makes agent_spawn work under the Responses
// API, and a host runs its own strand with the same Run. The turn's
// Notice is the instructions, its Prompt the first user message, and
// messages sent to the strand while it runs (Turn.Inbox) join the
// conversation as a user message after each step's outputs. The report
// is the final response's text. The conversation is sent whole each
// step (nothing is stored on the server). A Runner is safe for
// concurrent use; its fields must not change once it runs.
type Runner struct {
	// Plane is the plane the calls are dispatched through. It may be set
	// after plane.New returned (the Runner is first called when a model
	// spawns).
	Plane *plane.Plane
	// Client calls the Responses API (openai.NewClient).
	Client openai.Client
	// Model is the model of a turn whose Turn.Model is "".
	Model string
	// MaxTurns bounds one run's model replies; zero or less means
	// DefaultMaxTurns. When the last reply still calls tools, those
	// calls are not run and Run returns a *agent.TurnLimitError.
	MaxTurns int
}

// Run runs one turn of t.Strand (its calls at Plane.CallFor(t.Strand,
// t.Operation)) and returns its report.
func (r *Runner) Run(ctx context.Context, t agent.Turn) (string, error) {
	if r.Plane == nil {
		return "", errors.New("loomopenai: Runner needs its Plane set")
	}
	set := NewToolset(r.Plane.Dispatcher(), r.Plane.CallFor(t.Strand, t.Operation))
	set.Only = t.Tools
	tools, err := set.Tools(ctx)
	if err != nil {
		return "", err
	}
	model := r.Model
	if t.Model != "" {
		model = t.Model
	}
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage(t.Prompt, responses.EasyInputMessageRoleUser)}
	max := r.MaxTurns
	if max <= 0 {
		max = DefaultMaxTurns
	}
	for n := 1; ; n++ {
		params := responses.ResponseNewParams{
			Model: model,
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input},
			Tools: tools,
			Store: openai.Bool(false),
		}
		if t.Notice != "" {
			params.Instructions = openai.String(t.Notice)
		}
		resp, err := r.Client.Responses.New(ctx, params)
		if err != nil {
			return "", fmt.Errorf("loomopenai: %s step-%d: %w", t.Strand, n, err)
		}
		if n >= max && len(calls(resp.Output)) > 0 {
			return "", &agent.TurnLimitError{Strand: t.Strand, MaxTurns: max}
		}
		items := set.Dispatch(ctx, resp.Output)
		if items == nil {
			return resp.OutputText(), nil
		}
		input = append(input, items...)
		if t.Inbox != nil {
			if msgs := t.Inbox(); len(msgs) > 0 {
				input = append(input, responses.ResponseInputItemParamOfMessage(strings.Join(msgs, "\n\n"), responses.EasyInputMessageRoleUser))
			}
		}
	}
}
