package mcpserve_test

import (
	"context"
	"fmt"
	"os"

	"github.com/agentloom/loom/mcpserve"
	"github.com/agentloom/loom/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A registry served over MCP: a client lists the tools and calls one.
// A host serving a real client would call ServeStdio instead.
func ExampleNew() {
	ws, _ := os.MkdirTemp("", "mcpserve-example")
	defer os.RemoveAll(ws)

	reg, _ := tool.NewRegistry(tool.FileTools()...)
	srv, err := mcpserve.New(reg, &tool.Call{Workspace: ws, Strand: "main"}, mcpserve.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	serverEnd, clientEnd := mcp.NewInMemoryTransports()
	go srv.Run(ctx, serverEnd)

	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil)
	cs, err := client.Connect(ctx, clientEnd, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cs.Close()

	tools, _ := cs.ListTools(ctx, nil)
	for _, t := range tools.Tools {
		fmt.Println(t.Name)
	}
	res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs_write", Arguments: map[string]any{"path": "a.txt", "content": "hi\n"}})
	fmt.Print(res.Content[0].(*mcp.TextContent).Text)
	res, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs_read", Arguments: map[string]any{"path": 5}})
	fmt.Println(res.IsError, res.Meta[mcpserve.MetaCodeKey])
	// Output:
	// fs_edit
	// fs_read
	// fs_write
	// working_directory
	// created a.txt (3 bytes, 1 lines)
	// digest: 33734a193006ba70-3
	// Fresh anchors:
	// 1:08ba5f07|hi
	// true invalid_arguments
}

// CheckTool tells a host, before it starts serving, whether a tool can be
// offered over MCP.
func ExampleCheckTool() {
	bad := tool.FileTools()[0]
	bad.Name = "read file"
	fmt.Println(mcpserve.CheckTool(tool.FileTools()[0]))
	fmt.Println(mcpserve.CheckTool(bad))
	// Output:
	// <nil>
	// mcpserve: tool "read file" cannot be served (bad_name): the name holds ' '; only letters, digits, '_', '-' and '.' are allowed
}
