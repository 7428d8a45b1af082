package tool

import (
	"context"
	"encoding/json"

	"github.com/agentloom/loom/sandbox"
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
	// Title is a short name for people (an MCP client shows it); empty
	// means Name.
	Title string
	// Description is the model-facing documentation, including every bound
	// the model needs to know.
	Description string
	// PromptSnippet is one line for the host's tool index. An empty snippet
	// omits the tool from the index only; it stays callable.
	PromptSnippet string
	// Schema is the JSON Schema of the arguments: an object of named
	// properties. Typed derives it from the argument struct.
	Schema json.RawMessage
	// ReadOnly says the call changes nothing: it reads (files, the
	// history, a job's output, the blackboard) and leaves everything as
	// it found it, whatever its Replay (a poll's cursor is the caller's).
	// MCP calls it readOnlyHint.
	ReadOnly bool
	// Replay says whether the call may be re-executed after a crash.
	Replay ReplaySafety
	// Mode says whether the call may share its batch.
	Mode ExecMode
	// Requirements, when set, states what the tool's jailed work needs
	// under the given workspace root. Tools that clear nothing through
	// the broker leave it nil (the empty policy).
	Requirements func(workspace string) sandbox.Policy
	// Run executes one call. It must return every failure as an Outcome.
	Run func(ctx context.Context, c *Call, args json.RawMessage) Outcome
}

// Outcome is what a call returns to the model. Registry.Dispatch bounds
// every outcome it returns, whichever tool made it: Text to
// MaxOutcomeBytes, Details to MaxOutcomeBytes of JSON, Images to
// MaxOutcomeImages totalling MaxOutcomeImageBytes.
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

// The bounds Registry.Dispatch holds every outcome to, so no tool can
// answer unbounded. A host sizes its buffers by them: one outcome's Text,
// Details' JSON and Images together are at most 2*MaxOutcomeBytes +
// MaxOutcomeImageBytes.
const (
	// MaxOutcomeBytes bounds an outcome's Text, and on its own the JSON
	// encoding (encoding/json.Marshal) of its Details: 2 MiB, above every
	// built-in tool's own maximum (the largest, agent_notes' Details, is
	// 64 notes of at most 16 KiB). Longer Text is cut on a rune boundary
	// and ends with a line saying so and how long it was; longer Details
	// are replaced by OmittedDetails.
	MaxOutcomeBytes = 2 << 20
	// MaxOutcomeImages bounds how many images one outcome carries.
	MaxOutcomeImages = 8
	// MaxOutcomeImageBytes bounds the bytes of one outcome's images
	// together: the largest image fs_read returns (MaxFileBytes).
	// Dispatch keeps images in order while both image bounds hold and
	// says in Text how many it left out.
	MaxOutcomeImageBytes = MaxFileBytes
)

// OmittedDetails stands in for Details that Registry.Dispatch did not
// return, because their JSON encoding is longer than MaxOutcomeBytes or
// because they have none. Code and IsError are kept as the tool set them.
type OmittedDetails struct {
	// Type is the Go type of the Details left out, as %T prints it.
	Type string `json:"type"`
	// Bytes is the length of their JSON encoding; 0 when encoding failed.
	Bytes int `json:"bytes,omitempty"`
	// Error says why encoding failed (cut past MaxReasonBytes); empty
	// when the Details were only too long.
	Error string `json:"error,omitempty"`
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

// ModelText is the text a model reads for o where its API carries no
// error flag: o.Text, prefixed with "error <code>: " when o is an error
// ("error: " when it has no code). Images are not in it. Adapters and
// hosts use it so every model reads failures one way.
func (o Outcome) ModelText() string {
	switch {
	case !o.IsError:
		return o.Text
	case o.Code == "":
		return "error: " + o.Text
	}
	return "error " + string(o.Code) + ": " + o.Text
}

// WithDetails returns o with Details replaced by d.
func (o Outcome) WithDetails(d any) Outcome {
	o.Details = d
	return o
}
