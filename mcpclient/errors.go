package mcpclient

import "fmt"

// Code is the stable reason of an Error; a host and a model's tool
// outcome carry the same word (tool.Outcome.Code).
type Code string

// The codes. The set is closed: every error this package reports is an
// *Error carrying exactly one of them.
const (
	// CodeInvalidConfig: a configuration cannot run (malformed JSON, no
	// command and no URL, both, a name outside ServerNamePattern, a bound
	// passed). Returned to the host, never to a model.
	CodeInvalidConfig Code = "mcp_invalid_config"
	// CodeServerNotFound: a stdio server's executable was not found.
	CodeServerNotFound Code = "mcp_server_not_found"
	// CodeRefused: the broker refused to start the server (no jail on
	// this host, a bound, the policy); the reason carries its denial.
	CodeRefused Code = "mcp_server_refused"
	// CodeCrashed: the server's process ended, could not start, or its
	// connection was lost.
	CodeCrashed Code = "mcp_server_crashed"
	// CodeHung: the server did not answer initialize within
	// StartTimeout, or read nothing of its input for WriteTimeout; it was
	// stopped.
	CodeHung Code = "mcp_server_hung"
	// CodeProtocol: the server broke the protocol or one of its bounds (a
	// line past MaxMessageBytes, a line that is not one JSON-RPC message,
	// a batch, a result that does not decode); it was stopped.
	CodeProtocol Code = "mcp_protocol_violation"
	// CodeRestartsExhausted: the server ended MaxRestarts+1 times; it is
	// not started again while its Client lives.
	CodeRestartsExhausted Code = "mcp_restarts_exhausted"
	// CodeClosed: the Client was closed.
	CodeClosed Code = "mcp_closed"
	// CodeTimeout: the call's context, or CallTimeout, ended before the
	// server answered; the server was told to cancel it.
	CodeTimeout Code = "mcp_timeout"
	// CodeRequestFailed: the server answered a request with a JSON-RPC
	// error (an unknown tool, arguments it refused).
	CodeRequestFailed Code = "mcp_request_failed"
	// CodeToolError: the server's tool ran and reported a failure
	// (isError in its result); the text is the server's.
	CodeToolError Code = "mcp_tool_error"
	// CodeUnknownTool: the server does not list a tool of that name (any
	// more).
	CodeUnknownTool Code = "mcp_unknown_tool"
	// CodeDuplicateTool: the server listed two tools of that name; which
	// one a call would run is unknown, so neither is called.
	CodeDuplicateTool Code = "mcp_duplicate_tool"
	// CodeToolChanged: the server changed the tool's declaration (input
	// or output schema, annotations) since it was registered, and said so
	// with notifications/tools/list_changed; the model holds the old one,
	// so the tool is not called until the host registers it again.
	CodeToolChanged Code = "mcp_tool_changed"
	// CodeUnannouncedChange: the server's tool list changed without
	// notifications/tools/list_changed (found when it is listed again:
	// after a restart, a request it refused, or a result that did not
	// match the tool's output schema); the changed tools are not called
	// again while the Client lives.
	CodeUnannouncedChange Code = "mcp_unannounced_change"
	// CodeOutputMismatch: the tool declared an outputSchema and its
	// result's structuredContent is missing or does not validate against
	// it; nothing of the result is shown.
	CodeOutputMismatch Code = "mcp_output_mismatch"
	// CodeBadInputSchema: the tool's inputSchema is not a JSON object
	// schema Loom can resolve (or is past MaxSchemaBytes); it is not
	// registered.
	CodeBadInputSchema Code = "mcp_bad_input_schema"
	// CodeBadToolName: the tool's namespaced name would not match
	// ToolNamePattern (a character outside it, or past 64 bytes); it is
	// not registered.
	CodeBadToolName Code = "mcp_bad_tool_name"
	// CodeTooManyTools: the server listed more than MaxTools tools, or
	// more than MaxListPages pages; the rest are not registered.
	CodeTooManyTools Code = "mcp_too_many_tools"
)

// Error is the one error type of package mcpclient: Code says why,
// Server names the configured server (empty when none is concerned),
// Tool the server's tool when one is, Reason says it in a sentence.
type Error struct {
	Code   Code   `json:"code"`
	Server string `json:"server,omitempty"`
	Tool   string `json:"tool,omitempty"`
	Reason string `json:"reason"`
}

// Error renders "mcp: <server>: <tool>: <reason>", leaving out what is
// empty.
func (e *Error) Error() string {
	s := "mcp: "
	if e.Server != "" {
		s += e.Server + ": "
	}
	if e.Tool != "" {
		s += oneLine(e.Tool, 128) + ": "
	}
	return s + e.Reason
}

// ErrorCode returns the code as a string (see tool.CodedError).
func (e *Error) ErrorCode() string { return string(e.Code) }

func errorf(code Code, server, format string, args ...any) *Error {
	return &Error{Code: code, Server: server, Reason: fmt.Sprintf(format, args...)}
}
