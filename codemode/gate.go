package codemode

import (
	"context"

	"github.com/agentloom/loom/tool"
)

// AuthorizingTool returns the tool whose holding authorizes the
// capability cap, and false for a capability that is open on purpose to
// any strand that holds code_mode (reads, searches, kv.*, report.emit).
// A program of a strand that does not hold the authorizing tool has the
// call refused with CodeCapabilityNotHeld, by the same holds check
// Registry.Dispatch applies to a direct call of that tool: a program
// cannot do what its strand could not do with one tool call.
func AuthorizingTool(cap string) (name string, gated bool) {
	switch cap {
	case "proc.run", "job.start":
		return "bash", true
	case "job.poll", "job.list":
		return "job_poll", true
	case "job.send":
		return "job_send", true
	case "job.kill":
		return "job_kill", true
	case "fs.write":
		return "fs_write", true
	case "fs.edit":
		return "fs_edit", true
	}
	return "", false
}

// gate refuses cap for strand unless reg holds the tool that authorizes
// it for strand (tool.Registry.Holds: a tool the registry does not offer
// is held by nobody).
func gate(ctx context.Context, reg *tool.Registry, cap, strand string) error {
	name, gated := AuthorizingTool(cap)
	if !gated || reg.Holds(ctx, strand, name) {
		return nil
	}
	return &CapError{Code: CodeCapabilityNotHeld,
		Message: cap + " is authorized by the tool " + name + ", which strand " + quoteArg(strand) + " does not hold; a program can do only what its strand could do with that tool"}
}
