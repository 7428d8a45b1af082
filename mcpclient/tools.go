package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/tool"
)

// ToolNamePattern is what a model tool's name must match for the
// Anthropic Messages API (and OpenAI's): a registered tool whose
// namespaced name would not is refused (CodeBadToolName).
var ToolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// toolPrefix begins every namespaced name.
const toolPrefix = "mcp__"

// ToolName returns the name a server's tool is registered under:
// mcp__<server>__<tool>. Clients converge on prefixing the server's name:
// Claude Code and the Claude Agent SDK name MCP tools
// mcp__<server>__<tool> (and their permission rules match on it), other
// agents prefix the server alone (<server>__<tool>, <server>_<tool>), and
// some nothing, leaving collisions to the user. Loom takes Claude Code's
// form: an MCP tool can never take the name of a built-in one (none
// begins "mcp__"), a host's allow-list picks every MCP tool, or every tool
// of one server, by prefix, and a model trained on Claude Code reads the
// names as it knows them. The price is five of the 64 bytes a name may
// have (ToolNamePattern); a tool whose name would pass them is refused,
// never renamed, so no two tools are silently made one.
func ToolName(server, tool string) string {
	return toolPrefix + server + "__" + tool
}

// Details is the Details of a registered MCP tool's outcome.
type Details struct {
	// Server and Tool name the configured server and its tool.
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Structured is the result's structuredContent, checked against the
	// tool's output schema when it declares one; nil when it sent none or
	// it was past blob.OverflowThreshold (Text says so).
	Structured json.RawMessage `json:"structured,omitempty"`
	// Overflow describes a text past blob.OverflowThreshold that spilled
	// to the blob store; nil when the text is shown whole.
	Overflow *blob.Overflow `json:"overflow,omitempty"`
}

// Register lists c's tools (starting its server) and registers each in
// reg as a model tool named ToolName(c.Name(), tool): its Schema the
// server's inputSchema, its Description the server's (cut to
// MaxDescriptionBytes) naming the server; ReplaySafe when the server
// says it is read-only or idempotent, ReplayNever otherwise; Exclusive
// when it says it may be destructive (as MCP assumes when it says
// nothing), Concurrent otherwise. Annotations are the server's word:
// Loom's own jail, not them, bounds what a stdio server can do.
//
// A call runs the tool on the server and answers its text (past
// blob.OverflowThreshold spilled to the Call's blob store, or cut with a
// note when it has none), its images and Details; every refusal is in
// band with its code (tool.Code of a Code here): the server's tool
// failing (CodeToolError), the server ending, hanging or breaking the
// protocol, a tool it no longer lists, a declaration it changed since
// (CodeToolChanged, CodeUnannouncedChange), a result not matching the
// tool's output schema (CodeOutputMismatch).
//
// Register returns the tools it left out, each with why (a duplicate
// name, a bad input schema, a namespaced name past ToolNamePattern, a name
// reg holds already); the error is the listing's when the server could
// not be listed, and then nothing is registered.
func Register(ctx context.Context, reg *tool.Registry, c *Client) ([]*Error, error) {
	tools, skipped, err := c.Tools(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	shapes := map[string]string{}
	for _, t := range tools {
		shapes[t.Name] = c.cat.tools[t.Name].shape
	}
	c.mu.Unlock()
	for _, t := range tools {
		name := ToolName(c.cfg.Name, t.Name)
		if !ToolNamePattern.MatchString(name) {
			skipped = append(skipped, &Error{Code: CodeBadToolName, Server: c.cfg.Name, Tool: t.Name,
				Reason: fmt.Sprintf("its name as a model's tool, %s, does not match %s", quote(name), ToolNamePattern)})
			continue
		}
		if err := reg.Register(modelTool(c, t, name, shapes[t.Name])); err != nil {
			var re *tool.RegisterError
			if errors.As(err, &re) && re.Code == tool.CodeDuplicateName {
				skipped = append(skipped, &Error{Code: CodeBadToolName, Server: c.cfg.Name, Tool: t.Name, Reason: fmt.Sprintf("the registry holds a tool named %s already", name)})
				continue
			}
			return skipped, err
		}
	}
	return skipped, nil
}

// modelTool is the tool.Tool of the server's tool t, registered as name.
func modelTool(c *Client, t Tool, name, shape string) tool.Tool {
	desc := t.Description
	if t.Title != "" && !strings.HasPrefix(desc, t.Title) {
		desc = t.Title + ". " + desc
	}
	desc = strings.TrimSpace(desc) + fmt.Sprintf("\n\n(Tool %s of the MCP server %s.)", quote(t.Name), c.cfg.Name)
	replay, mode := tool.ReplayNever, tool.Concurrent
	if t.ReadOnly || t.Idempotent {
		replay = tool.ReplaySafe
	}
	if t.Destructive {
		mode = tool.Exclusive
	}
	server, remote := c.cfg.Name, t.Name
	return tool.Tool{
		Name:        name,
		Description: desc,
		Schema:      t.InputSchema,
		Replay:      replay,
		Mode:        mode,
		Run: func(ctx context.Context, call *tool.Call, args json.RawMessage) tool.Outcome {
			d := Details{Server: server, Tool: remote}
			res, e := c.call(ctx, remote, shape, args)
			if e != nil {
				return tool.Fail(tool.Code(e.Code), e.Reason).WithDetails(d)
			}
			d.Structured = res.Structured
			text := res.Text
			if text == "" && len(res.Structured) > 0 {
				text = string(res.Structured)
			}
			if len(d.Structured) > blob.OverflowThreshold {
				d.Structured = nil
				text += fmt.Sprintf("\n[its structured content of %d bytes is not kept in the details]", len(res.Structured))
			}
			text, d.Overflow = bound(call, name, text)
			out := tool.Outcome{Text: text, Images: res.Images}
			if res.IsError {
				out = tool.Fail(tool.Code(CodeToolError), text)
				out.Images = res.Images
			}
			return out.WithDetails(d)
		},
	}
}

// bound holds text to blob.OverflowThreshold: past it, spilled to the
// call's blob store (excerpts shown), or cut with a note when there is
// none or the store failed.
func bound(c *tool.Call, name, text string) (string, *blob.Overflow) {
	if len(text) <= blob.OverflowThreshold {
		return text, nil
	}
	if c != nil && c.Blobs != nil {
		if _, ov, _ := c.Blobs.Bound([]byte(text)); ov != nil {
			return ov.Text(name + " output"), ov
		}
	}
	cut := cutText(text, blob.OverflowThreshold)
	return cut + fmt.Sprintf("\n[output cut at %d of %d bytes: this host keeps no overflow]", blob.OverflowThreshold, len(text)), nil
}
