package loomgenkit

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/firebase/genkit/go/ai"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

// UnknownToolName is the tool a Toolset answers, in band, every call of
// a name it does not offer: its middleware renames such a call to it
// for Genkit's tool loop (which aborts the generation on a name it does
// not know) and restores the name the model wrote before the model
// reads the conversation again. The model is never offered it.
const UnknownToolName = "loom_unknown_tool"

// emptyOutput stands in for an outcome with neither text nor images.
const emptyOutput = "(no output)"

// originalName is the part metadata key holding the name the model wrote
// for a call renamed to UnknownToolName.
const originalName = "loomName"

// Toolset is one strand's Loom tools as Genkit tools, for the Generate
// calls of one run: pass GenerateOptions to genkit.Generate. Its tools
// dispatch through Dispatcher with DispatchOne, so however Genkit
// schedules a turn's calls (each on its own goroutine), an Exclusive
// tool runs alone among its strand's calls.
//
// Its middleware, wrapping the model, gives the model each tool's Loom
// schema (the Genkit tools themselves take any input, so Genkit never
// refuses arguments before Loom answers them in band), answers unknown
// names through UnknownToolName, and numbers the model's turns: turn n
// is step "step-n" of the call template's operation, a call's index its
// position among the turn's tool requests, its ID the request's Ref (set
// to "<step>/<index>" when the model gave none). Its fields must not
// change once it is used.
type Toolset struct {
	// Dispatcher runs the calls; Plane.Dispatcher() holds the plane's
	// Fence. Its Registry gives the tools' names, descriptions and
	// schemas.
	Dispatcher plane.Dispatcher
	// Call is the strand's template, Plane.CallFor(strand, opID).
	Call *tool.Call
	// Only, when non-nil, narrows the tools offered to these names (a
	// sub-agent's Turn.Tools). Either way a tool is offered only while
	// the strand holds it (tool.Registry.Holds).
	Only []string

	limit *agent.TurnLimitError // set by Runner: a reply past it that calls tools is refused

	mu      sync.Mutex
	tools   []ai.ToolRef
	schemas map[string]map[string]any // by offered tool name
	step    int
	pending []pendingCall     // the current turn's tool requests
	renamed map[string]string // original names of renamed calls, by Ref
}

// pendingCall is one tool request of the current turn, until a tool
// function claims it.
type pendingCall struct {
	ref, name string
	args      string // canonical JSON of the input
	unknown   bool
	claimed   bool
}

// NewToolset returns the toolset of the strand c names, for the run
// c.OpID, dispatched through d.
func NewToolset(d plane.Dispatcher, c *tool.Call) *Toolset {
	return &Toolset{Dispatcher: d, Call: c, renamed: map[string]string{}}
}

// GenerateOptions are the options that give a Generate call the
// Toolset: one Genkit tool per tool the strand may call, in registration
// order, and its middleware. It fails only on a schema that is not a
// JSON object, which a Registry never holds.
func (s *Toolset) GenerateOptions(ctx context.Context) ([]ai.GenerateOption, error) {
	schemas := map[string]map[string]any{}
	var tools []ai.ToolRef
	for _, t := range s.Dispatcher.Offered(ctx, s.strand(), s.Only) {
		var schema map[string]any
		if err := json.Unmarshal(t.Schema, &schema); err != nil || schema == nil {
			return nil, fmt.Errorf("loomgenkit: tool %s: the schema is not a JSON object: %s", t.Name, t.Schema)
		}
		schemas[t.Name] = schema
		tools = append(tools, s.tool(t.Name, t.Description, false))
	}
	tools = append(tools, s.tool(UnknownToolName, "", true))
	s.mu.Lock()
	s.schemas, s.tools = schemas, tools
	if s.renamed == nil {
		s.renamed = map[string]string{}
	}
	s.mu.Unlock()
	return []ai.GenerateOption{ai.WithTools(tools...), ai.WithMiddleware(s.middleware)}, nil
}

func (s *Toolset) strand() string {
	if s.Call == nil {
		return ""
	}
	return s.Call.Strand
}

// tool is the Genkit tool named name, answering through the plane.
func (s *Toolset) tool(name, description string, unknown bool) ai.Tool {
	return ai.NewMultipartTool(name, description, func(tc *ai.ToolContext, input any) (*ai.MultipartToolResponse, error) {
		args, err := json.Marshal(input)
		if err != nil || bytes.Equal(args, []byte("null")) {
			args = []byte("{}")
		}
		step, index, ref, called := s.claim(name, string(args), unknown)
		opID := ""
		if s.Call != nil {
			opID = s.Call.OpID
		}
		res := s.Dispatcher.DispatchOne(tc, s.Call, opID, step, index, plane.ToolCall{ID: ref, Name: called, Args: args})
		return response(res.Outcome), nil
	})
}

// claim finds the current turn's first unclaimed request of name (the
// name the model wrote, for UnknownToolName) with args, and returns its
// coordinates and the name to dispatch.
func (s *Toolset) claim(name, args string, unknown bool) (step string, index int, ref, called string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	step = fmt.Sprintf("step-%d", s.step)
	for i := range s.pending {
		p := &s.pending[i]
		if !p.claimed && p.unknown == unknown && (unknown || p.name == name) && p.args == args {
			p.claimed = true
			return step, i, p.ref, p.name
		}
	}
	return step, len(s.pending), "", name // not seen by the middleware: still answered
}

// middleware wraps the model: it sends Loom's schemas and the names the
// model wrote, and records each reply's tool requests as the next step.
func (s *Toolset) middleware(next ai.ModelFunc) ai.ModelFunc {
	return func(ctx context.Context, req *ai.ModelRequest, cb ai.ModelStreamCallback) (*ai.ModelResponse, error) {
		r := *req
		r.Tools = nil
		s.mu.Lock()
		schemas := s.schemas
		s.mu.Unlock()
		for _, def := range req.Tools {
			schema, ok := schemas[def.Name]
			if !ok {
				continue // UnknownToolName, and tools the host added itself
			}
			d := *def
			d.InputSchema = schema
			r.Tools = append(r.Tools, &d)
		}
		for _, def := range req.Tools {
			if _, ok := schemas[def.Name]; !ok && def.Name != UnknownToolName {
				r.Tools = append(r.Tools, def)
			}
		}
		r.Messages = s.restore(req.Messages)
		resp, err := next(ctx, &r, cb)
		if err == nil && resp != nil && resp.Message != nil {
			if n := s.begin(resp.Message); s.limit != nil && n >= s.limit.MaxTurns && len(resp.ToolRequests()) > 0 {
				return nil, s.limit
			}
		}
		return resp, err
	}
}

// begin starts the next step with the tool requests of msg, renaming
// those of a name the Toolset does not offer to UnknownToolName, and
// returns the step's number.
func (s *Toolset) begin(msg *ai.Message) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.step++
	s.pending = s.pending[:0]
	for _, p := range msg.Content {
		if !p.IsToolRequest() || p.ToolRequest == nil {
			continue
		}
		tr := p.ToolRequest
		if tr.Ref == "" {
			tr.Ref = fmt.Sprintf("step-%d/%d", s.step, len(s.pending))
		}
		args, err := json.Marshal(tr.Input)
		if err != nil || bytes.Equal(args, []byte("null")) {
			args = []byte("{}")
		}
		pc := pendingCall{ref: tr.Ref, name: tr.Name, args: string(args)}
		if _, ok := s.schemas[tr.Name]; !ok {
			pc.unknown = true
			s.renamed[tr.Ref] = tr.Name
			if p.Metadata == nil {
				p.Metadata = map[string]any{}
			}
			p.Metadata[originalName] = tr.Name
			tr.Name = UnknownToolName
		}
		s.pending = append(s.pending, pc)
	}
	return s.step
}

// restore returns msgs with every renamed call and its response named as
// the model wrote it; msgs itself is left alone.
func (s *Toolset) restore(msgs []*ai.Message) []*ai.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.renamed) == 0 {
		return msgs
	}
	out := make([]*ai.Message, len(msgs))
	for i, m := range msgs {
		out[i] = m
		for j, p := range m.Content {
			var ref string
			switch {
			case p.ToolRequest != nil:
				ref = p.ToolRequest.Ref
			case p.ToolResponse != nil:
				ref = p.ToolResponse.Ref
			default:
				continue
			}
			name, ok := s.renamed[ref]
			if !ok {
				continue
			}
			if out[i] == m {
				c := *m
				c.Content = append([]*ai.Part(nil), m.Content...)
				out[i] = &c
			}
			q := *p
			if q.ToolRequest != nil {
				tr := *q.ToolRequest
				tr.Name = name
				q.ToolRequest = &tr
			} else {
				tr := *q.ToolResponse
				tr.Name = name
				q.ToolResponse = &tr
			}
			out[i].Content[j] = &q
		}
	}
	return out
}

// response is o as a Genkit tool response. Genkit's tool responses have
// no error flag: an error outcome's Output text starts with
// "error <code>: " (tool.Outcome.ModelText). Images follow as media parts, each a
// base64 data URL.
func response(o tool.Outcome) *ai.MultipartToolResponse {
	text := o.ModelText()
	if text == "" && len(o.Images) == 0 {
		text = emptyOutput
	}
	r := &ai.MultipartToolResponse{Output: text}
	for _, img := range o.Images {
		r.Content = append(r.Content, ai.NewMediaPart(img.MIME, "data:"+img.MIME+";base64,"+base64.StdEncoding.EncodeToString(img.Data)))
	}
	return r
}
