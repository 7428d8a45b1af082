package wire

import (
	"fmt"
	"testing"

	"github.com/agentloom/loom/tool"
)

// TestFrameErrorCodeReadByCodeOf: a *FrameError, wrapped, answers its code
// through tool.CodeOf (the row of tool's TestCodeOfReadsEveryCodedError
// that package tool cannot import).
func TestFrameErrorCodeReadByCodeOf(t *testing.T) {
	for _, want := range []tool.Code{CodeChannelFault, CodeFrameTooLarge} {
		if got := tool.CodeOf(fmt.Errorf("wrap: %w", &FrameError{Code: want, Reason: "r"})); got != want {
			t.Errorf("CodeOf = %q, want %q", got, want)
		}
	}
}
