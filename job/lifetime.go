package job

import (
	"fmt"

	"github.com/agentloom/loom/tool"
)

// Lifetime says how long a job may run.
type Lifetime string

const (
	// LifetimeDefault (also the empty value) bounds a job by a finite
	// wall: Spec.Wall, else the plane's default, clamped to the plane's
	// maximum.
	LifetimeDefault Lifetime = "default"
	// LifetimeSession asks for no wall deadline: the job runs until it
	// ends, its owner kills it, its operation is aborted or the plane
	// closes. Sub-agents (tool.IsSubagent) may not ask for it.
	LifetimeSession Lifetime = "session"
)

// CheckLifetime refuses a LifetimeSession asked by a sub-agent strand
// with a *LifetimeError. It runs ahead of every other check, so such a
// request raises no approval and starts nothing; anything other than the
// two lifetimes is refused too.
func CheckLifetime(strand string, l Lifetime) error {
	switch l {
	case "", LifetimeDefault:
		return nil
	case LifetimeSession:
		if tool.IsSubagent(strand) {
			return &LifetimeError{Code: CodeLifetimeRefused, Lifetime: l,
				Reason: "a sub-agent's jobs end with it, so it may not start a session-lifetime job; use the default lifetime"}
		}
		return nil
	}
	return &LifetimeError{Code: CodeLifetimeRefused, Lifetime: l,
		Reason: fmt.Sprintf("unknown lifetime %q; use %q or %q", l, LifetimeDefault, LifetimeSession)}
}

// LifetimeError refuses a lifetime before anything runs.
type LifetimeError struct {
	// Code is CodeLifetimeRefused.
	Code     tool.Code
	Lifetime Lifetime
	// Reason says why, for the model.
	Reason string
}

// ErrorCode returns e.Code as a string (see tool.CodedError).
func (e *LifetimeError) ErrorCode() string { return string(e.Code) }

// Error renders the refusal with its reason.
func (e *LifetimeError) Error() string {
	return "lifetime " + string(e.Lifetime) + " refused: " + e.Reason
}
