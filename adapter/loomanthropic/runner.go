package loomanthropic

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/plane"
)

// The defaults a zero Runner field means.
const (
	// DefaultMaxTokens bounds one reply.
	DefaultMaxTokens = 8192
	// DefaultMaxTurns bounds one run's model replies.
	DefaultMaxTurns = 50
)

// errEnded stops the request that would follow a batch holding an
// outcome that ended the run.
var errEnded = errors.New("loomanthropic: a tool ended the run")

// Runner is an agent.Runner that runs each sub-agent's turn with the
// SDK's tool runner (Beta.Messages.NewToolRunner) over the child's tools:
// plane.Config{Runner: r} makes agent_spawn work over the Anthropic API.
// The turn's Notice is the system prompt, its Prompt the first user
// message; messages sent to the child while it runs (Turn.Inbox) join
// the conversation after the results of the calls of the reply before
// them. The report is the text of the last reply, or the text of an
// outcome that ended the run (tool.Outcome.Terminate): no request is
// sent after its batch. A Runner is safe for concurrent use.
type Runner struct {
	// Plane is the plane the children's calls are dispatched through.
	// It may be set after plane.New returned (the Runner is first called
	// when a model spawns).
	Plane *plane.Plane
	// Client sends the requests.
	Client anthropic.Client
	// Model is the model of a turn whose Turn.Model is "".
	Model anthropic.Model
	// MaxTokens bounds one reply; zero or less means DefaultMaxTokens.
	MaxTokens int64
	// MaxTurns bounds one run's replies (the tool runner's
	// MaxIterations); zero or less means DefaultMaxTurns. When the last
	// reply still calls tools, those calls are not run and Run returns a
	// *agent.TurnLimitError.
	MaxTurns int
}

// Run runs one child turn and returns its report.
func (r *Runner) Run(ctx context.Context, t agent.Turn) (string, error) {
	if r.Plane == nil {
		return "", errors.New("loomanthropic: Runner needs its Plane set")
	}
	set := NewToolset(r.Plane.Dispatcher(), r.Plane.CallFor(t.Strand, t.Operation))
	set.Only = t.Tools
	tools, err := set.Tools(ctx)
	if err != nil {
		return "", err
	}
	params := anthropic.BetaToolRunnerParams{
		BetaMessageNewParams: anthropic.BetaMessageNewParams{
			Model:     r.Model,
			MaxTokens: r.MaxTokens,
			Messages:  []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock(t.Prompt))},
		},
		MaxIterations: r.MaxTurns,
	}
	if t.Model != "" {
		params.Model = anthropic.Model(t.Model)
	}
	if params.MaxTokens <= 0 {
		params.MaxTokens = DefaultMaxTokens
	}
	if params.MaxIterations <= 0 {
		params.MaxIterations = DefaultMaxTurns
	}
	if t.Notice != "" {
		params.System = []anthropic.BetaTextBlockParam{{Text: t.Notice}}
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// Once a batch ended the run, its next request is never sent.
	stop := option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		if _, ended := set.Terminated(); ended {
			cancel(errEnded)
			return nil, errEnded
		}
		return next(req)
	})
	runner := r.Client.Beta.Messages.NewToolRunner(tools, params, stop)
	set.Bind(runner)
	for {
		msg, err := runner.NextMessage(runCtx)
		if o, ended := set.Terminated(); ended {
			return o.Text, nil
		}
		if err != nil {
			return "", err
		}
		if msg == nil {
			break
		}
		if runner.IterationCount() >= params.MaxIterations && len(toolUses(msg)) > 0 {
			// The runner would run this reply's calls, then stop.
			return "", &agent.TurnLimitError{Strand: t.Strand, MaxTurns: params.MaxIterations}
		}
		if t.Inbox != nil && len(toolUses(msg)) > 0 {
			if in := t.Inbox(); len(in) > 0 {
				runner.AppendMessages(anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock(strings.Join(in, "\n\n"))))
			}
		}
	}
	return replyText(runner.LastMessage()), nil
}

// replyText is the text blocks of msg, joined.
func replyText(msg *anthropic.BetaMessage) string {
	if msg == nil {
		return ""
	}
	var texts []string
	for _, b := range msg.Content {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n")
}
