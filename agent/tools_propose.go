package agent

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloom/loom/tool"
)

// ProposeToolName is the name of the tool ProposeTool builds.
const ProposeToolName = "propose"

// Bounds of a proposal.
const (
	// MaxProposalBytes bounds a proposal's content: the whole new file.
	MaxProposalBytes = 64 << 10
	// MaxProposalReasonBytes bounds a proposal's reason.
	MaxProposalReasonBytes = 1000
	// MaxProposalsQueued bounds the proposals waiting for review; a
	// Proposals seam refuses more with CodeProposalQueueFull.
	MaxProposalsQueued = 64
)

// Target is one of the two files a host owns that a model may propose
// to change.
type Target string

// The targets of a proposal.
const (
	// TargetRules is the host's rules file, the default.
	TargetRules Target = "rules"
	// TargetConfiguration is the session's configuration file
	// (Proposals.Configuration).
	TargetConfiguration Target = "configuration"
)

// Proposal is one queued change: the whole new content of its target.
type Proposal struct {
	// ID names the proposal in review; the seam assigns it.
	ID string `json:"id"`
	// Strand proposed it, from the tool.Call.
	Strand string `json:"strand"`
	// Target is the file to change.
	Target Target `json:"target"`
	// Content is the whole proposed file, 1 to MaxProposalBytes of UTF-8.
	Content string `json:"content"`
	// Reason says why, 1 to MaxProposalReasonBytes of UTF-8.
	Reason string `json:"reason"`
	// At is when it was proposed (the call's clock).
	At time.Time `json:"at"`
}

// Check refuses a proposal breaking the argument bounds, with
// CodeProposalOutOfBounds; the file itself is the seam's to judge.
func (p Proposal) Check() error {
	switch {
	case p.Target != TargetRules && p.Target != TargetConfiguration:
		return refuse(CodeProposalOutOfBounds, "target %s is not rules or configuration", quote(string(p.Target)))
	case p.Content == "" || len(p.Content) > MaxProposalBytes || !utf8.ValidString(p.Content):
		return refuse(CodeProposalOutOfBounds, "content is %d bytes; send the whole new file, 1 to %d bytes of UTF-8", len(p.Content), MaxProposalBytes)
	case strings.TrimSpace(p.Reason) == "" || len(p.Reason) > MaxProposalReasonBytes || !utf8.ValidString(p.Reason):
		return refuse(CodeProposalOutOfBounds, "reason is %d bytes; say why in 1 to %d bytes of UTF-8", len(p.Reason), MaxProposalReasonBytes)
	}
	return nil
}

// Proposed is the receipt of a queued proposal.
type Proposed struct {
	// ID names it in review.
	ID string `json:"id"`
	// Pending is how many proposals now wait, this one included.
	Pending int `json:"pending"`
}

// Proposals is the seam behind propose: a queue of changes to the host's
// files that the host (or its user) reviews. Propose judges a proposal
// against its file and the queue depth (at most MaxProposalsQueued
// waiting), and answers a receipt or a *Refusal. ProposalQueue is the
// reference.
type Proposals interface {
	// Configuration is the path of the session's configuration file,
	// named in the tool's description so a model can read it first; ""
	// when the host has none, and then only rules may be proposed.
	Configuration() string
	Propose(ctx context.Context, p Proposal) (Proposed, error)
}

type proposeArgs struct {
	Target  Target       `json:"target,omitempty"`
	Content proposalText `json:"content"`
	Reason  reasonText   `json:"reason"`
}

type (
	proposalText string
	reasonText   string
)

// ProposeTool returns propose over p: queue a change to the host's rules
// (the default) or its configuration, for the host to review. There is
// no path argument: the target names the file. The tool checks only the
// argument bounds (Proposal.Check); p judges the file and the queue. The
// description names the configuration's path when p has one, and says
// nothing of it otherwise. It asks the broker for nothing; it is
// ReplayNever (a replay would queue twice) and Exclusive (the queue's
// depth is one count). A nil p refuses every call with
// CodeProposalsUnavailable.
func ProposeTool(p Proposals) tool.Tool {
	config := ""
	if p != nil {
		config = p.Configuration()
	}
	targets := []any{string(TargetRules)}
	desc := fmt.Sprintf("Propose a change to the rules the host gave you, for its review: content is the whole new text (at most %d bytes), "+
		"reason says why (at most %d). Nothing changes until the host accepts it; at most %d wait.",
		MaxProposalBytes, MaxProposalReasonBytes, MaxProposalsQueued)
	if config != "" {
		targets = append(targets, string(TargetConfiguration))
		desc += fmt.Sprintf(" target=configuration proposes the configuration %s instead: read it first.", config)
	}
	return tool.Typed(tool.Tool{
		Name:          ProposeToolName,
		Title:         "Propose a change",
		Description:   desc,
		PromptSnippet: "propose: queue a change to the host's rules for review",
		Replay:        tool.ReplayNever,
		Mode:          tool.Exclusive,
	}, func(ctx context.Context, c *tool.Call, a proposeArgs) tool.Outcome {
		if p == nil {
			return refusalOutcome(ProposeToolName, refuse(CodeProposalsUnavailable, "this host takes no proposals"))
		}
		prop := Proposal{Strand: c.Strand, Target: a.Target, Content: string(a.Content), Reason: string(a.Reason), At: c.Clock()}
		if prop.Target == "" {
			prop.Target = TargetRules
		}
		if prop.Target == TargetConfiguration && config == "" {
			return refusalOutcome(ProposeToolName, refuse(CodeNoConfiguration, "this host has no configuration file; propose to rules"))
		}
		if err := prop.Check(); err != nil {
			return refusalOutcome(ProposeToolName, err)
		}
		r, err := p.Propose(ctx, prop)
		if err != nil {
			if tool.CodeOf(err) == "" {
				err = &Refusal{Code: CodeProposalsUnavailable, Reason: "the host failed: " + err.Error(), Err: err}
			}
			return refusalOutcome(ProposeToolName, err)
		}
		return tool.Success(fmt.Sprintf("Proposal %s to %s is queued for review (%d waiting); nothing changes until the host accepts it.",
			r.ID, prop.Target, r.Pending)).WithDetails(r)
	},
		tool.TypeSchema{Type: reflect.TypeFor[Target](), Schema: &jsonschema.Schema{Type: "string", Enum: targets}},
		tool.TypeSchema{Type: reflect.TypeFor[proposalText](), Schema: &jsonschema.Schema{Type: "string",
			Description: fmt.Sprintf("the whole new file, at most %d bytes", MaxProposalBytes)}},
		tool.TypeSchema{Type: reflect.TypeFor[reasonText](), Schema: &jsonschema.Schema{Type: "string",
			Description: fmt.Sprintf("at most %d bytes", MaxProposalReasonBytes)}})
}
