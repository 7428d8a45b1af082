package tool

import (
	"context"
	"encoding/json"

	"github.com/agentloom/loom/broker"
)

// ReplaySafety says whether a call may be executed again after a crash
// left its outcome unknown.
type ReplaySafety int

const (
	// ReplaySafe tools may be re-executed: they read, write idempotently,
	// or are bound to a pre-image (fs_edit's digest) so a repeat cannot
	// double-apply.
	ReplaySafe ReplaySafety = iota
	// ReplayNever tools have external effects that must not repeat; a host
	// recovering from a crash answers them with a synthetic interrupted
	// outcome instead.
	ReplayNever
)

// String returns "safe" or "never".
func (r ReplaySafety) String() string {
	if r == ReplayNever {
		return "never"
	}
	return "safe"
}

// ExecMode is a scheduling constraint on a batch of calls.
type ExecMode int

const (
	// Concurrent tools may run beside any other call of the same batch.
	Concurrent ExecMode = iota
	// Exclusive tools may mutate shared state and run alone.
	Exclusive
)

// String returns "concurrent" or "exclusive".
func (m ExecMode) String() string {
	if m == Exclusive {
		return "exclusive"
	}
	return "concurrent"
}

// Tool is one capability offered to a model. A Tool is a plain value; the
// Registry holds it by Name.
type Tool struct {
	// Name is what the model calls; unique within a Registry.
	Name string
	// Description is the model-facing documentation, including every bound
	// the model needs to know.
	Description string
	// PromptSnippet is one line for the host's tool index. An empty snippet
	// omits the tool from the index only; it stays callable.
	PromptSnippet string
	// Schema is the JSON Schema of the arguments: an object of named
	// properties. Typed derives it from the argument struct.
	Schema json.RawMessage
	// Replay says whether the call may be re-executed after a crash.
	Replay ReplaySafety
	// Mode says whether the call may share its batch.
	Mode ExecMode
	// Requirements, when set, states what the tool's jailed work needs
	// under the given workspace root. Tools that clear nothing through
	// the broker leave it nil (the empty policy).
	Requirements func(workspace string) broker.Policy
	// Run executes one call. It must return every failure as an Outcome.
	Run func(ctx context.Context, c *Call, args json.RawMessage) Outcome
}

// Outcome is what a call returns to the model.
type Outcome struct {
	// Text is what the model reads.
	Text string
	// IsError marks an outcome the model should repair from.
	IsError bool
	// Code says why the call failed: set on every outcome with IsError,
	// empty on every other. It is the one place a host, a program and a
	// test read a failure's reason, whichever tool returned it.
	Code Code
	// Images are returned beside Text, for vision-capable providers.
	Images []Image
	// Details is structured data for the host and for programs; providers
	// do not show it to the model, so anything the model needs is in Text.
	// It never repeats Code.
	Details any
	// Terminate asks the host to end the run once this call's batch
	// settles. No built-in tool sets it.
	Terminate bool
}

// Image is image content returned by a tool.
type Image struct {
	MIME string
	Data []byte
}

// Success returns a successful outcome with the given text.
func Success(text string) Outcome { return Outcome{Text: text} }

// Fail returns an error outcome coded code, whose text the model reads.
func Fail(code Code, text string) Outcome {
	return Outcome{Text: text, IsError: true, Code: code}
}

// WithDetails returns o with Details replaced by d.
func (o Outcome) WithDetails(d any) Outcome {
	o.Details = d
	return o
}
