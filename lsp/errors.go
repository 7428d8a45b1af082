package lsp

import "fmt"

// Code is the stable reason of an Error; a program switches on it.
type Code string

// The codes. The set is closed: every error this package reports is an
// *Error carrying exactly one of them.
const (
	// CodeProtocol: the server broke the base protocol or one of its
	// bounds (MaxMessageBytes, maxHeaderLineBytes, maxHeaders,
	// maxJSONDepth, maxJSONValues); it was stopped.
	CodeProtocol Code = "lsp_protocol_violation"
	// CodeCrashed: the server's process ended, or could not start.
	CodeCrashed Code = "lsp_server_crashed"
	// CodeHung: the server did not answer within a bound (its
	// initialize, or reading what it was sent); it was stopped.
	CodeHung Code = "lsp_server_hung"
	// CodeInitFailed: the server answered initialize with an error; it
	// was stopped.
	CodeInitFailed Code = "lsp_initialize_failed"
	// CodeNotFound: the server's executable was not found.
	CodeNotFound Code = "lsp_server_not_found"
	// CodeRestartsExhausted: the server ended MaxRestarts+1 times; it is
	// not started again while its Plane lives.
	CodeRestartsExhausted Code = "lsp_restarts_exhausted"
	// CodeRefused: the broker refused to start the server (its denial
	// says why: no jail on this host, a bound, the policy).
	CodeRefused Code = "lsp_server_refused"
	// CodeClosed: the Plane was closed.
	CodeClosed Code = "lsp_closed"
	// CodeInvalidConfig: a Server's configuration cannot run (no name,
	// no command, no pattern, a pattern path.Match refuses).
	CodeInvalidConfig Code = "lsp_invalid_config"

	// The language operations' codes (definition, references, rename...).

	// CodeNoServer: no configured server owns the file asked about.
	CodeNoServer Code = "lsp_no_server"
	// CodeBadPosition: a Position names no place: a path outside the
	// workspace, a line or column past the file's, an identifier the line
	// does not hold.
	CodeBadPosition Code = "lsp_bad_position"
	// CodeSymbolNotFound: no workspace symbol has the name asked for.
	CodeSymbolNotFound Code = "lsp_symbol_not_found"
	// CodeSymbolAmbiguous: several workspace symbols have the name asked
	// for; the reason lists them.
	CodeSymbolAmbiguous Code = "lsp_symbol_ambiguous"
	// CodeRequestFailed: the server answered the request with an error.
	CodeRequestFailed Code = "lsp_request_failed"
	// CodeTimeout: the context ended before the server answered.
	CodeTimeout Code = "lsp_timeout"
	// CodeUnreadable: a workspace file the answer needs could not be read
	// (a link out of the workspace, not a regular file, too large).
	CodeUnreadable Code = "lsp_file_unreadable"
	// CodeBadEdit: the server proposed an edit Loom refuses: malformed,
	// overlapping, past a file's end or past a bound, or a file created,
	// renamed or deleted.
	CodeBadEdit Code = "lsp_bad_edit"
	// CodeEditOutside: the server proposed an edit touching a file
	// outside the workspace; none of it is offered.
	CodeEditOutside Code = "lsp_edit_outside_workspace"
	// CodeStaleEdit: a file changed between an edit's preview and its
	// apply; nothing was written.
	CodeStaleEdit Code = "lsp_stale_edit"
	// CodeWriteFailed: landing an edit failed; the reason says which
	// files were written and restored.
	CodeWriteFailed Code = "lsp_write_failed"
)

// Error is the one error type of package lsp: Code says why, Server
// names the server (empty when none is concerned), Reason says it in a
// sentence.
type Error struct {
	Code   Code   `json:"code"`
	Server string `json:"server,omitempty"`
	Reason string `json:"reason"`
}

// Error renders "lsp: <server>: <reason>".
func (e *Error) Error() string {
	if e.Server == "" {
		return "lsp: " + e.Reason
	}
	return "lsp: " + e.Server + ": " + e.Reason
}

// ErrorCode returns the code as a string (see tool.CodedError).
func (e *Error) ErrorCode() string { return string(e.Code) }

func protocolf(format string, args ...any) *Error {
	return &Error{Code: CodeProtocol, Reason: fmt.Sprintf(format, args...)}
}
