package agent

import (
	"fmt"
	"strconv"

	"github.com/agentloom/loom/tool"
)

// quote renders a value a model sent for a refusal or a notice: Go-quoted
// and, past tool.MaxQuotedBytes, cut on a rune boundary with its whole
// length said, so no answer echoes a large value back.
func quote(s string) string {
	head, cut := truncate(s, tool.MaxQuotedBytes)
	if !cut {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(head), len(s))
}
