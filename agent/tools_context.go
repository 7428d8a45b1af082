package agent

import (
	"context"
	"fmt"

	"github.com/agentloom/loom/tool"
)

// ContextToolName is the name of the tool ContextTool builds.
const ContextToolName = "context_remaining"

// Boundary is where the host will next compact a strand's context. The
// zero value is no checkpoint: compaction is off.
type Boundary struct {
	// At is the tokens in use at which the host compacts; 0 means no
	// checkpoint.
	At int `json:"at,omitempty"`
	// KeepRecent is how many of the newest tokens a compaction keeps.
	KeepRecent int `json:"keep_recent,omitempty"`
}

// ContextReport is where a strand stands in its context.
type ContextReport struct {
	// Window is which context window the strand is in, one-based: one
	// more than the compactions on its branch.
	Window int `json:"window"`
	// Size is the strand's context window, in tokens; positive.
	Size int `json:"size"`
	// Used is the tokens in use, as the host's compaction threshold
	// counts them; at least 0.
	Used int `json:"used"`
	// Boundary is the next checkpoint, or none.
	Boundary Boundary `json:"boundary"`
	// Notes is how many notes the strand has written.
	Notes int `json:"notes"`
}

// Remaining is Size less Used, never below zero.
func (r ContextReport) Remaining() int { return max(r.Size-r.Used, 0) }

// check refuses a report breaking its rules.
func (r ContextReport) check() error {
	if r.Window < 1 || r.Size < 1 || r.Used < 0 || r.Notes < 0 || r.Boundary.At < 0 || r.Boundary.KeepRecent < 0 {
		return refuse(CodeContextUnavailable, "the host's report is malformed (window %d, size %d, used %d, notes %d)", r.Window, r.Size, r.Used, r.Notes)
	}
	return nil
}

// Gauge is the seam behind context_remaining. A host fills it from the
// same numbers its compaction threshold reads, so what the model is told
// is what the host acts on. Report answers for strand, the calling
// strand (taken from the tool.Call).
type Gauge interface {
	Report(ctx context.Context, strand string) (ContextReport, error)
}

// ContextTool returns context_remaining over g: the calling strand's
// context window, tokens in use and left, next checkpoint and notes
// written. It is read-only, ReplaySafe and Concurrent, and asks the
// broker for nothing. A nil g refuses every call with
// CodeContextUnavailable.
func ContextTool(g Gauge) tool.Tool {
	return tool.Typed(tool.Tool{
		Name:     ContextToolName,
		Title:    "Context remaining",
		ReadOnly: true,
		Description: "How much of your context is left: which window you are in (counting compactions), its size, the " +
			"tokens in use and left, where the host compacts next and how many notes you wrote.",
		PromptSnippet: "context_remaining: how much of your context window is left",
		Replay:        tool.ReplaySafe,
		Mode:          tool.Concurrent,
	}, func(ctx context.Context, c *tool.Call, _ struct{}) tool.Outcome {
		if g == nil {
			return refusalOutcome(ContextToolName, refuse(CodeContextUnavailable, "this host does not report its context"))
		}
		r, err := g.Report(ctx, c.Strand)
		if err == nil {
			err = r.check()
		}
		if err != nil {
			if tool.CodeOf(err) == "" {
				err = &Refusal{Code: CodeContextUnavailable, Reason: "the host failed: " + err.Error(), Err: err}
			}
			return refusalOutcome(ContextToolName, err)
		}
		return tool.Success(renderContext(r)).WithDetails(r)
	})
}

// renderContext is the text context_remaining answers for r.
func renderContext(r ContextReport) string {
	checkpoint := "compaction is off"
	if r.Boundary.At > 0 {
		checkpoint = fmt.Sprintf("the host compacts at %d tokens, keeping the newest %d", r.Boundary.At, r.Boundary.KeepRecent)
	}
	return fmt.Sprintf("Window %d (%d compactions so far): %d of %d tokens in use, %d left; %s. You wrote %d notes.",
		r.Window, r.Window-1, r.Used, r.Size, r.Remaining(), checkpoint, r.Notes)
}
