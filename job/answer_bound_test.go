package job

import (
	"testing"

	"github.com/agentloom/loom/tool"
)

// TestAnswerFitsTheOutcomeBound: the largest answer bash and job_poll
// state they give, both streams' windows (plus the root package's
// allowance for the lines around them), fits tool.MaxOutcomeBytes, so
// the structural bound never cuts one.
func TestAnswerFitsTheOutcomeBound(t *testing.T) {
	// frame allows for an answer's headlines and notes (as the root
	// package's TestBoundAboveEveryFamilysMaximum counts them).
	const frame = 16 << 10
	if n := 2*defaultTailBytes + frame; n > tool.MaxOutcomeBytes {
		t.Errorf("bash and job_poll answer up to %d bytes, over tool.MaxOutcomeBytes (%d)", n, tool.MaxOutcomeBytes)
	}
}
