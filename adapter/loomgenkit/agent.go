package loomgenkit

import (
	"context"
	"fmt"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

// DefaultMaxTurns bounds the model calls of one run when Agent.MaxTurns
// is zero or less.
const DefaultMaxTurns = 50

// Agent runs a strand's turn as one genkit.Generate call, Genkit's own
// tool loop, over the tools the strand holds (a Toolset). As a Runner it
// runs every sub-agent of the plane the same way. Its fields must not
// change once it runs.
type Agent struct {
	// Genkit holds the model (genkit.Init, a plugin or genkit.DefineModel).
	Genkit *genkit.Genkit
	// Model names the model asked, for every strand ("provider/name").
	Model string
	// Plane dispatches the calls; it may be set after plane.New, before
	// the first run.
	Plane *plane.Plane
	// MaxTurns bounds one run's tool-calling turns (ai.WithMaxTurns); zero
	// or less means DefaultMaxTurns. Past it Genkit fails the run.
	MaxTurns int
}

// Run runs one strand's turn and returns the model's final text: c is
// the strand's call template (Plane.CallFor), system its system message
// (none when empty), prompt its first message.
func (a *Agent) Run(ctx context.Context, c *tool.Call, system, prompt string) (string, error) {
	ts, err := NewToolset(ctx, a.Plane.Dispatcher(), c)
	if err != nil {
		return "", err
	}
	max := a.MaxTurns
	if max <= 0 {
		max = DefaultMaxTurns
	}
	var msgs []*ai.Message
	if system != "" {
		msgs = append(msgs, ai.NewSystemTextMessage(system))
	}
	msgs = append(msgs, ai.NewUserTextMessage(prompt))
	opts := append([]ai.GenerateOption{ai.WithModelName(a.Model), ai.WithMessages(msgs...), ai.WithMaxTurns(max)}, ts.GenerateOptions()...)
	resp, err := genkit.Generate(ctx, a.Genkit, opts...)
	if err != nil {
		return "", fmt.Errorf("loomgenkit: %s: %w", c.Strand, err)
	}
	return resp.Text(), nil
}

// Runner returns a as the plane's sub-agent Runner (plane.Config.Runner):
// each child runs its own Generate call with the tools it holds, its
// Notice as the system message, and its calls dispatched at its
// coordinates (Plane.CallFor(turn.Strand, turn.Operation)). Genkit's
// loop runs to the end in one call, so messages sent to a running child
// are not drained mid-run: they reach it at its next continuation.
func (a *Agent) Runner() agent.Runner {
	return agent.RunnerFunc(func(ctx context.Context, t agent.Turn) (string, error) {
		return a.Run(ctx, a.Plane.CallFor(t.Strand, t.Operation), t.Notice, t.Prompt)
	})
}
