package todo

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/agentloom/loom/tool"
)

// The board's refusal codes. A step that breaks a rule is refused with
// one of them and leaves the board as it was.
const (
	// CodeUnknownTask: a task name matching no task.
	CodeUnknownTask tool.Code = "todo_unknown_task"
	// CodeAmbiguousTask: a task name loosely matching several tasks.
	CodeAmbiguousTask tool.Code = "todo_ambiguous_task"
	// CodeInvalid: a step whose arguments or result break the board's
	// bounds or rules.
	CodeInvalid tool.Code = "todo_invalid"
)

// Error is every refusal of this package: a stable code and a sentence a
// model can act on.
type Error struct {
	Code   tool.Code
	Reason string
}

// Error returns "code: reason".
func (e *Error) Error() string { return string(e.Code) + ": " + e.Reason }

// ErrorCode returns e.Code (see tool.CodedError).
func (e *Error) ErrorCode() string { return string(e.Code) }

func refuse(code tool.Code, format string, args ...any) error {
	return &Error{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// quote renders a name a model sent: Go-quoted and, past
// tool.MaxQuotedBytes, cut on a rune boundary with its length said.
func quote(s string) string {
	if len(s) <= tool.MaxQuotedBytes {
		return strconv.Quote(s)
	}
	cut := tool.MaxQuotedBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:cut]), len(s))
}
