package plane

import (
	"context"
	"encoding/json"

	"github.com/agentloom/loom/codemode"
	"github.com/agentloom/loom/mcpclient"
	"github.com/agentloom/loom/tool"
)

// mcpServer is an MCP client as code mode calls it (codemode.MCPServer):
// its tools authorized by the model tools mcpclient.Register made of
// them.
type mcpServer struct{ c *mcpclient.Client }

func (s mcpServer) Name() string { return s.c.Name() }

func (s mcpServer) Tools(ctx context.Context) ([]codemode.MCPTool, error) {
	tools, _, err := s.c.Tools(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]codemode.MCPTool, len(tools))
	for i, t := range tools {
		hints, _ := json.Marshal(map[string]bool{"readOnlyHint": t.ReadOnly, "idempotentHint": t.Idempotent, "destructiveHint": t.Destructive})
		out[i] = codemode.MCPTool{Name: t.Name, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: hints,
			ModelTool: mcpclient.ToolName(s.c.Name(), t.Name)}
	}
	return out, nil
}

func (s mcpServer) Call(ctx context.Context, name string, args json.RawMessage) (codemode.MCPResult, error) {
	r, err := s.c.Call(ctx, name, args)
	if err != nil {
		return codemode.MCPResult{}, err
	}
	return codemode.MCPResult{Structured: r.Structured, Text: r.Text, IsError: r.IsError}, nil
}

// mcpServers are the plane's MCP clients as code mode's servers.
func (p *Plane) mcpServers() []codemode.MCPServer {
	var out []codemode.MCPServer
	for _, c := range p.MCP {
		out = append(out, mcpServer{c})
	}
	return out
}

// withMCP is the cap:// scheme s also answering the MCP packages of the
// code mode engine (codemode.Engine.ReadMCP) once New made it.
func (p *Plane) withMCP(s tool.Scheme) tool.Scheme {
	read := s.Read
	s.Read = func(ctx context.Context, c *tool.Call, uri string) tool.Outcome {
		if p.CodeMode != nil {
			if out, ok := p.CodeMode.ReadMCP(uri); ok {
				return out
			}
		}
		return read(ctx, c, uri)
	}
	return s
}
