package loomgenkit

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/firebase/genkit/go/ai"

	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

// UnknownToolName is the tool a Toolset answers, in band, every call of
// a name it does not offer: its middleware renames such a call to it
// for Genkit's tool loop (which aborts the generation on a name it does
// not know) and restores the name the model wrote before the model
// reads the conversation again. The model is never offered it.
const UnknownToolName = "loom_unknown_tool"

// EmptyOutput stands in for an outcome with neither text nor images.
const EmptyOutput = "(no output)"

// originalName is the part metadata key holding the name the model wrote
// for a call renamed to UnknownToolName.
const originalName = "loomName"

// Toolset is one strand's Loom tools as Genkit tools, for the Generate
// calls of one run: pass GenerateOptions to genkit.Generate. Its tools
// dispatch through a plane.Dispatcher with DispatchOne, so however
// Genkit schedules a turn's calls (each on its own goroutine), an
// Exclusive tool runs alone among its strand's calls.
//
// Its middleware, wrapping the model, gives the model each tool's Loom
// schema (the Genkit tools themselves take any input, so Genkit never
// refuses arguments before Loom answers them in band), answers unknown
// names through UnknownToolName, and numbers the model's turns: turn n
// is step "step-n" of the call template's operation, a call's index its
// position among the turn's tool requests, its ID the request's Ref (set
// to "<step>/<index>" when the model gave none).
type Toolset struct {
	d       plane.Dispatcher
	c       *tool.Call
	tools   []ai.ToolRef
	schemas map[string]map[string]any // by offered tool name

	mu      sync.Mutex
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

// NewToolset returns the Toolset of strand c.Strand: the tools of
// d.Registry that strand holds (Registry.Holds), in registration order,
// dispatched through d with copies of c. It fails only on a schema that is not a
// JSON object, which a Registry never holds.
func NewToolset(ctx context.Context, d plane.Dispatcher, c *tool.Call) (*Toolset, error) {
	reg := d.Registry
	s := &Toolset{d: d, c: c, schemas: map[string]map[string]any{}, renamed: map[string]string{}}
	for _, t := range reg.Registered() {
		if !reg.Holds(ctx, c.Strand, t.Name) {
			continue
		}
		var schema map[string]any
		if err := json.Unmarshal(t.Schema, &schema); err != nil || schema == nil {
			return nil, fmt.Errorf("loomgenkit: tool %s: the schema is not a JSON object: %s", t.Name, t.Schema)
		}
		s.schemas[t.Name] = schema
		s.tools = append(s.tools, s.tool(t.Name, t.Description, false))
	}
	s.tools = append(s.tools, s.tool(UnknownToolName, "", true))
	return s, nil
}

// GenerateOptions are the options that give a Generate call the
// Toolset: its tools and its middleware.
func (s *Toolset) GenerateOptions() []ai.GenerateOption {
	return []ai.GenerateOption{ai.WithTools(s.tools...), ai.WithMiddleware(s.middleware)}
}

// tool is the Genkit tool named name, answering through the plane.
func (s *Toolset) tool(name, description string, unknown bool) ai.Tool {
	return ai.NewMultipartTool(name, description, func(tc *ai.ToolContext, input any) (*ai.MultipartToolResponse, error) {
		args, err := json.Marshal(input)
		if err != nil || bytes.Equal(args, []byte("null")) {
			args = []byte("{}")
		}
		step, index, ref, called := s.claim(name, string(args), unknown)
		res := s.d.DispatchOne(tc, s.c, s.c.OpID, step, index, plane.ToolCall{ID: ref, Name: called, Args: args})
		return Response(res.Outcome), nil
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
		for _, def := range req.Tools {
			schema, ok := s.schemas[def.Name]
			if !ok {
				continue // UnknownToolName, and tools the host added itself
			}
			d := *def
			d.InputSchema = schema
			r.Tools = append(r.Tools, &d)
		}
		for _, def := range req.Tools {
			if _, ok := s.schemas[def.Name]; !ok && def.Name != UnknownToolName {
				r.Tools = append(r.Tools, def)
			}
		}
		r.Messages = s.restore(req.Messages)
		resp, err := next(ctx, &r, cb)
		if err == nil && resp != nil && resp.Message != nil {
			s.begin(resp.Message)
		}
		return resp, err
	}
}

// begin starts the next step with the tool requests of msg, renaming
// those of a name the Toolset does not offer to UnknownToolName.
func (s *Toolset) begin(msg *ai.Message) {
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

// Response is o as a Genkit tool response. Genkit's tool responses have
// no error flag: an error outcome's Output text starts with
// "error <code>: " (ErrorText). Images follow as media parts, each a
// base64 data URL.
func Response(o tool.Outcome) *ai.MultipartToolResponse {
	text := ErrorText(o)
	if text == "" && len(o.Images) == 0 {
		text = EmptyOutput
	}
	r := &ai.MultipartToolResponse{Output: text}
	for _, img := range o.Images {
		r.Content = append(r.Content, ai.NewMediaPart(img.MIME, "data:"+img.MIME+";base64,"+base64.StdEncoding.EncodeToString(img.Data)))
	}
	return r
}

// ErrorText is the text the model reads for o: o.Text, prefixed by
// "error <code>: " when o is an error.
func ErrorText(o tool.Outcome) string {
	if !o.IsError {
		return o.Text
	}
	if o.Code == "" {
		return "error: " + o.Text
	}
	return "error " + string(o.Code) + ": " + o.Text
}
