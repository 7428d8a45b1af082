package agent

import (
	"context"
	"time"
)

// Turn is one child run handed to the host's Runner.
type Turn struct {
	// Strand is the child's durable name; the host dispatches its tool
	// calls with it as tool.Call.Strand.
	Strand string
	// Operation names this run; the host dispatches its tool calls with
	// it as tool.Call.OpID.
	Operation string
	// Parent is the strand that spawned the child.
	Parent string
	// Purpose is the purpose the child was first spawned for.
	Purpose string
	// Prompt is the spawn's prompt, or the message(s) that started a
	// continuation.
	Prompt string
	// Earlier is the strand's earlier runs, oldest first, as the Agency
	// recorded them: what each was asked and what it reported. A
	// continuation (agent_send to a strand whose run ended) shows them to
	// the model before Prompt, so the child answers knowing what it did.
	// It holds the newest runs whose prompts and reports fit in
	// MaxEarlierBytes, each prompt and report cut to 16 KiB;
	// EarlierOmitted counts the older runs left out. Empty on a spawn's
	// first run.
	Earlier []Exchange
	// EarlierOmitted is how many earlier runs, oldest first, Earlier
	// leaves out.
	EarlierOmitted int
	// Tools is the child's tool set; Model its model ("" = host routing).
	Tools []string
	Model string
	// Notice tells the child its real tool set, that its final message is
	// its report, and where a result contract wants its value. A runner
	// shows it to the model (for example as a system message).
	Notice string
	// Result is the spawn's contract, or nil.
	Result *ResultSchema
	// Deadline is when the run is aborted.
	Deadline time.Time
	// Inbox drains the messages sent to the strand while it runs. A
	// runner calls it between model steps; messages never drained are
	// prepended to the strand's next continuation.
	Inbox func() []string
}

// Exchange is one earlier run of a strand: what started it and what it
// answered.
type Exchange struct {
	// Operation names the run ("run-1", ...).
	Operation string
	// Prompt is the spawn's prompt or the continuation's messages,
	// followed by the messages the run drained from its inbox.
	Prompt string
	// Report is the run's final text, or what ended it (a failure, an
	// abort).
	Report string
	// State is how the run ended.
	State State
	// Cut is true when Prompt or Report was cut to its 16 KiB.
	Cut bool
}

// Bounds of Turn.Earlier.
const (
	// MaxEarlierBytes bounds the prompt and report bytes Turn.Earlier
	// carries in all.
	MaxEarlierBytes = 64 << 10
	// maxExchangeBytes bounds one Exchange's Prompt, and its Report.
	maxExchangeBytes = 16 << 10
)

// Runner runs one child turn (a model with its tools, until it gives a
// final answer) and returns that final text. It must honour ctx: its
// deadline is the run's budget. A continued strand's earlier runs come in
// Turn.Earlier, and the Runner shows them to the model; one that keeps
// its own transcripts (keyed by Turn.Strand, tool calls included) may
// show those instead. A Runner is called from its own goroutine and must
// be safe for concurrent use. The host dispatches the child's tool calls
// with a tool.Call whose Strand is Turn.Strand and whose OpID is
// Turn.Operation.
type Runner interface {
	Run(ctx context.Context, t Turn) (string, error)
}

// RunnerFunc adapts a function to Runner.
type RunnerFunc func(ctx context.Context, t Turn) (string, error)

// Run calls f.
func (f RunnerFunc) Run(ctx context.Context, t Turn) (string, error) { return f(ctx, t) }
