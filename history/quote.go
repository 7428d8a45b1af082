package history

import (
	"strconv"
	"unicode/utf8"

	"github.com/agentloom/loom/tool"
)

// quote renders a value a model sent for an answer: Go-quoted and, past
// tool.MaxQuotedBytes, cut at a rune boundary with its whole length
// said, so no answer echoes a large value back.
func quote(s string) string {
	if len(s) <= tool.MaxQuotedBytes {
		return strconv.Quote(s)
	}
	end := tool.MaxQuotedBytes
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return strconv.Quote(s[:end]) + "… (" + strconv.Itoa(len(s)) + " bytes)"
}
