package codemode

import (
	"context"
	"strings"

	"github.com/agentloom/loom/tool"
)

// authorizingTool returns the tool whose holding authorizes the
// capability cap, and false for a capability that is open on purpose to
// any strand that holds code_mode (reads, searches, kv.*, report.emit).
// strand.map needs agent_wait as well as the agent_spawn it returns. A
// program of a strand that does not hold every authorizing tool has the
// call refused with tool.CodeToolNotHeld, by the same holds check
// Registry.Dispatch applies to a direct call of that tool: a program
// cannot do what its strand could not do with one tool call.
func authorizingTool(cap string) (name string, gated bool) {
	c := lookupCapability(cap)
	if c == nil || len(c.authorizedBy) == 0 {
		return "", false
	}
	return c.authorizedBy[0], true
}

// gate refuses c for strand unless reg holds every tool that authorizes
// it for strand (tool.Registry.Holds: a tool the registry does not offer
// is held by nobody).
func gate(ctx context.Context, reg *tool.Registry, c *capability, strand string) error {
	cap, names := c.name, c.authorizedBy
	for _, name := range names {
		if reg.Holds(ctx, strand, name) {
			continue
		}
		by := "the tool " + name
		if len(names) > 1 {
			by = "the tools " + strings.Join(names, " and ")
		}
		return &CapError{Code: tool.CodeToolNotHeld,
			Message: cap + " is authorized by " + by + ", which strand " + quoteArg(strand) + " does not hold (" + name + " is missing); a program can do only what its strand could do with that tool"}
	}
	return nil
}
