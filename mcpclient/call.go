package mcpclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentloom/loom/tool"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds on what a server lists and answers.
const (
	// CallTimeout bounds one tool call when its context has no earlier
	// deadline; past it the call is answered CodeTimeout and the server
	// told to cancel it.
	CallTimeout = 2 * time.Minute
	// MaxTools bounds the tools kept of one listing; the rest are refused
	// (CodeTooManyTools).
	MaxTools = 256
	// MaxListPages bounds the pages of one listing followed.
	MaxListPages = 16
	// MaxSchemaBytes bounds a tool's input or output schema, as JSON.
	MaxSchemaBytes = 64 << 10
	// MaxDescriptionBytes bounds a tool's description kept (cut past it,
	// saying so), and maxTitleBytes its title.
	MaxDescriptionBytes = 4 << 10
	maxTitleBytes       = 256
	// maxToolNameBytes is the longest tool name MCP allows.
	maxToolNameBytes = 128
)

// Tool is one tool a server lists, as Loom keeps it: the server's name,
// its title and description (cut to their bounds), its schemas as JSON,
// and its annotations read with MCP's defaults. Annotations are a
// server's word, never checked.
type Tool struct {
	Name        string
	Title       string
	Description string
	// InputSchema is a JSON Schema of type "object" that resolves.
	InputSchema json.RawMessage
	// OutputSchema is the schema every successful result's
	// structuredContent is checked against; nil when none is declared.
	OutputSchema json.RawMessage
	// ReadOnly, Idempotent and Destructive are readOnlyHint,
	// idempotentHint and destructiveHint (true when absent, and false for
	// a read-only tool, as MCP defines it).
	ReadOnly, Idempotent, Destructive bool
}

// entry is one listed tool and what Loom made of it.
type entry struct {
	t     Tool
	shape string // the digest of its schemas and annotations
	out   *jsonschema.Resolved
	err   *Error // why it is not called: a duplicate, a bad schema
}

// catalogue is a server's tools as last listed, across incarnations.
type catalogue struct {
	tools    map[string]*entry
	order    []string
	refused  []*Error          // what the last listing refused
	poisoned map[string]*Error // changed without announcement: refused while the Client lives
	heard    uint64            // the announcements heard when it was listed
	relist   bool              // list again before the next call (a call was refused)
	listed   bool
}

func newCatalogue() *catalogue {
	return &catalogue{tools: map[string]*entry{}, poisoned: map[string]*Error{}}
}

// announced records notifications/tools/list_changed: the next request
// lists the tools again.
func (c *Client) announced(*mcp.ClientSession) {
	c.mu.Lock()
	c.heard++
	c.mu.Unlock()
}

// Tools returns the server's tools, in the order it lists them, starting
// it when it does not run; the tools it listed that cannot be called are
// left out, and each said in a *Error (CodeDuplicateTool,
// CodeBadInputSchema, CodeTooManyTools, CodeUnannouncedChange).
func (c *Client) Tools(ctx context.Context) ([]Tool, []*Error, error) {
	r, e := c.ready(ctx)
	if e != nil {
		return nil, nil, e
	}
	if e := c.list(ctx, r); e != nil {
		return nil, nil, e
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Tool
	refused := append([]*Error(nil), c.cat.refused...)
	for _, n := range c.cat.order {
		en := c.cat.tools[n]
		if p := c.cat.poisoned[n]; p != nil {
			refused = append(refused, p)
			continue
		}
		if en.err == nil {
			out = append(out, en.t)
		}
	}
	return out, refused, nil
}

// list lists r's tools when they were not listed in this incarnation,
// or the server announced a change, or a call was refused since.
func (c *Client) list(ctx context.Context, r *run) *Error {
	c.listMu.Lock()
	defer c.listMu.Unlock()
	c.mu.Lock()
	heard := c.heard
	announced, relist, first := heard != c.cat.heard, c.cat.relist, !c.cat.listed
	c.mu.Unlock()
	if r.listed && !announced && !relist {
		return nil
	}
	name := c.cfg.Name
	next := newCatalogue()
	var cursor string
	pages := 0
	for {
		pages++
		res, err := r.cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return c.failed(ctx, r, "", err)
		}
		for _, t := range res.Tools {
			if len(next.order) >= MaxTools {
				next.refused = append(next.refused, &Error{Code: CodeTooManyTools, Server: name, Reason: fmt.Sprintf("it listed more than %d tools; the rest are left out", MaxTools)})
				break
			}
			if len(t.Name) > maxToolNameBytes || t.Name == "" {
				next.refused = append(next.refused, &Error{Code: CodeBadToolName, Server: name, Tool: cutText(t.Name, 64),
					Reason: fmt.Sprintf("a tool's name is empty or longer than the %d bytes MCP allows", maxToolNameBytes)})
				continue
			}
			en := decodeTool(name, t)
			if old := next.tools[t.Name]; old != nil {
				old.err = &Error{Code: CodeDuplicateTool, Server: name, Tool: t.Name, Reason: "it listed two tools of this name; neither is called"}
				continue
			}
			next.tools[t.Name] = en
			next.order = append(next.order, t.Name)
		}
		if res.NextCursor == "" || len(next.order) >= MaxTools {
			break
		}
		if pages >= MaxListPages {
			next.refused = append(next.refused, &Error{Code: CodeTooManyTools, Server: name, Reason: fmt.Sprintf("its list ran past %d pages; the rest are left out", MaxListPages)})
			break
		}
		cursor = res.NextCursor
	}
	for _, n := range next.order {
		if en := next.tools[n]; en.err != nil {
			next.refused = append(next.refused, en.err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	next.poisoned = c.cat.poisoned
	if !first && !announced {
		// Listed again without an announcement (a new incarnation, or a
		// call it refused): a tool whose declaration changed is not
		// trusted again.
		for n, old := range c.cat.tools {
			if en := next.tools[n]; en != nil && old.err == nil && en.err == nil && en.shape != old.shape && next.poisoned[n] == nil {
				next.poisoned[n] = &Error{Code: CodeUnannouncedChange, Server: name, Tool: n,
					Reason: "it changed this tool's declaration without notifications/tools/list_changed; it is not called again this session"}
			}
		}
	}
	next.listed, next.heard = true, heard
	c.cat = next
	r.listed = true
	return nil
}

// decodeTool makes an entry of what the server listed.
func decodeTool(server string, t *mcp.Tool) *entry {
	en := &entry{t: Tool{Name: t.Name, Title: cutText(t.Title, maxTitleBytes)}}
	en.t.Description = cutText(t.Description, MaxDescriptionBytes)
	if a := t.Annotations; a != nil {
		if en.t.Title == "" {
			en.t.Title = cutText(a.Title, maxTitleBytes)
		}
		en.t.ReadOnly = a.ReadOnlyHint
		en.t.Idempotent = a.IdempotentHint
		en.t.Destructive = !a.ReadOnlyHint && (a.DestructiveHint == nil || *a.DestructiveHint)
	} else {
		en.t.Destructive = true
	}
	bad := func(format string, args ...any) *entry {
		en.err = &Error{Code: CodeBadInputSchema, Server: server, Tool: t.Name, Reason: fmt.Sprintf(format, args...)}
		return en
	}
	in, err := json.Marshal(t.InputSchema)
	if err != nil || len(in) > MaxSchemaBytes {
		return bad("its input schema is not JSON of at most %d bytes", MaxSchemaBytes)
	}
	if _, err := resolveObject(in); err != nil {
		return bad("its input schema: %s", oneLine(err.Error(), 200))
	}
	en.t.InputSchema = in
	if t.OutputSchema != nil {
		out, err := json.Marshal(t.OutputSchema)
		if err != nil || len(out) > MaxSchemaBytes {
			return bad("its output schema is not JSON of at most %d bytes", MaxSchemaBytes)
		}
		rs, err := resolveObject(out)
		if err != nil {
			return bad("its output schema: %s", oneLine(err.Error(), 200))
		}
		en.t.OutputSchema, en.out = out, rs
	}
	shape, _ := json.Marshal(struct {
		In, Out                     json.RawMessage
		ReadOnly, Idem, Destructive bool
	}{en.t.InputSchema, en.t.OutputSchema, en.t.ReadOnly, en.t.Idempotent, en.t.Destructive})
	sum := sha256.Sum256(shape)
	en.shape = hex.EncodeToString(sum[:])
	return en
}

// resolveObject parses raw as a JSON Schema of type "object" and
// resolves it, with no loader: a remote reference does not resolve.
func resolveObject(raw json.RawMessage) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %v", err)
	}
	if s.Type != "object" {
		return nil, fmt.Errorf(`its type is %q, not "object"`, s.Type)
	}
	return s.Resolve(nil)
}

// Result is a tool call's answer, decoded: bounded, every block
// accounted for, nothing of its _meta kept.
type Result struct {
	// Text is the text of its content blocks, joined by newlines; a block
	// that is not shown (audio, an image of another type, a binary
	// resource, an unknown type) is a line saying what it was. Invalid
	// UTF-8 is replaced.
	Text string
	// Images are its image blocks of type PNG, JPEG, GIF or WebP.
	Images []tool.Image
	// Structured is its structuredContent, checked against the tool's
	// outputSchema when it declares one; nil when it sent none.
	Structured json.RawMessage
	// IsError: the server's tool reported a failure.
	IsError bool
}

// Call calls the server's tool name with args (a JSON object; nil is
// {}), starting the server when it does not run. Every failure is a
// *Error: the server's, the connection's, or a refusal of what it
// answered (CodeOutputMismatch). A result with IsError is no error.
func (c *Client) Call(ctx context.Context, name string, args json.RawMessage) (*Result, error) {
	res, e := c.call(ctx, name, "", args)
	if e != nil {
		return nil, e
	}
	return res, nil
}

// call is Call for a tool registered with the declaration shape (empty:
// any declaration).
func (c *Client) call(ctx context.Context, name, shape string, args json.RawMessage) (*Result, *Error) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if _, ok := ctx.Deadline(); !ok || c.test.callTimeout > 0 {
		d := CallTimeout
		if c.test.callTimeout > 0 {
			d = c.test.callTimeout
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	r, e := c.ready(ctx)
	if e != nil {
		return nil, e
	}
	if e := c.list(ctx, r); e != nil {
		return nil, e
	}
	en, e := c.declared(name, shape)
	if e != nil {
		return nil, e
	}
	res, err := r.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, c.failed(ctx, r, name, err)
	}
	return c.decodeResult(en, res)
}

// declared returns the entry of the tool name, or why it is not called.
func (c *Client) declared(name, shape string) (*entry, *Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.cat.poisoned[name]; p != nil {
		return nil, p
	}
	en := c.cat.tools[name]
	switch {
	case en == nil:
		return nil, &Error{Code: CodeUnknownTool, Server: c.cfg.Name, Tool: name, Reason: "the server does not list this tool"}
	case en.err != nil:
		return nil, en.err
	case shape != "" && en.shape != shape:
		return nil, &Error{Code: CodeToolChanged, Server: c.cfg.Name, Tool: name,
			Reason: "the server changed this tool's declaration since it was offered; it is not called until the host offers it again"}
	}
	return en, nil
}

// failed says why a request to r failed: the run ended (why), the
// call's time ran out, the server answered an error (its tools are then
// listed again before the next call), or its answer did not decode (it
// is stopped).
func (c *Client) failed(ctx context.Context, r *run, name string, err error) *Error {
	var je *jsonrpc.Error
	switch {
	case r.ended():
		return c.withTool(c.endedErr(r), name)
	case errors.As(err, &je):
		c.mu.Lock()
		c.cat.relist = true
		c.mu.Unlock()
		return &Error{Code: CodeRequestFailed, Server: c.cfg.Name, Tool: name, Reason: fmt.Sprintf("the server refused the request (%d): %s", je.Code, oneLine(je.Message, 300))}
	case ctx.Err() != nil:
		return &Error{Code: CodeTimeout, Server: c.cfg.Name, Tool: name, Reason: "the server did not answer in time; it was told to cancel the call"}
	case errors.Is(err, mcp.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.ErrClosedPipe):
		// The connection went with the process: watch says how it ended.
		select {
		case <-r.done:
		case <-time.After(StopTimeout):
			r.stop(errorf(CodeCrashed, c.cfg.Name, "its connection was lost: %s", oneLine(err.Error(), 200)))
			<-r.done
		}
		return c.withTool(c.endedErr(r), name)
	}
	r.stop(errorf(CodeProtocol, c.cfg.Name, "its answer did not decode: %s", oneLine(err.Error(), 300)))
	<-r.done
	return c.withTool(c.endedErr(r), name)
}

func (c *Client) withTool(e *Error, name string) *Error {
	e.Tool = name
	return e
}

// imageTypes are the image types a result's images may have.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// decodeResult makes a Result of what the server answered.
func (c *Client) decodeResult(en *entry, res *mcp.CallToolResult) (*Result, *Error) {
	out := &Result{IsError: res.IsError}
	var b strings.Builder
	line := func(s string) {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	for _, blk := range res.Content {
		switch v := blk.(type) {
		case *mcp.TextContent:
			line(v.Text)
		case *mcp.ImageContent:
			if imageTypes[v.MIMEType] {
				out.Images = append(out.Images, tool.Image{MIME: v.MIMEType, Data: v.Data})
			} else {
				line(fmt.Sprintf("[an image of type %s, %d bytes, not shown]", oneLine(v.MIMEType, 64), len(v.Data)))
			}
		case *mcp.AudioContent:
			line(fmt.Sprintf("[audio of type %s, %d bytes, not shown]", oneLine(v.MIMEType, 64), len(v.Data)))
		case *mcp.ResourceLink:
			line(fmt.Sprintf("[a resource link: %s <%s>]", oneLine(v.Name, 200), oneLine(v.URI, 500)))
		case *mcp.EmbeddedResource:
			switch {
			case v.Resource == nil:
				line("[an empty embedded resource]")
			case v.Resource.Blob == nil:
				line(v.Resource.Text)
			default:
				line(fmt.Sprintf("[an embedded resource <%s> of %d bytes, not shown]", oneLine(v.Resource.URI, 500), len(v.Resource.Blob)))
			}
		default:
			line(fmt.Sprintf("[content of type %T, not shown]", blk))
		}
	}
	out.Text = strings.ToValidUTF8(b.String(), "\uFFFD")
	if res.StructuredContent != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err == nil {
			out.Structured = raw
		}
	}
	if en.out != nil && !res.IsError {
		mismatch := func(why string) (*Result, *Error) {
			// The server may have changed the tool: it is listed again
			// before the next call.
			c.mu.Lock()
			c.cat.relist = true
			c.mu.Unlock()
			return nil, &Error{Code: CodeOutputMismatch, Server: c.cfg.Name, Tool: en.t.Name, Reason: why}
		}
		if out.Structured == nil {
			return mismatch("the tool declares an output schema and its result carries no structuredContent; nothing of it is shown")
		}
		var v any
		if err := json.Unmarshal(out.Structured, &v); err != nil {
			return mismatch("its structuredContent is not JSON")
		}
		if err := en.out.Validate(v); err != nil {
			return mismatch("its structuredContent does not match its output schema: " + oneLine(err.Error(), 300) + "; nothing of it is shown")
		}
	}
	return out, nil
}

// cutText cuts s to n bytes on a rune boundary, replacing invalid UTF-8.
func cutText(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
