package mcpgen

import (
	"bytes"
	"encoding/json"
	"strings"
)

// MaxToolErrorBytes bounds the message of a CodeToolError refusal: the
// tool's text, cut.
const MaxToolErrorBytes = 4 << 10

// DecodeArguments returns the JSON object a generated function's call
// carries, from the call's args as the channel decoded them:
// {"arguments": bin or str}, nothing else, holding a JSON object (null,
// a nil input of a map type, is the empty object). The object is
// returned as the function sent it, ready for tools/call's arguments.
// The error is CodeArgumentsInvalid.
func DecodeArguments(args map[string]any) (json.RawMessage, error) {
	var b []byte
	switch v := args["arguments"].(type) {
	case []byte:
		b = v
	case string:
		b = []byte(v)
	default:
		return nil, &Error{Code: CodeArgumentsInvalid, Message: `the call's args must be {"arguments": the JSON object, as bytes}`}
	}
	if len(args) != 1 {
		return nil, &Error{Code: CodeArgumentsInvalid, Message: `the call's args hold more than "arguments"`}
	}
	t := bytes.TrimSpace(b)
	if string(t) == "null" {
		return json.RawMessage("{}"), nil
	}
	if len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		return nil, &Error{Code: CodeArgumentsInvalid, Message: "the arguments are not a JSON object"}
	}
	return json.RawMessage(t), nil
}

// CallResult is what a server answered one tools/call, as the host
// hands it to Answer.
type CallResult struct {
	// Structured is the answer's structuredContent, nil when it has none.
	Structured json.RawMessage
	// Text is its content as text: the text parts, and whatever the host
	// says of the others (images, resources).
	Text string
	// IsError is the answer's isError: the tool reports failure.
	IsError bool
}

// Answer is the "ok" map of the cap_result answering a generated
// function's call with r: {"structured": bytes or nil, "text": string}.
// When r.IsError, it is instead an *Error with CodeToolError whose
// message is r.Text, cut to MaxToolErrorBytes, for the host to answer in
// band.
func Answer(r CallResult) (map[string]any, error) {
	if r.IsError {
		msg := r.Text
		if len(msg) > MaxToolErrorBytes {
			msg = strings.ToValidUTF8(msg[:MaxToolErrorBytes], "") + "…"
		}
		return nil, &Error{Code: CodeToolError, Message: msg}
	}
	var structured any // nil: the tool sent none
	if s := bytes.TrimSpace(r.Structured); len(s) > 0 && string(s) != "null" {
		structured = []byte(s)
	}
	return map[string]any{"structured": structured, "text": r.Text}, nil
}
