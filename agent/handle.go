package agent

import (
	"strconv"
	"strings"
)

// maxHandleBytes bounds the text of a handle a model may pass back. A
// minted strand name stays well inside it.
const maxHandleBytes = 512

// Handle names one operation (one run) of one strand: a spawn's first run
// or a continuation started by Send. Its text form is
// "{strand}#{operation}".
type Handle struct {
	// Strand is the durable name of the agent.
	Strand string
	// Operation names one run of that strand.
	Operation string
}

// String returns the handle's text form, "{strand}#{operation}".
func (h Handle) String() string { return h.Strand + "#" + h.Operation }

// ParseHandle reads a handle's text form. It is total: every input yields
// either a Handle or a *Refusal with CodeMalformedHandle, never a panic.
//
// An "@{orchestrator}" suffix after the operation is read and dropped: it
// is a hint for the model, and nothing is ever routed by a suffix a model
// typed. An empty suffix or a second "@" is malformed.
func ParseHandle(s string) (Handle, error) {
	bad := func(why string) (Handle, error) {
		return Handle{}, refuse(CodeMalformedHandle,
			"%s; a handle is {strand}#{operation}, exactly as agent_spawn or agent_send returned it", why)
	}
	if len(s) > maxHandleBytes {
		return bad("the handle is longer than " + strconv.Itoa(maxHandleBytes) + " bytes")
	}
	if strings.TrimSpace(s) != s {
		return bad("the handle has surrounding spaces")
	}
	strand, rest, ok := strings.Cut(s, "#")
	if !ok {
		return bad("the handle has no '#'")
	}
	if strings.Contains(rest, "#") {
		return bad("the handle has more than one '#'")
	}
	if strand == "" {
		return bad("the strand part is empty")
	}
	if strings.Contains(strand, "@") {
		return bad("the strand part contains '@'")
	}
	op, suffix, hasSuffix := strings.Cut(rest, "@")
	if hasSuffix {
		if suffix == "" {
			return bad("the '@' suffix is empty")
		}
		if strings.Contains(suffix, "@") {
			return bad("the handle has more than one '@'")
		}
	}
	if op == "" {
		return bad("the operation part is empty")
	}
	for _, r := range strand + op + suffix {
		if r < 0x21 || r == 0x7f {
			return bad("the handle contains a space or control character")
		}
	}
	return Handle{Strand: strand, Operation: op}, nil
}
