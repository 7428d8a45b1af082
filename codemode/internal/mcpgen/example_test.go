package mcpgen_test

import (
	"bytes"
	"fmt"

	"github.com/agentloom/loom/codemode/internal/mcpgen"
)

func ExampleGenerate() {
	p, err := mcpgen.Generate("GitHub", []mcpgen.Tool{{
		Name:         "create_issue",
		Description:  "Opens an issue.",
		InputSchema:  []byte(`{"type":"object","properties":{"title":{"type":"string"},"labels":{"type":"array","items":{"type":"string"}}},"required":["title"]}`),
		OutputSchema: []byte(`{"type":"object","properties":{"number":{"type":"integer"}},"required":["number"]}`),
	}})
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Path)
	for _, c := range p.Capabilities {
		fmt.Println(c.Name, "->", c.Tool, "as", c.Func)
	}
	for _, line := range bytes.Split(p.Source, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("func C")) || bytes.HasPrefix(line, []byte("\tTitle")) || bytes.HasPrefix(line, []byte("\tLabels")) {
			fmt.Printf("%s\n", line)
		}
	}
	// Output:
	// cap/mcp/github
	// mcp.github.create_issue -> create_issue as CreateIssue
	// func CreateIssue(ctx context.Context, in CreateIssueInput) (CreateIssueOutput, error) {
	// 	Labels []string `json:"labels,omitempty"`
	// 	Title  string   `json:"title"`
}
