package mcpserve

import (
	"bytes"
	"encoding/json"

	"github.com/agentloom/loom/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MetaTerminate is the _meta key set to true on a result whose Outcome
// asked the host to end its run (Outcome.Terminate). MCP has no such
// notion; a client that knows Loom may honour it.
const MetaTerminate = "agentloom/terminate"

// MetaCodeKey is the _meta key holding a failed Outcome's Code: the stable
// reason a client program switches on (MCP's isError says only that the
// call failed).
const MetaCodeKey = "agentloom/code"

// result converts an Outcome into the MCP result a client receives:
//
//   - Text becomes one text content block (present whenever the outcome
//     has text or no images, so a result is never empty);
//   - each Image becomes an image content block after it;
//   - IsError becomes the result's isError, the in-band tool error a
//     model reads and repairs from, and Code becomes _meta[MetaCodeKey];
//   - Details becomes structuredContent when it encodes as a JSON object
//     (MCP requires an object); any other Details is left out, since
//     everything a model needs is in Text;
//   - Terminate sets _meta[MetaTerminate].
func result(o tool.Outcome) *mcp.CallToolResult {
	r := &mcp.CallToolResult{IsError: o.IsError}
	if o.Text != "" || len(o.Images) == 0 {
		r.Content = append(r.Content, &mcp.TextContent{Text: o.Text})
	}
	for _, img := range o.Images {
		r.Content = append(r.Content, &mcp.ImageContent{Data: img.Data, MIMEType: img.MIME})
	}
	if sc, ok := structured(o.Details); ok {
		r.StructuredContent = sc
	}
	if o.Code != "" {
		r.Meta = mcp.Meta{MetaCodeKey: string(o.Code)}
	}
	if o.Terminate {
		if r.Meta == nil {
			r.Meta = mcp.Meta{}
		}
		r.Meta[MetaTerminate] = true
	}
	return r
}

// structured returns d's JSON encoding when it is an object.
func structured(d any) (json.RawMessage, bool) {
	if d == nil {
		return nil, false
	}
	data, err := json.Marshal(d)
	if err != nil {
		return nil, false
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, false
	}
	return data, true
}
