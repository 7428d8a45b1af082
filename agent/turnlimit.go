package agent

import (
	"fmt"

	"github.com/agentloom/loom/tool"
)

// CodeTurnLimit is the code of a TurnLimitError.
const CodeTurnLimit tool.Code = "turn_limit"

// TurnLimitError is what a Runner returns when its model still called
// tools in the last reply its turn bound allows: those calls are not
// run. Every adapter's Runner returns it, so a host reads one error
// whichever framework ran the child.
type TurnLimitError struct {
	// Strand is the strand whose run stopped.
	Strand string
	// MaxTurns is the bound it reached.
	MaxTurns int
}

func (e *TurnLimitError) Error() string {
	return fmt.Sprintf("%s: the model still called tools after %d turns (%s); raise the Runner's MaxTurns or ask for a smaller task", e.Strand, e.MaxTurns, CodeTurnLimit)
}

// ErrorCode returns CodeTurnLimit (see tool.CodedError).
func (e *TurnLimitError) ErrorCode() string { return string(CodeTurnLimit) }
