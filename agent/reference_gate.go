package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentloom/loom/tool"
)

// maxToolNamesListed bounds how many valid tool names a refusal of an
// unknown tool name lists; the rest are counted.
const maxToolNamesListed = 32

// Govern ties reg to this Agency's table of who holds what. From then on:
//
//   - reg.Dispatch refuses, before the tool runs, a call whose Call.Strand
//     does not hold the tool (tool.CodeToolNotHeld). A child holds exactly
//     the tools its spawn fixed; a root strand holds Options.RootTools
//     (nil: every tool). A strand this Agency cannot judge (an unminted
//     sub-agent name, an empty or malformed root name) holds nothing.
//   - Spawn refuses a tools list naming a tool reg does not register
//     (CodeUnknownSpawnTool), listing at most 32 registered names.
//
// Call Govern once, with the registry the session dispatches every
// strand's calls through, before any model runs. It replaces any gate reg
// already had.
func (a *Reference) Govern(reg *tool.Registry) {
	a.registry.Store(reg)
	reg.SetHolds(func(ctx context.Context, strand, name string) bool {
		return a.Holds(ctx, Caller{Strand: strand}, name) == nil
	})
}

// checkToolNames refuses a spawn's tools list naming a tool the governed
// registry does not register. Without a governed registry every name
// passes (the Agency cannot know them).
func (a *Reference) checkToolNames(asked []string) error {
	reg := a.registry.Load()
	if reg == nil {
		return nil
	}
	for _, t := range asked {
		if _, ok := reg.Lookup(t); ok {
			continue
		}
		names := reg.Names()
		listed := names[:min(len(names), maxToolNamesListed)]
		valid := strings.Join(listed, ", ")
		if more := len(names) - len(listed); more > 0 {
			valid += fmt.Sprintf(" and %d more", more)
		}
		if valid == "" {
			valid = "none"
		}
		return refuse(CodeUnknownSpawnTool, "tool %s does not exist on this host; the tools a child can be given are among: %s", quote(t), valid)
	}
	return nil
}
