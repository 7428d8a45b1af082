package history

import (
	"errors"
	"fmt"
)

// Code is the stable name of a refusal. Programs switch on it; it never
// changes once published.
type Code string

// Codes of History refusals.
const (
	// IndexUnavailable: the index cannot be used at all (closed, missing,
	// corrupt, an I/O failure, or a schema newer than this library).
	IndexUnavailable Code = "IndexUnavailable"
	// IndexRefused: the request itself is wrong (a raw query FTS5 cannot
	// parse, an unknown entry, a bound exceeded). Change the call.
	IndexRefused Code = "IndexRefused"
	// IndexNotReady: the index is still being prepared. Transient.
	IndexNotReady Code = "IndexNotReady"
	// IndexBusy: another writer held the database past the busy timeout.
	// Transient.
	IndexBusy Code = "IndexBusy"
)

// Codes of Memory refusals.
const (
	// MemoryBusy: another writer held the memory store past the busy
	// timeout. Transient.
	MemoryBusy Code = "MemoryBusy"
	// MemoryUnavailable: the memory store cannot be used at all.
	MemoryUnavailable Code = "MemoryUnavailable"
	// NoteTooLong: the note exceeds MaxNoteChars.
	NoteTooLong Code = "NoteTooLong"
	// CeilingReached: MaxNotes notes are already stored; no more ever will be.
	CeilingReached Code = "CeilingReached"
	// NothingToRemember: the note is blank.
	NothingToRemember Code = "NothingToRemember"
	// FieldInvalid: a title, description or kind breaks its rule.
	FieldInvalid Code = "FieldInvalid"
)

// Transient reports whether a refusal with this code is worth repeating
// unchanged: the request was fine and a later identical call may succeed.
func (c Code) Transient() bool {
	return c == IndexBusy || c == IndexNotReady || c == MemoryBusy
}

// Refusal is the error every seam in this package returns. Message is a
// sentence a model can act on; Err, when set, is the underlying cause.
type Refusal struct {
	// Code is the stable name a program switches on.
	Code Code
	// Message says, for a model, what was refused and what to do.
	Message string
	// Err is the underlying cause, or nil.
	Err error
}

// Error returns the code and the message.
func (r *Refusal) Error() string {
	if r.Err != nil {
		return fmt.Sprintf("%s: %s: %v", r.Code, r.Message, r.Err)
	}
	return string(r.Code) + ": " + r.Message
}

// Unwrap returns the underlying cause, if any.
func (r *Refusal) Unwrap() error { return r.Err }

// Is reports whether target is a *Refusal with the same Code, so
// errors.Is(err, &Refusal{Code: IndexBusy}) works through wrapping.
func (r *Refusal) Is(target error) bool {
	t, ok := target.(*Refusal)
	return ok && t.Code == r.Code
}

// CodeOf returns the Code of the first *Refusal in err's chain, or "" when
// there is none.
func CodeOf(err error) Code {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Code
	}
	return ""
}

func refuse(code Code, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Message: fmt.Sprintf(format, args...)}
}

// asRefusalOf returns the first *Refusal in err's chain, or nil.
func asRefusalOf(err error) *Refusal {
	var r *Refusal
	if errors.As(err, &r) {
		return r
	}
	return nil
}
