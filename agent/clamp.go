package agent

import (
	"github.com/agentloom/loom/tool"
	"time"
)

// budgetClamp is the note a tool starts its answer with when the Agency
// granted a shorter run budget than the model asked for, worded as every
// clamp in the tool plane is ("note: wait_ms 900000 clamped to 600000"),
// and whether there was one. An unasked budget (askedMs ≤ 0) is never
// a clamp: the default is what was asked for.
func budgetClamp(property string, askedMs int64, granted time.Duration) (string, bool) {
	if askedMs <= 0 || granted <= 0 || granted.Milliseconds() >= askedMs {
		return "", false
	}
	return "note: " + tool.ClampNote(property, askedMs, granted.Milliseconds()) + "\n", true
}
