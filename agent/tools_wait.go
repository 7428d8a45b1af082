package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/agentloom/loom/tool"
	"github.com/google/jsonschema-go/jsonschema"
)

type waitArgs struct {
	Handles []string `json:"handles"`
	WaitMs  *waitMs  `json:"wait_ms,omitempty"`
}

type waitMs int64

// WaitDetails is the Details of agent_wait. The outcome's text shows at
// most 16 KiB of each report; Results carry every report whole.
type WaitDetails struct {
	// WaitedMs is how long the wait took, in milliseconds.
	WaitedMs int64 `json:"waited_ms"`
	// Clamped is true when wait_ms was lowered to the Agency's MaxWaitMs.
	Clamped bool `json:"clamped,omitempty"`
	// Results holds one entry per handle, in the order asked.
	Results []WaitResult `json:"results"`
}

// WaitResult is one handle's entry in WaitDetails: a Waited as text.
type WaitResult struct {
	// Handle is the handle's text form.
	Handle string `json:"handle"`
	// Pending is true while the run is still going; the fields from
	// Report to Mismatch are then empty.
	Pending bool `json:"pending"`
	// State is the run's State; AbortReason is set when it is aborted.
	State       string `json:"state"`
	AbortReason string `json:"abort_reason,omitempty"`
	// Report is the child's final text, or what went wrong.
	Report string `json:"report,omitempty"`
	// Result is the verdict on the result contract (a ResultKind), empty
	// when the spawn named none.
	Result string `json:"result,omitempty"`
	// Value is the result note, valid or mismatched; Mismatch says how
	// it broke the contract.
	Value    json.RawMessage `json:"value,omitempty"`
	Mismatch *Mismatch       `json:"mismatch,omitempty"`
	// DeadlineMs is how many milliseconds were left until the run's
	// deadline when the wait answered (0 once it passed).
	DeadlineMs int64 `json:"deadline_ms"`
}

// waitTool returns agent_wait: wait for several runs against one
// deadline. wait_ms is clamped to the agency's MaxWaitMs (the clamp is
// said in the text); a run still going is reported pending, which is a
// success: wait again.
func waitTool(agency Agency) tool.Tool {
	maxWait := 0
	if agency != nil {
		maxWait = agency.MaxWaitMs()
	}
	return tool.Typed(tool.Tool{
		Name:     WaitToolName,
		Title:    "Wait for sub-agents",
		ReadOnly: true,
		Description: fmt.Sprintf("Wait for sub-agent runs to end; read their reports. Pass all handles in one call (at most %d); "+
			"they share one deadline, wait_ms (larger values are clamped). A run still going is reported pending: call again.",
			MaxWaitHandles),
		PromptSnippet: "agent_wait: wait for sub-agents' reports",
		Replay:        tool.ReplaySafe,
		Mode:          tool.Concurrent,
	}, guard(agency, WaitToolName, func(ctx context.Context, c *tool.Call, a waitArgs) tool.Outcome {
		return runWait(ctx, agency, c, a)
	}), tool.TypeSchema{Type: reflect.TypeFor[waitMs](), Schema: &jsonschema.Schema{Type: "integer",
		Description: fmt.Sprintf("ms, at most %d (the default); zero checks without waiting", maxWait)}})
}

func runWait(ctx context.Context, agency Agency, c *tool.Call, a waitArgs) tool.Outcome {
	if len(a.Handles) == 0 {
		return refusalOutcome(WaitToolName, refuse(CodeInvalidRequest, "handles is empty; pass the handles agent_spawn or agent_send returned"))
	}
	if len(a.Handles) > MaxWaitHandles {
		return refusalOutcome(WaitToolName, refuse(CodeInvalidRequest, "%d handles, more than %d; wait on fewer at once", len(a.Handles), MaxWaitHandles))
	}
	handles := make([]Handle, len(a.Handles))
	for i, s := range a.Handles {
		h, err := ParseHandle(s)
		if err != nil {
			var r *Refusal
			if !errors.As(err, &r) {
				return refusalOutcome(WaitToolName, err)
			}
			return refusalOutcome(WaitToolName, &Refusal{Code: r.Code, Reason: fmt.Sprintf("handles[%d]: %s", i, r.Reason), Err: r})
		}
		handles[i] = h
	}
	maxMs := int64(agency.MaxWaitMs())
	wait, clamped := maxMs, false
	if a.WaitMs != nil {
		switch asked := int64(*a.WaitMs); {
		case asked < 0:
			return refusalOutcome(WaitToolName, refuse(CodeWaitTooLong, "wait_ms must not be negative"))
		case asked > maxMs:
			clamped = true
		default:
			wait = asked
		}
	}
	start := c.Clock()
	ws, err := agency.Wait(ctx, CallerOf(c), handles, time.Duration(wait)*time.Millisecond)
	if err != nil {
		return refusalOutcome(WaitToolName, err)
	}
	now := c.Clock()
	d := WaitDetails{WaitedMs: now.Sub(start).Milliseconds(), Clamped: clamped}
	var b strings.Builder
	if clamped {
		b.WriteString("note: " + tool.ClampNote("wait_ms", int64(*a.WaitMs), int64(maxMs)) + "\n")
	}
	pending := 0
	for i, w := range ws {
		if i > 0 {
			b.WriteString("\n")
		}
		r := WaitResult{Handle: w.Handle.String(), Pending: !w.Ready, State: string(w.State),
			AbortReason: string(w.AbortReason), DeadlineMs: msUntil(now, w.Deadline)}
		if !w.Ready {
			pending++
			fmt.Fprintf(&b, "%s: pending (still running; deadline %s)\n", w.Handle, untilText(now, w.Deadline))
			d.Results = append(d.Results, r)
			continue
		}
		r.Report = w.Report
		state := string(w.State)
		if w.State == Aborted && w.AbortReason != "" {
			state += " (" + string(w.AbortReason) + ")"
		}
		report, cut := truncate(w.Report, maxReportTextBytes)
		fmt.Fprintf(&b, "%s: %s\nreport:\n%s\n", w.Handle, state, report)
		if cut {
			fmt.Fprintf(&b, "[report truncated at %d bytes; the whole report is in details]\n", maxReportTextBytes)
		}
		switch w.Result.Kind {
		case ResultValid:
			fmt.Fprintf(&b, "result: %s\n", w.Result.Value)
		case ResultMissing:
			b.WriteString("result: MISSING - the child finished without recording agent_note \"result\"\n")
		case ResultMismatched:
			fmt.Fprintf(&b, "result: MISMATCH - %s\n", w.Result.Mismatch.Describe())
		}
		if w.Result.Kind != NoResultAsked && w.Result.Kind != "" {
			r.Result, r.Value, r.Mismatch = string(w.Result.Kind), w.Result.Value, w.Result.Mismatch
		}
		d.Results = append(d.Results, r)
	}
	if pending > 0 {
		fmt.Fprintf(&b, "\n%d of %d still pending; call agent_wait again to keep waiting.", pending, len(ws))
	}
	return tool.Outcome{Text: strings.TrimRight(b.String(), "\n"), Details: d}
}
