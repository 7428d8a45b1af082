package main

import "github.com/agentloom/loom/tool"

// builtinTools returns every built-in tool this program serves, in the
// order clients list them. A tool the machine cannot support reports so
// in band when called (grep falls back to its Go engine without ripgrep;
// commands are refused when no jail layer is available), so the list does
// not depend on the host. Add new built-ins here.
func builtinTools() []tool.Tool {
	tools := tool.FileTools()
	tools = append(tools, tool.BashTool(), tool.GrepTool())
	return tools
}
