package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentloom/loom/tool"
)

// RosterDetails is the Details of agent_roster.
type RosterDetails struct {
	Peers []PeerEntry `json:"peers"`
}

// PeerEntry is one descendant in RosterDetails: a Peer in text form,
// Handle being Peer.Latest and DeadlineMs the milliseconds left until
// Peer.Deadline when the roster answered (0 once it passed).
type PeerEntry struct {
	Strand      string `json:"strand"`
	Relation    string `json:"relation"`
	Parent      string `json:"parent"`
	Purpose     string `json:"purpose"`
	Depth       int    `json:"depth"`
	Handle      string `json:"handle"`
	State       string `json:"state"`
	AbortReason string `json:"abort_reason,omitempty"`
	Model       string `json:"model,omitempty"`
	DeadlineMs  int64  `json:"deadline_ms"`
	Runs        int    `json:"runs"`
}

// rosterTool returns agent_roster: list the caller's descendants with the
// state of each one's latest run.
func rosterTool(agency Agency) tool.Tool {
	return tool.Typed(tool.Tool{
		Name:          RosterToolName,
		Title:         "List sub-agents",
		ReadOnly:      true,
		Description:   "List the sub-agents you spawned and their descendants, each with its latest handle and state.",
		PromptSnippet: "agent_roster: list your sub-agents",
		Replay:        tool.ReplaySafe,
		Mode:          tool.Concurrent,
	}, guard(agency, RosterToolName, func(ctx context.Context, c *tool.Call, _ struct{}) tool.Outcome {
		peers, err := agency.Roster(ctx, CallerOf(c))
		if err != nil {
			return refusalOutcome(RosterToolName, err)
		}
		now := c.Clock()
		d := RosterDetails{Peers: []PeerEntry{}}
		if len(peers) == 0 {
			return tool.Outcome{Text: "no sub-agents", Details: d}
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d sub-agents", len(peers))
		for _, p := range peers {
			state := string(p.State)
			if p.AbortReason != "" {
				state += " (" + string(p.AbortReason) + ")"
			}
			fmt.Fprintf(&b, "\n%s [%s, depth %d] %s - %s, runs %d", p.Latest, p.Relation, p.Depth, p.Purpose, state, p.Runs)
			if p.State == Running {
				fmt.Fprintf(&b, ", deadline %s", untilText(now, p.Deadline))
			}
			d.Peers = append(d.Peers, PeerEntry{
				Strand: p.Strand, Relation: string(p.Relation), Parent: p.Parent, Purpose: p.Purpose, Depth: p.Depth,
				Handle: p.Latest.String(), State: string(p.State), AbortReason: string(p.AbortReason), Model: p.Model,
				DeadlineMs: msUntil(now, p.Deadline), Runs: p.Runs,
			})
		}
		return tool.Outcome{Text: b.String(), Details: d}
	}))
}
