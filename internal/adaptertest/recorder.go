package adaptertest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/agentloom/loom/tool"
)

// Recorder is the tool "probe", which records where each of its calls
// ran and answers "probe ran for <strand>". The zero Recorder is ready
// to use.
type Recorder struct {
	mu    sync.Mutex
	calls []string
}

// Tool returns the probe, taking any JSON object.
func (r *Recorder) Tool() tool.Tool {
	return tool.Tool{Name: "probe", Description: "probe", Schema: json.RawMessage(`{"type":"object"}`),
		Run: func(_ context.Context, c *tool.Call, _ json.RawMessage) tool.Outcome {
			r.mu.Lock()
			r.calls = append(r.calls, fmt.Sprintf("%s@%s/%d", c.Strand, c.StepID, c.SourceIndex))
			r.mu.Unlock()
			return tool.Success("probe ran for " + c.Strand)
		}}
}

// Calls returns "strand@step/index" for each call the probe ran, in the
// order they started.
func (r *Recorder) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}
