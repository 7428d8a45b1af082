package hashline

import (
	"errors"
	"fmt"
	"strings"
)

// Code is the stable reason of a refusal: every error this package
// returns carries one in its Code field. Callers switch on the code, never
// on the message.
type Code string

// The codes, each one of the Code type.
const (
	// CodeStaleDigest: the content is not the one a plan (or a read) was made
	// from. Re-read and re-plan.
	CodeStaleDigest Code = "stale_digest"
	// CodeStaleAnchor: some refs name a line that no longer exists or no
	// longer has the given anchor.
	CodeStaleAnchor Code = "stale_anchor"
	// CodeBadDigest: a digest given back is not of a digest's form (see
	// DigestForm), so it names no content at all.
	CodeBadDigest Code = "bad_digest"
	// CodeBadRef: a ref is not "line:anchor" or its line is below 1.
	CodeBadRef Code = "bad_ref"
	// CodeBadJSON: the hunk list is not a JSON array of objects.
	CodeBadJSON Code = "bad_json"
	// CodeUnknownField: a hunk object has a field other than op, start, end, lines.
	CodeUnknownField Code = "unknown_field"
	// CodeMissingField: a hunk object lacks op or lines.
	CodeMissingField Code = "missing_field"
	// CodeBadOp: op is not one of the accepted operations.
	CodeBadOp Code = "bad_op"
	// CodeMissingRef: replace, insert_before or insert_after without start.
	CodeMissingRef Code = "missing_ref"
	// CodeUnexpectedRef: a ref the op does not take (end on an insert, any ref on append).
	CodeUnexpectedRef Code = "unexpected_ref"
	// CodeEndBeforeStart: a replace whose end line is before its start line.
	CodeEndBeforeStart Code = "end_before_start"
	// CodeOverlap: two hunks touch the same lines or insert at the same place.
	CodeOverlap Code = "overlap"
	// CodeDisplayPrefix: a line to write starts with "N:anchor|", i.e. was
	// pasted from a read's display form rather than being file text.
	CodeDisplayPrefix Code = "display_prefix"
	// CodeNoHunks: the hunk list is empty.
	CodeNoHunks Code = "no_hunks"
	// CodeEmptyLines: an insert or append with no lines to add.
	CodeEmptyLines Code = "empty_lines"
)

// HunkError reports a malformed hunk list: one that would be refused whatever
// the content. It names the first offending hunk.
type HunkError struct {
	// Code is one of the Code* constants above.
	Code Code
	// Index is the 0-based position of the offending hunk, or -1 when the
	// error concerns the list as a whole.
	Index int
	// Field names the hunk field at fault ("op", "start", "end", "lines"),
	// or is empty.
	Field string
	// Detail says what is wrong and how to repair it.
	Detail string
	// Err is an underlying cause (a *RefError, a JSON syntax error), if any.
	Err error
}

func (e *HunkError) Error() string {
	var b strings.Builder
	if e.Index >= 0 {
		fmt.Fprintf(&b, "hunk %d: ", e.Index)
	} else {
		b.WriteString("hunks: ")
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "%s: ", e.Field)
	}
	b.WriteString(e.Detail)
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap returns the underlying cause, if any.
func (e *HunkError) Unwrap() error { return e.Err }

// ErrorCode returns e.Code as a string (see CodeOf).
func (e *HunkError) ErrorCode() string { return string(e.Code) }

// StaleRef is one ref that does not match the content a plan was made over.
type StaleRef struct {
	// Ref is the ref as the hunk gave it.
	Ref Ref
	// Current is the line now at Ref.Line (its current anchor and text), or
	// nil when the content has fewer lines.
	Current *Line
}

// StaleError reports that a plan or its refs no longer match the content.
// Both kinds carry the current digest so a caller can re-read and re-plan.
type StaleError struct {
	// Code is CodeStaleDigest (Apply over other content) or
	// CodeStaleAnchor (NewPlan found refs that do not match).
	Code Code
	// Want is the digest the plan was bound to (CodeStaleDigest), or empty.
	Want string
	// Current is the digest of the content actually given.
	Current string
	// Lines is the number of lines in the content actually given.
	Lines int
	// Stale lists every stale ref, in hunk order, each once (CodeStaleAnchor only).
	Stale []StaleRef
}

// ErrorCode returns e.Code as a string (see CodeOf).
func (e *StaleError) ErrorCode() string { return string(e.Code) }

func (e *StaleError) Error() string {
	var b strings.Builder
	switch e.Code {
	case CodeStaleDigest:
		fmt.Fprintf(&b, "content changed: digest is now %s, the edit was planned against %s; read the file again and re-plan", e.Current, e.Want)
	default:
		fmt.Fprintf(&b, "%d stale line reference(s) (content digest %s, %d lines):", len(e.Stale), e.Current, e.Lines)
		for _, s := range e.Stale {
			if s.Current == nil {
				fmt.Fprintf(&b, " %s (no such line);", s.Ref)
			} else {
				fmt.Fprintf(&b, " %s (now %d:%s);", s.Ref, s.Current.Number, s.Current.Anchor)
			}
		}
		b.WriteString(" use the current anchors")
	}
	return b.String()
}

// codedError is the method set every error of this package has (and
// package tool's CodedError, which this package cannot import).
type codedError interface {
	error
	ErrorCode() string
}

// CodeOf returns the code of the first error in err's chain that carries
// one (an ErrorCode method, as every error of this package has), or ""
// when none does. Over this package's own errors it is one of the Code*
// constants.
func CodeOf(err error) Code {
	var ce codedError
	if errors.As(err, &ce) {
		return Code(ce.ErrorCode())
	}
	return ""
}
