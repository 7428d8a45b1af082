package blob

import "errors"

// Error codes a program can switch on. The set is closed: every error this
// package returns is an *Error carrying exactly one of these codes.
const (
	// CodeInvalidRef: a string offered as a Ref is not 64 lowercase hex.
	CodeInvalidRef = "invalid_ref"
	// CodeInvalidRoot: a store root is relative, "/", not a directory, a
	// symbolic link (never followed), or the Store was never opened.
	CodeInvalidRoot = "invalid_root"
	// CodeNotFound: no blob is stored under the ref.
	CodeNotFound = "not_found"
	// CodeCorrupt: the file stored under a ref does not hash to that ref, or
	// is not a regular file.
	CodeCorrupt = "corrupt"
	// CodeClosed: a Writer or Spool was used after Commit, Finish or Abort.
	CodeClosed = "closed"
	// CodeLinkRefused: a directory or entry inside the store was a
	// symbolic link, or was replaced while the store opened it; the store
	// refused to read or write through it, so nothing left the root.
	CodeLinkRefused = "link_refused"
	// CodeIO: the filesystem refused an operation (staging, fsync, rename,
	// read); the wrapped error says which and why.
	CodeIO = "io"
)

// Error is the one error type of package blob. Its code is stable; its
// message is a sentence a model or an operator can act on. The underlying
// cause, if any, is reachable with errors.Unwrap, errors.Is and errors.As
// (a missing blob, for instance, matches fs.ErrNotExist).
type Error struct {
	// Op is the operation that failed: "parse", "open", "put", "read",
	// "write", "commit", "abort", "spool", "sweep" or "close".
	Op string
	// Ref is the content address involved, when there is one.
	Ref Ref
	// Path is the file involved, when there is one.
	Path string
	// Reason says what went wrong in words, without the wrapped cause.
	Reason string
	// Err is the underlying cause, or nil.
	Err error

	code string
}

// Code returns the stable code of e, one of the Code* constants.
func (e *Error) Code() string { return e.code }

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

// CodeOf returns the code of the first *Error in err's chain, or "" when
// there is none.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.code
	}
	return ""
}

func newError(code, op string, ref Ref, path, reason string, cause error) *Error {
	return &Error{Op: op, Ref: ref, Path: path, Reason: reason, Err: cause, code: code}
}

func ioError(op string, ref Ref, path string, cause error) *Error {
	return newError(CodeIO, op, ref, path, "", cause)
}

func closedError(op string) *Error {
	return newError(CodeClosed, op, "", "", "already committed, finished or aborted", nil)
}
