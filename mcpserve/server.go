package mcpserve

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentloom/loom/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// DefaultName is the implementation name a Server reports when
	// Options.Name is empty.
	DefaultName = "loom"
	// DefaultVersion is the implementation version a Server reports when
	// Options.Version is empty.
	DefaultVersion = "dev"
	// DefaultStrand is the strand of every call when the session
	// template names none.
	DefaultStrand = "mcp"
)

// stepID is the step of every call: each request is an operation of its
// own holding exactly one call, at source index 0.
const stepID = "1"

// Options configure a Server. The zero value is usable.
type Options struct {
	// Name and Version identify the server to clients; empty means
	// DefaultName and DefaultVersion.
	Name, Version string
	// Instructions are shown to clients that surface server instructions.
	Instructions string
	// OpPrefix starts every operation id, followed by "/" and the
	// request's sequence number; empty means the session's strand.
	OpPrefix string
	// ProgressInterval is the least time between two progress
	// notifications of one call; 0 means ProgressInterval.
	ProgressInterval time.Duration
	// Logger receives the SDK's diagnostics; nil discards them (stdout
	// belongs to the protocol).
	Logger *slog.Logger
	// ApproveWithElicitation answers the refusals a tool raises
	// (tool.Call.RaiseRefusal, replacing the template's) by asking the
	// client's user with an MCP elicitation/create request that names the
	// tool, exactly the grants wanted and what runs, as the tool raised it
	// (tool.RaisedRefusal.Describe). Only an explicit accept resumes the
	// call, with exactly those grants, for that call only. Decline,
	// cancel, the timeout, and
	// a client without the elicitation capability leave the refusal in
	// band, its text saying why and _meta[MetaApprovalKey] how the
	// question ended (an Approval). A session has one question open at a
	// time; the others wait their turn within their timeout. A client on
	// a multi round-trip protocol version (2026-07-28 and later) is asked
	// through an input-required result instead, and the call resumes when
	// it is retried with an accept: the same tool and arguments, this
	// Server's signed state no older than the timeout, and the refusal
	// asking for exactly the grants the question named, for exactly the
	// work it showed. False leaves the template's RaiseRefusal (nil
	// settles every refusal in band).
	ApproveWithElicitation bool
	// ApprovalTimeout bounds one approval question, from the raise to the
	// answer; 0 means ApprovalTimeout.
	ApprovalTimeout time.Duration
}

// Server serves the tools of a tool.Registry to MCP clients. It is safe
// for concurrent use and may serve several sessions; all of them share
// the session template given to New.
type Server struct {
	reg      *tool.Registry
	session  tool.Call
	opPrefix string
	interval time.Duration
	seq      atomic.Uint64
	mcp      *mcp.Server
	tools    []tool.Tool
	approve  *approver // nil unless Options.ApproveWithElicitation
}

// errNilRegistry is returned by New when it is given no registry.
var errNilRegistry = errors.New("mcpserve: New needs a registry")

// New returns a Server offering every tool reg holds now (tools/list
// returns them sorted by name); tools registered later are not offered. session is
// the template of every call: the bridge copies it per request, setting
// OpID to "<prefix>/<n>" (n counts requests from 1), StepID to "1" and
// SourceIndex to 0, and Strand to DefaultStrand when the template has
// none. A nil session is the zero Call. New fails with a *ToolError when a
// tool cannot be served (see CheckTool).
func New(reg *tool.Registry, session *tool.Call, o Options) (*Server, error) {
	if reg == nil {
		return nil, errNilRegistry
	}
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Version == "" {
		o.Version = DefaultVersion
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{reg: reg}
	if session != nil {
		s.session = *session
	}
	if s.session.Strand == "" {
		s.session.Strand = DefaultStrand
	}
	s.interval = o.ProgressInterval
	if s.interval <= 0 {
		s.interval = ProgressInterval
	}
	if o.ApproveWithElicitation {
		s.approve = &approver{timeout: o.ApprovalTimeout, turns: map[*mcp.ServerSession]chan struct{}{}, stateKey: newStateKey()}
		if s.approve.timeout <= 0 {
			s.approve.timeout = ApprovalTimeout
		}
	}
	s.opPrefix = o.OpPrefix
	if s.opPrefix == "" {
		s.opPrefix = s.session.Strand
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: o.Name, Version: o.Version}, &mcp.ServerOptions{
		Instructions: o.Instructions,
		Logger:       o.Logger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	for _, t := range reg.Registered() {
		if err := CheckTool(t); err != nil {
			return nil, err
		}
		s.tools = append(s.tools, t)
		s.mcp.AddTool(describe(t), s.handler(t.Name))
	}
	return s, nil
}

// describe is the MCP listing of t, its annotations stated from its
// declaration: readOnlyHint from ReadOnly; idempotentHint for a tool that
// reads or may be re-executed without a second effect (ReplaySafe); the
// title from Title (the name with its underscores as spaces when the
// tool has none). destructiveHint and openWorldHint are left unstated,
// so a client takes MCP's defaults (true, for a tool that is not
// read-only): a declaration says nothing finer.
func describe(t tool.Tool) *mcp.Tool {
	title := title(t)
	return &mcp.Tool{
		Name:        t.Name,
		Title:       title,
		Description: t.Description,
		InputSchema: t.Schema,
		Annotations: &mcp.ToolAnnotations{
			Title:          title,
			ReadOnlyHint:   t.ReadOnly,
			IdempotentHint: t.ReadOnly || t.Replay == tool.ReplaySafe,
		},
	}
}

// title is the title t is listed with: its Title, else its name with
// underscores as spaces and the first letter upper case.
func title(t tool.Tool) string {
	if t.Title != "" {
		return t.Title
	}
	s := strings.ReplaceAll(t.Name, "_", " ")
	if s != "" && s[0] >= 'a' && s[0] <= 'z' {
		s = string(s[0]-'a'+'A') + s[1:]
	}
	return s
}

// Tools returns the tools the server offers, in the registry's
// registration order.
func (s *Server) Tools() []tool.Tool { return append([]tool.Tool(nil), s.tools...) }

// MCP returns the underlying SDK server, for hosts that serve it over a
// transport of their own (for example streamable HTTP).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves one session over t until the client disconnects or ctx ends.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	return s.mcp.Run(ctx, t)
}

// ServeStdio serves one session over the process's standard input and
// output with a Transport, which answers malformed lines instead of
// ending the session. When standard input ends, every request already
// read is finished and answered before ServeStdio returns; when ctx ends
// (a signal, say), it returns at once, cancelling what runs. Nothing else
// may write to standard output.
func (s *Server) ServeStdio(ctx context.Context) error {
	return s.Run(ctx, &Transport{Reader: os.Stdin, Writer: nopCloser{os.Stdout}})
}

type nopCloser struct{ io.Writer }

// handler dispatches calls of the tool named name.
func (s *Server) handler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c := s.callFor()
		var p *progress
		if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
			p = startProgress(ctx, token, s.interval, req.Session.NotifyProgress)
			host := c.ObserveOutput
			c.ObserveOutput = func(t tool.OutputTail) {
				if host != nil {
					host(t)
				}
				p.Observe(t)
			}
		}
		var k *asked
		var rt *roundTrip
		switch {
		case s.approve != nil && roundTrips(req.Session):
			k = &asked{}
			rt = s.approve.roundTrip(req.Session, req.Params, k)
			c.RaiseRefusal = rt.raise
		case s.approve != nil:
			k = &asked{}
			c.RaiseRefusal = s.approve.raiser(req.Session, name, req.Params.Arguments, k)
		}
		out := s.reg.Dispatch(ctx, c, name, req.Params.Arguments)
		if p != nil {
			p.stop()
		}
		if rt != nil && rt.ask != nil && out.IsError {
			return rt.ask, nil
		}
		res := result(out)
		if k != nil {
			annotate(res, k)
		}
		return res, nil
	}
}

// callFor builds the Call of one request from the session template.
func (s *Server) callFor() *tool.Call {
	n := s.seq.Add(1)
	return s.session.At(s.opPrefix+"/"+strconv.FormatUint(n, 10), stepID, 0)
}
