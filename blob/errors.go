package blob

import "errors"

// Code is the stable reason of an Error; a program switches on it.
type Code string

// The codes. The set is closed: every error this package returns is an
// *Error carrying exactly one of them.
const (
	// CodeInvalidRef: a string offered as a Ref is not 64 lowercase hex.
	CodeInvalidRef Code = "invalid_ref"
	// CodeInvalidRoot: a store root is relative, "/", not a directory, a
	// symbolic link (never followed), or the Store was never opened.
	CodeInvalidRoot Code = "invalid_root"
	// CodeNotFound: no blob is stored under the ref.
	CodeNotFound Code = "blob_not_found"
	// CodeCorrupt: the file stored under a ref does not hash to that ref, or
	// is not a regular file.
	CodeCorrupt Code = "blob_corrupt"
	// CodeClosed: a Writer or Spool was used after Commit, Finish or Abort.
	CodeClosed Code = "blob_closed"
	// CodeLinkRefused: a directory or entry inside the store was a
	// symbolic link, or was replaced while the store opened it; the store
	// refused to read or write through it, so nothing left the root.
	CodeLinkRefused Code = "link_refused"
	// CodeSpillBudget: keeping the output would take this session (one
	// open Store) past its budget of stored bytes (Options.SessionBytes),
	// so the store did not keep it. Bound, Spill and Spool return the
	// output's excerpts with it, in an Overflow that says so; the fix is
	// less output, or a host that grants a larger budget.
	CodeSpillBudget Code = "spill_budget"
	// CodeIO: the filesystem refused an operation (staging, fsync, rename,
	// read); the wrapped error says which and why.
	CodeIO Code = "blob_io"
)

// Error is the one error type of package blob. Its code is stable; its
// message is a sentence a model or an operator can act on. The underlying
// cause, if any, is reachable with errors.Unwrap, errors.Is and errors.As
// (a missing blob, for instance, matches fs.ErrNotExist).
type Error struct {
	// Op is the operation that failed: "parse", "open", "put", "read",
	// "write", "commit", "abort", "spool", "sweep", "evict" or "close".
	Op string
	// Ref is the content address involved, when there is one.
	Ref Ref
	// Path is the file involved, when there is one.
	Path string
	// Reason says what went wrong in words, without the wrapped cause.
	Reason string
	// Err is the underlying cause, or nil.
	Err error
	// Code is the stable reason, one of the Code* constants.
	Code Code
}

// Error renders "blob: <op> <ref or path>: <reason>: <cause>", omitting
// empty parts.
func (e *Error) Error() string {
	msg := "blob: " + e.Op
	switch {
	case e.Ref != "":
		msg += " " + string(e.Ref)
	case e.Path != "":
		msg += " " + e.Path
	}
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the underlying cause, or nil.
func (e *Error) Unwrap() error { return e.Err }

// ErrorCode returns the code as a string, so a caller that knows only the
// method (package tool's CodedError) reads it.
func (e *Error) ErrorCode() string { return string(e.Code) }

// CodeOf returns the code of the first *Error in err's chain, or "" when
// there is none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func newError(code Code, op string, ref Ref, path, reason string, cause error) *Error {
	return &Error{Op: op, Ref: ref, Path: path, Reason: reason, Err: cause, Code: code}
}

func ioError(op string, ref Ref, path string, cause error) *Error {
	return newError(CodeIO, op, ref, path, "", cause)
}

func closedError(op string) *Error {
	return newError(CodeClosed, op, "", "", "already committed, finished or aborted", nil)
}
