package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
)

// Registry maps tool names to Tools and dispatches calls to them. It
// remembers registration order as well as the table: Names is sorted (a
// provider's cached prefix must not depend on registration order), while
// Registered and Snippets keep the order tools were registered in. A
// Registry is safe for concurrent use.
//
// A registry may be gated by who holds which tool (SetHolds): then
// Dispatch refuses, before the tool runs, a call by a strand that does not
// hold it. Without a gate every strand holds every tool.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]Tool
	order []string
	holds HoldsFunc
}

// HoldsFunc reports whether strand (a Call's Strand) holds the tool named
// tool right now. It must be safe for concurrent use and must not call
// back into the Registry's Dispatch. A gate that cannot judge (an unknown
// strand, a fault) answers false: Dispatch then refuses, failing closed.
type HoldsFunc func(ctx context.Context, strand, tool string) bool

// maxHeldListed bounds how many held tool names a tool_not_held refusal
// lists; the rest are counted.
const maxHeldListed = 32

// NotHeldDetails is the Details of a tool_not_held outcome.
type NotHeldDetails struct {
	// Tool is the tool that was called; Strand the caller.
	Tool   string `json:"tool"`
	Strand string `json:"strand"`
	// Held lists, sorted, at most 32 (maxHeldListed) of the registered tools
	// the strand does hold; HeldMore counts those left off.
	Held     []string `json:"held"`
	HeldMore int      `json:"held_more,omitempty"`
}

// SetHolds gates r: from now on Dispatch runs a call only when holds
// answers true for the call's Strand and the tool's name, and refuses it
// otherwise, before the tool runs, with an error outcome coded
// CodeToolNotHeld that names the tool, the strand and the registered
// tools the strand does hold. A nil holds removes the gate (every strand
// holds every tool, as in a registry never gated). An unknown tool name
// is still answered as unknown, whoever calls it.
func (r *Registry) SetHolds(holds HoldsFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holds = holds
}

// Holds reports whether Dispatch would let strand call the tool named
// name: false when no such tool is registered, true in an ungated
// registry, else what the gate SetHolds installed answers. It is the one
// holds check, for callers that act on a tool's authority without
// calling it (code mode's capabilities).
func (r *Registry) Holds(ctx context.Context, strand, name string) bool {
	r.mu.RLock()
	_, ok := r.tools[name]
	holds := r.holds
	r.mu.RUnlock()
	return ok && (holds == nil || holds(ctx, strand, name))
}

// NewRegistry returns a registry holding tools, in order. It fails like
// Register on the first tool Register would refuse.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{tools: map[string]Tool{}}
	for _, t := range tools {
		if err := r.Register(t); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// RegisterError is a host programming error found by Register.
type RegisterError struct {
	// Code is CodeEmptyName, CodeDuplicateName, CodeNoRun or
	// CodeBadSchema.
	Code   Code
	Name   string
	Reason string
}

// ErrorCode returns e.Code as a string (see CodedError).
func (e *RegisterError) ErrorCode() string { return string(e.Code) }

func (e *RegisterError) Error() string {
	return fmt.Sprintf("tool %q: %s", e.Name, e.Reason)
}

// Register adds t. It refuses an empty or duplicate name, a nil Run, and a
// Schema that is not a JSON object schema.
func (r *Registry) Register(t Tool) error {
	if t.Name == "" {
		return &RegisterError{Code: CodeEmptyName, Reason: "a tool needs a name"}
	}
	if t.Run == nil {
		return &RegisterError{Code: CodeNoRun, Name: t.Name, Reason: "a tool needs a Run function"}
	}
	var s struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(t.Schema, &s); err != nil || s.Type != "object" {
		return &RegisterError{Code: CodeBadSchema, Name: t.Name, Reason: "Schema must be a JSON object schema (type \"object\")"}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tools == nil {
		r.tools = map[string]Tool{}
	}
	if _, dup := r.tools[t.Name]; dup {
		return &RegisterError{Code: CodeDuplicateName, Name: t.Name, Reason: "already registered"}
	}
	r.tools[t.Name] = t
	r.order = append(r.order, t.Name)
	return nil
}

// Lookup returns the tool registered under name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	return t, ok
}

// Dispatch runs one call. It is total: an unknown name, bad arguments and
// even a panic inside the tool come back as an error Outcome. An unknown
// name is coded CodeUnknownTool and has no Details, since no tool's
// details contract applies.
// In a gated registry (SetHolds) a call by a strand that does not hold the
// tool is refused with CodeToolNotHeld before the tool runs.
// Every outcome it returns, the refusals and a recovered panic's too, is
// bounded: Text to MaxOutcomeBytes (cut on a rune boundary, saying where
// and how long it was), Details to MaxOutcomeBytes of JSON (else
// OmittedDetails, as for Details that do not encode: a host's
// json.Marshal of them never fails), Images to MaxOutcomeImages
// totalling MaxOutcomeImageBytes (the rest left out, saying so in Text).
func (r *Registry) Dispatch(ctx context.Context, c *Call, name string, args json.RawMessage) Outcome {
	return bound(r.dispatch(ctx, c, name, args))
}

// dispatch is Dispatch before its outcome is bounded.
func (r *Registry) dispatch(ctx context.Context, c *Call, name string, args json.RawMessage) (out Outcome) {
	r.mu.RLock()
	t, ok := r.tools[name]
	holds := r.holds
	r.mu.RUnlock()
	if !ok {
		return Fail(CodeUnknownTool, fmt.Sprintf("unknown tool %s; available tools: %s", quoted(name), strings.Join(r.Names(), ", ")))
	}
	if c == nil {
		c = &Call{}
	}
	if c.Broker != nil && jailOf(c.Broker) == nil {
		// A nil pointer in Broker runs no commands: every tool sees nil.
		cc := *c
		cc.Broker = nil
		c = &cc
	}
	if holds != nil && !holds(ctx, c.Strand, name) {
		return r.notHeld(ctx, holds, c.Strand, name)
	}
	defer func() {
		if p := recover(); p != nil {
			out = Fail(CodeToolPanicked, fmt.Sprintf("tool %s failed internally (a bug in the tool, not in your arguments): %v", name, p))
			out.Details = PanicDetails{Stack: string(debug.Stack())}
		}
	}()
	if err := ctx.Err(); err != nil {
		return Fail(CodeCancelled, fmt.Sprintf("tool %s was not run: %v", name, cancelCause(ctx)))
	}
	return t.Run(ctx, c, args)
}

// notHeld builds the refusal of a call to name by a strand that does not
// hold it, listing (bounded) the registered tools it does hold.
func (r *Registry) notHeld(ctx context.Context, holds HoldsFunc, strand, name string) Outcome {
	d := NotHeldDetails{Tool: name, Strand: strand, Held: []string{}}
	for _, n := range r.Names() {
		if !holds(ctx, strand, n) {
			continue
		}
		if len(d.Held) == maxHeldListed {
			d.HeldMore++
			continue
		}
		d.Held = append(d.Held, n)
	}
	held := "none of this host's tools"
	if len(d.Held) > 0 {
		held = strings.Join(d.Held, ", ")
		if d.HeldMore > 0 {
			held += fmt.Sprintf(" and %d more", d.HeldMore)
		}
	}
	return Fail(CodeToolNotHeld, fmt.Sprintf("tool %s was not run: strand %q does not hold it; the tools it holds: %s", name, strand, held)).WithDetails(d)
}

// PanicDetails is the Details of an outcome recovered from a panic.
type PanicDetails struct {
	Stack string `json:"stack"`
}

func cancelCause(ctx context.Context) error {
	if c := context.Cause(ctx); c != nil && !errors.Is(c, ctx.Err()) {
		return c
	}
	return ctx.Err()
}

// Names returns every registered name, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := append([]string(nil), r.order...)
	sort.Strings(names)
	return names
}

// Registered returns every tool in registration order.
func (r *Registry) Registered() []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Tool, len(r.order))
	for i, n := range r.order {
		out[i] = r.tools[n]
	}
	return out
}

// Snippet is one line of a host's tool index.
type Snippet struct {
	Name string
	Line string
}

// Snippets returns the prompt snippets of tools that have one, in
// registration order.
func (r *Registry) Snippets() []Snippet {
	var out []Snippet
	for _, t := range r.Registered() {
		if t.PromptSnippet != "" {
			out = append(out, Snippet{Name: t.Name, Line: t.PromptSnippet})
		}
	}
	return out
}

// Declaration is the scheduling-relevant part of a Tool.
type Declaration struct {
	Replay ReplaySafety
	Mode   ExecMode
}

// Declarations is a registry projected to one Declaration per name,
// without the closures: cheap to copy into every part of a host that
// schedules or replays calls, and no way back to the tools.
type Declarations struct {
	m map[string]Declaration
}

// Declarations returns the current projection; later registrations do not
// change it.
func (r *Registry) Declarations() Declarations {
	r.mu.RLock()
	defer r.mu.RUnlock()
	m := make(map[string]Declaration, len(r.tools))
	for n, t := range r.tools {
		m[n] = Declaration{Replay: t.Replay, Mode: t.Mode}
	}
	return Declarations{m: m}
}

// Declared returns the declaration of name.
func (d Declarations) Declared(name string) (Declaration, bool) {
	x, ok := d.m[name]
	return x, ok
}
