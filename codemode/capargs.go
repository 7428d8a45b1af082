package codemode

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/agentloom/loom/tool"
)

// capArgs are the decoded arguments of one cap_call, as the wire decoder
// gives them: nil, bool, int64, uint64, float64, string, []byte, []any
// or map[string]any values. Every accessor refuses a missing required
// argument, a value of another type and an argument the capability does
// not take, with codeInvalidCapabilityArguments naming the capability,
// the argument and what would be accepted.
type capArgs struct {
	cap  string
	m    map[string]any
	used map[string]bool
	err  error
}

func newCapArgs(cap string, m map[string]any) *capArgs {
	return &capArgs{cap: cap, m: m, used: map[string]bool{}}
}

// maxArgumentQuoteBytes bounds a value a refusal of capability arguments
// quotes.
const maxArgumentQuoteBytes = 64

func (a *capArgs) fail(name, want string) {
	if a.err == nil {
		a.err = &CapError{Code: codeInvalidCapabilityArguments,
			Message: fmt.Sprintf("%s: argument %q must be %s", a.cap, name, want)}
	}
}

func (a *capArgs) get(name string, required bool, want string) (any, bool) {
	a.used[name] = true
	v, ok := a.m[name]
	if !ok || v == nil {
		if required {
			a.fail(name, want+" (it is required)")
		}
		return nil, false
	}
	return v, true
}

func (a *capArgs) str(name string, required bool) string {
	v, ok := a.get(name, required, "a string")
	if !ok {
		return ""
	}
	switch s := v.(type) {
	case string:
		return s
	case []byte:
		return string(s)
	}
	a.fail(name, "a string")
	return ""
}

// bytes accepts bin or str: a payload a program built either way.
func (a *capArgs) bytes(name string, required bool) []byte {
	v, ok := a.get(name, required, "bytes")
	if !ok {
		return nil
	}
	switch b := v.(type) {
	case []byte:
		return b
	case string:
		return []byte(b)
	}
	a.fail(name, "bytes")
	return nil
}

func (a *capArgs) boolean(name string) bool {
	v, ok := a.get(name, false, "a boolean")
	if !ok {
		return false
	}
	b, isBool := v.(bool)
	if !isBool {
		a.fail(name, "a boolean")
	}
	return b
}

// integer returns an integer argument within [lo, hi], or def when absent.
func (a *capArgs) integer(name string, def, lo, hi int64) int64 {
	v, ok := a.get(name, false, "an integer")
	if !ok {
		return def
	}
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case uint64:
		n = math.MaxInt64
	case float64:
		if x != math.Trunc(x) || math.IsInf(x, 0) || math.IsNaN(x) {
			a.fail(name, fmt.Sprintf("an integer from %d to %d", lo, hi))
			return def
		}
		n = int64(max(min(x, math.MaxInt64), math.MinInt64))
	default:
		a.fail(name, "an integer")
		return def
	}
	if n < lo || n > hi {
		a.fail(name, fmt.Sprintf("an integer from %d to %d (got %d)", lo, hi, n))
		return def
	}
	return n
}

func (a *capArgs) strings(name string, required bool) []string {
	v, ok := a.get(name, required, "a list of strings")
	if !ok {
		return nil
	}
	list, isList := v.([]any)
	if !isList {
		a.fail(name, "a list of strings")
		return nil
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, isStr := e.(string)
		if !isStr {
			a.fail(name, "a list of strings")
			return nil
		}
		out = append(out, s)
	}
	return out
}

func (a *capArgs) list(name string, required bool) []any {
	v, ok := a.get(name, required, "a list")
	if !ok {
		return nil
	}
	list, isList := v.([]any)
	if !isList {
		a.fail(name, "a list")
	}
	return list
}

// done reports the first refusal, or an argument the capability does not
// take.
func (a *capArgs) done() error {
	if a.err != nil {
		return a.err
	}
	extra := false
	for k := range a.m {
		if !a.used[k] {
			extra = true
			break
		}
	}
	if !extra {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(a.m)) {
		if !a.used[k] {
			return &CapError{Code: codeInvalidCapabilityArguments,
				Message: fmt.Sprintf("%s takes no argument %s; it takes %s", a.cap, quoteArg(k), strings.Join(slices.Sorted(maps.Keys(a.used)), ", "))}
		}
	}
	return nil
}

func quoteArg(s string) string {
	if len(s) > maxArgumentQuoteBytes {
		return fmt.Sprintf("%q… (%d bytes)", s[:maxArgumentQuoteBytes], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// CapError is a refusal with a code to switch on and a sentence to act
// on. A capability call's refusal reaches the program as one, in band; an
// Engine method returns one for its own refusals (CodeUnknownSeam,
// CodeRunJailUnavailable, CodeEngineClosed, a permissions refusal).
type CapError struct {
	Code    tool.Code
	Message string
}

func (e *CapError) Error() string { return string(e.Code) + ": " + e.Message }

// ErrorCode returns e.Code as a string, so tool.CodeOf reads it (see
// tool.CodedError).
func (e *CapError) ErrorCode() string { return string(e.Code) }
