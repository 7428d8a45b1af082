package loomeino

import (
	"context"
	"errors"
	"strings"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/plane"
)

// DefaultMaxTurns bounds a sub-agent's model turns when Runner.MaxTurns is
// zero or less.
const DefaultMaxTurns = 50

// Model wraps m so that each of its turns is a step of s's run: the calls
// of the Nth reply dispatch at step "step-N", each at its position. Wrap
// the model of the one run s serves, before that run starts.
func (s *Toolset) Model(m model.ToolCallingChatModel) model.ToolCallingChatModel {
	if s.turns == nil {
		s.turns = &turns{}
	}
	return &stepModel{m: m, turns: s.turns}
}

// stepModel is a chat model whose replies are numbered as steps. With
// limit set, a reply numbered limit.MaxTurns or later that calls tools
// is refused with limit.
type stepModel struct {
	m     model.ToolCallingChatModel
	turns *turns
	limit *agent.TurnLimitError
}

func (s *stepModel) Generate(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.Message, error) {
	msg, err := s.m.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return msg, s.record(msg)
}

// record places msg's calls and refuses a reply past the limit.
func (s *stepModel) record(msg *schema.Message) error {
	n := s.turns.record(msg)
	if s.limit != nil && msg != nil && n >= s.limit.MaxTurns && len(msg.ToolCalls) > 0 {
		return s.limit
	}
	return nil
}

// Stream gathers the reply before handing it on, so its calls are placed
// before any of them runs.
func (s *stepModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	sr, err := s.m.Stream(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	msg, err := schema.ConcatMessageStream(sr)
	if err != nil {
		return nil, err
	}
	if err := s.record(msg); err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

func (s *stepModel) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	m, err := s.m.WithTools(tools)
	if err != nil {
		return nil, err
	}
	return &stepModel{m: m, turns: s.turns, limit: s.limit}, nil
}

// Runner is an agent.Runner that runs each sub-agent's turn with eino's
// ReAct agent over the child's tools: plane.Config{Runner: r} makes
// agent_spawn work inside eino. The turn's Notice is the system message,
// its Prompt the first user message, and messages sent to the child
// while it runs (Turn.Inbox) join the conversation as a user message
// before the next model turn. Its report is the final message's text.
// A Runner is safe for concurrent use.
type Runner struct {
	// Plane is the plane the children's calls are dispatched through.
	// It may be set after plane.New returned (the Runner is first called
	// when a model spawns).
	Plane *plane.Plane
	// Model returns the chat model of a turn whose Turn.Model is name
	// ("" leaves the choice to the host).
	Model func(ctx context.Context, name string) (model.ToolCallingChatModel, error)
	// MaxTurns bounds one run's model replies; zero or less means
	// DefaultMaxTurns. When the last reply still calls tools, those
	// calls are not run and Run returns a *agent.TurnLimitError.
	MaxTurns int
}

// Run runs one child turn and returns its report.
func (r *Runner) Run(ctx context.Context, t agent.Turn) (string, error) {
	if r.Plane == nil || r.Model == nil {
		return "", errors.New("loomeino: Runner needs its Plane and Model set")
	}
	m, err := r.Model(ctx, t.Model)
	if err != nil {
		return "", err
	}
	set := NewToolset(r.Plane.Dispatcher(), r.Plane.CallFor(t.Strand, t.Operation))
	set.Only = t.Tools
	turns := r.MaxTurns
	if turns <= 0 {
		turns = DefaultMaxTurns
	}
	limit := &agent.TurnLimitError{Strand: t.Strand, MaxTurns: turns}
	cfg := &react.AgentConfig{
		ToolCallingModel: &stepModel{m: m, turns: set.turns, limit: limit},
		ToolsConfig:      set.Config(ctx),
		// eino counts each model turn and each batch of tool calls as a
		// step of its graph; the model's limit ends the run first.
		MaxStep: 2*turns + 2,
	}
	if t.Inbox != nil {
		cfg.MessageRewriter = func(_ context.Context, msgs []*schema.Message) []*schema.Message {
			if in := t.Inbox(); len(in) > 0 {
				msgs = append(msgs, schema.UserMessage(strings.Join(in, "\n\n")))
			}
			return msgs
		}
	}
	a, err := react.NewAgent(ctx, cfg)
	if err != nil {
		return "", err
	}
	var msgs []*schema.Message
	if t.Notice != "" {
		msgs = append(msgs, schema.SystemMessage(t.Notice))
	}
	msgs = append(msgs, schema.UserMessage(t.Prompt))
	out, err := a.Generate(ctx, msgs)
	if errors.As(err, &limit) {
		return "", limit
	}
	if err != nil {
		return "", err
	}
	return report(out), nil
}

// report is the text of a run's final message: its content, or the text
// parts of a tool result that ended the run (tool.Outcome.Terminate).
func report(m *schema.Message) string {
	if m == nil || m.Content != "" {
		if m == nil {
			return ""
		}
		return m.Content
	}
	var parts []string
	for _, p := range m.UserInputMultiContent {
		if p.Type == schema.ChatMessagePartTypeText {
			parts = append(parts, p.Text)
		}
	}
	return strings.Join(parts, "\n")
}
