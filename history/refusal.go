package history

import (
	"errors"
	"fmt"

	"github.com/agentloom/loom/tool"
)

// Refusal is the error every seam in this package answers (History and
// Memory implementations, PrepareNote, ParseWords). Programs find it with
// errors.As, or read its code with tool.CodeOf, and switch on Code;
// Message is a sentence a model can act on.
type Refusal struct {
	// Code is one of this package's codes (CodeIndexBusy, ...), or
	// tool.CodeCancelled when the call's context ended first.
	Code tool.Code
	// Message says, for a model, what was refused and what to do.
	Message string
	// Err is the underlying cause, or nil.
	Err error
}

// Error returns the code and the message, and the cause when there is one.
func (r *Refusal) Error() string {
	if r.Err != nil {
		return fmt.Sprintf("%s: %s: %v", r.Code, r.Message, r.Err)
	}
	return string(r.Code) + ": " + r.Message
}

// Unwrap returns the underlying cause, if any.
func (r *Refusal) Unwrap() error { return r.Err }

// ErrorCode returns r.Code as a string, so tool.CodeOf reads it (see
// tool.CodedError).
func (r *Refusal) ErrorCode() string { return string(r.Code) }

// Is reports whether target is a *Refusal with the same Code, so
// errors.Is(err, &Refusal{Code: CodeIndexBusy}) works through wrapping.
func (r *Refusal) Is(target error) bool {
	t, ok := target.(*Refusal)
	return ok && t.Code == r.Code
}

// refuse returns a *Refusal coded code whose Message is format applied to
// args.
func refuse(code tool.Code, format string, args ...any) error {
	return &Refusal{Code: code, Message: fmt.Sprintf(format, args...)}
}

// asRefusal returns the first *Refusal in err's chain, or nil.
func asRefusal(err error) *Refusal {
	var r *Refusal
	if errors.As(err, &r) {
		return r
	}
	return nil
}
