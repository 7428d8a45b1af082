package loomgenkit

import (
	"context"
	"errors"
	"fmt"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/plane"
)

// DefaultMaxTurns bounds a run's model replies when Runner.MaxTurns is
// zero or less.
const DefaultMaxTurns = 50

// Runner is an agent.Runner that runs each turn as one genkit.Generate
// call, Genkit's own tool loop, over the strand's tools (a Toolset):
// plane.Config{Runner: r} makes agent_spawn work inside Genkit, and a
// host runs its own strand with the same Run. The turn's Notice is the
// system message, its Prompt the first user message; the report is the
// final response's text. Genkit's loop runs to its end in one call, so
// messages sent to a running strand (Turn.Inbox) are not drained
// mid-run: they reach it at its next continuation. A Runner is safe for
// concurrent use; its fields must not change once it runs.
type Runner struct {
	// Plane is the plane the calls are dispatched through. It may be set
	// after plane.New returned (the Runner is first called when a model
	// spawns).
	Plane *plane.Plane
	// Genkit holds the models (genkit.Init with a plugin, or
	// genkit.DefineModel): Genkit reaches a provider through it rather
	// than through a client.
	Genkit *genkit.Genkit
	// Model names the model of a turn whose Turn.Model is ""
	// ("provider/name").
	Model string
	// MaxTurns bounds one run's model replies; zero or less means
	// DefaultMaxTurns. When the last reply still calls tools, those
	// calls are not run and Run returns a *agent.TurnLimitError.
	MaxTurns int
}

// Run runs one turn of t.Strand (its calls at Plane.CallFor(t.Strand,
// t.Operation)) and returns its report.
func (r *Runner) Run(ctx context.Context, t agent.Turn) (string, error) {
	if r.Plane == nil || r.Genkit == nil {
		return "", errors.New("loomgenkit: Runner needs its Plane and Genkit set")
	}
	max := r.MaxTurns
	if max <= 0 {
		max = DefaultMaxTurns
	}
	set := NewToolset(r.Plane.Dispatcher(), r.Plane.CallFor(t.Strand, t.Operation))
	set.Only = t.Tools
	set.limit = &agent.TurnLimitError{Strand: t.Strand, MaxTurns: max}
	tools, err := set.GenerateOptions(ctx)
	if err != nil {
		return "", err
	}
	model := r.Model
	if t.Model != "" {
		model = t.Model
	}
	var msgs []*ai.Message
	if t.Notice != "" {
		msgs = append(msgs, ai.NewSystemTextMessage(t.Notice))
	}
	msgs = append(msgs, ai.NewUserTextMessage(t.Prompt))
	// Genkit's own limit (a failure after max tool-calling turns) comes
	// one reply later than the Toolset's.
	opts := append([]ai.GenerateOption{ai.WithModelName(model), ai.WithMessages(msgs...), ai.WithMaxTurns(max)}, tools...)
	resp, err := genkit.Generate(ctx, r.Genkit, opts...)
	if limit := set.limit; errors.As(err, &limit) {
		return "", limit
	}
	if err != nil {
		return "", fmt.Errorf("loomgenkit: %s: %w", t.Strand, err)
	}
	return resp.Text(), nil
}
