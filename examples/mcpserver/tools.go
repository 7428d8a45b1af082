package main

import (
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/tool"
)

// builtinTools returns every built-in tool this program serves, in the
// order clients list them, with jobs as the background job plane (nil: the
// job tools answer that there is none). A tool the machine cannot support
// reports so in band when called (grep falls back to its Go engine without
// ripgrep; commands are refused when no jail layer is available), so the
// list does not depend on the host. Add new built-ins here.
func builtinTools(jobs job.Jobs) []tool.Tool {
	tools := []tool.Tool{
		tool.ReadTool(job.Scheme(jobs)),
		tool.WriteTool(),
		tool.EditTool(),
		tool.WorkdirTool(),
		job.BashTool(jobs),
		tool.GrepTool(),
	}
	return append(tools, job.Tools(jobs)...)
}
