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
type Registry struct {
	mu    sync.RWMutex
	tools map[string]Tool
	order []string
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
	// Code is "empty_name", "duplicate_name", "no_run" or "bad_schema".
	Code   string
	Name   string
	Reason string
}

func (e *RegisterError) Error() string {
	return fmt.Sprintf("tool %q: %s", e.Name, e.Reason)
}

// Register adds t. It refuses an empty or duplicate name, a nil Run, and a
// Schema that is not a JSON object schema.
func (r *Registry) Register(t Tool) error {
	if t.Name == "" {
		return &RegisterError{Code: "empty_name", Reason: "a tool needs a name"}
	}
	if t.Run == nil {
		return &RegisterError{Code: "no_run", Name: t.Name, Reason: "a tool needs a Run function"}
	}
	var s struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(t.Schema, &s); err != nil || s.Type != "object" {
		return &RegisterError{Code: "bad_schema", Name: t.Name, Reason: "Schema must be a JSON object schema (type \"object\")"}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tools == nil {
		r.tools = map[string]Tool{}
	}
	if _, dup := r.tools[t.Name]; dup {
		return &RegisterError{Code: "duplicate_name", Name: t.Name, Reason: "already registered"}
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
// name's outcome has no Details, since no tool's details contract applies.
func (r *Registry) Dispatch(ctx context.Context, c *Call, name string, args json.RawMessage) (out Outcome) {
	t, ok := r.Lookup(name)
	if !ok {
		return Outcome{IsError: true, Text: fmt.Sprintf("unknown tool %q; available tools: %s", name, strings.Join(r.Names(), ", "))}
	}
	if c == nil {
		c = &Call{}
	}
	defer func() {
		if p := recover(); p != nil {
			out = Fail("tool_panicked", fmt.Sprintf("tool %s failed internally (a bug in the tool, not in your arguments): %v", name, p))
			out.Details = PanicDetails{Error: "tool_panicked", Stack: string(debug.Stack())}
		}
	}()
	if err := ctx.Err(); err != nil {
		return Fail("cancelled", fmt.Sprintf("tool %s was not run: %v", name, cancelCause(ctx)))
	}
	return t.Run(ctx, c, args)
}

// PanicDetails is the Details of an outcome recovered from a panic.
type PanicDetails struct {
	Error string `json:"error"`
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
