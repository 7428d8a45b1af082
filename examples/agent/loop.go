package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/tool"
)

// A Provider is one model API: it sends a conversation and answers the
// model's next message. Everything provider-specific (wire format, tool
// definitions, images) lives behind it, in one file per provider
// (anthropic.go).
type Provider interface {
	Next(ctx context.Context, req Request) (Reply, error)
}

// Request is one model call: the system prompt, the tools the strand
// holds, and the conversation so far.
type Request struct {
	System   string
	Tools    []tool.Tool
	Messages []Message
}

// Message is one turn of a conversation. A user turn carries Text (the
// task, or messages sent to a sub-agent) and the Results of the previous
// assistant turn's Calls, in the order of those calls.
type Message struct {
	Role    Role
	Text    string
	Calls   []plane.ToolCall
	Results []plane.Result
}

// Role says who wrote a Message.
type Role string

// The two roles of a conversation.
const (
	User      Role = "user"
	Assistant Role = "assistant"
)

// Reply is the model's next message: its text and the tool calls it
// makes, in the order it wrote them. A reply without calls is final.
type Reply struct {
	Text  string
	Calls []plane.ToolCall
	// Usage is what the provider counted for the call.
	Usage Usage
}

// Usage is the tokens one model call counted: the prompt it read (fresh,
// written to the cache and read from it) and the reply it wrote.
type Usage struct {
	Input, CacheCreation, CacheRead, Output int
}

// InUse is the tokens the strand's context holds once the reply is
// added: everything the call read and wrote. It is the one number the
// loop both acts on and tells the model (context_remaining).
func (u Usage) InUse() int { return u.Input + u.CacheCreation + u.CacheRead + u.Output }

// ContextWindow is the context window, in tokens, the loop reports for
// every strand (DefaultModel's).
const ContextWindow = 200_000

// DefaultMaxSteps bounds the model calls of one run when Loop.MaxSteps is
// zero or less.
const DefaultMaxSteps = 50

// The kinds of history entries the loop indexes.
const (
	KindMessage    = "message"
	KindToolCall   = "tool_call"
	KindToolResult = "tool_result"
)

// Loop is the agent loop: it asks the Provider for the next message,
// dispatches its tool calls as one batch through the plane, sends the
// outcomes back, and indexes everything in the plane's history as it
// goes, until the model answers without calling a tool. The same Loop
// runs the main strand and, as its Runner, every sub-agent.
type Loop struct {
	Plane    *plane.Plane
	Provider Provider
	// MaxSteps bounds one run's model calls; zero or less means
	// DefaultMaxSteps.
	MaxSteps int
	// Log, when set, is shown each step's tool calls and outcomes; the
	// strands of one session write it one line at a time.
	Log io.Writer

	logMu sync.Mutex
	// usage is each strand's last reply's Usage, under usageMu.
	usageMu sync.Mutex
	usage   map[string]Usage
	// transcripts is each sub-agent's conversation as its last run left
	// it, under transcriptsMu: a continuation (agent_send after the run
	// ended) goes on from it.
	transcriptsMu sync.Mutex
	transcripts   map[string][]Message
}

// ErrStepLimit is returned by Run when the model is still calling tools
// after MaxSteps model calls.
var ErrStepLimit = errors.New("the model kept calling tools past the step limit")

// Run runs one strand's turn: c is the strand's call template (its
// Strand and OpID set), prompt its first message, tools the names it
// holds (nil: every registered tool), inbox (optional) drains messages
// sent to it between steps. It returns the model's final text.
func (l *Loop) Run(ctx context.Context, c *tool.Call, system, prompt string, tools []string, inbox func() []string) (string, error) {
	text, _, err := l.converse(ctx, c, system, nil, prompt, tools, inbox)
	return text, err
}

// converse runs one turn as Run does, going on from the conversation
// earlier (nil: a new one), and answers the conversation as the turn
// left it.
func (l *Loop) converse(ctx context.Context, c *tool.Call, system string, earlier []Message, prompt string, tools []string, inbox func() []string) (string, []Message, error) {
	req := Request{System: system, Tools: l.toolsFor(tools), Messages: continued(earlier, prompt)}
	l.index(ctx, c, "prompt", KindMessage, string(User), prompt)
	max := l.MaxSteps
	if max <= 0 {
		max = DefaultMaxSteps
	}
	dispatcher := l.Plane.Dispatcher()
	for n := 1; n <= max; n++ {
		step := fmt.Sprintf("step-%d", n)
		reply, err := l.Provider.Next(ctx, req)
		if err != nil {
			return "", req.Messages, fmt.Errorf("%s %s: %w", c.Strand, step, err)
		}
		l.recordUsage(c.Strand, reply.Usage)
		req.Messages = append(req.Messages, Message{Role: Assistant, Text: reply.Text, Calls: reply.Calls})
		l.index(ctx, c, step+"/text", KindMessage, string(Assistant), reply.Text)
		for i, call := range reply.Calls {
			l.index(ctx, c, fmt.Sprintf("%s/call-%d", step, i), KindToolCall, string(Assistant), call.Name+" "+string(call.Args))
		}
		if len(reply.Calls) == 0 {
			return reply.Text, req.Messages, nil
		}
		results := dispatcher.Dispatch(ctx, c, c.OpID, step, reply.Calls)
		terminate := false
		for i, r := range results {
			l.logf("%s %s[%d] %s -> error=%v %s\n", c.Strand, step, i, r.Name, r.Outcome.IsError, firstLine(r.Outcome.Text))
			l.index(ctx, c, fmt.Sprintf("%s/result-%d", step, i), KindToolResult, "tool", r.Name+": "+r.Outcome.Text)
			terminate = terminate || r.Outcome.Terminate
		}
		next := Message{Role: User, Results: results}
		if inbox != nil {
			next.Text = strings.Join(inbox(), "\n\n")
		}
		req.Messages = append(req.Messages, next)
		if terminate {
			return reply.Text, req.Messages, nil
		}
	}
	return "", req.Messages, fmt.Errorf("%s: %w (%d)", c.Strand, ErrStepLimit, max)
}

// continued is the conversation earlier followed by prompt as a user
// message, merged into earlier's last message when that is a user's (a
// run that failed after sending results).
func continued(earlier []Message, prompt string) []Message {
	msgs := slices.Clone(earlier)
	if n := len(msgs); n > 0 && msgs[n-1].Role == User {
		msgs[n-1].Text = strings.TrimSpace(msgs[n-1].Text + "\n\n" + prompt)
		return msgs
	}
	return append(msgs, Message{Role: User, Text: prompt})
}

// Runner returns the loop as the reference Agency's Runner: each child
// runs its own loop with its own tools and call coordinates. A continued
// child goes on from its whole transcript, which the loop keeps per
// strand for the session; a child the loop has no transcript of (a host
// restarted over a durable Agency) is shown the Agency's record of its
// earlier runs (agent.Turn.Earlier) before the new message.
func (l *Loop) Runner() agent.Runner {
	return agent.RunnerFunc(func(ctx context.Context, t agent.Turn) (string, error) {
		l.transcriptsMu.Lock()
		earlier := l.transcripts[t.Strand]
		l.transcriptsMu.Unlock()
		prompt := t.Prompt
		if earlier == nil {
			prompt = earlierText(t) + prompt
		}
		text, msgs, err := l.converse(ctx, l.Plane.CallFor(t.Strand, t.Operation), t.Notice+l.notesIndex(ctx), earlier, prompt, t.Tools, t.Inbox)
		l.transcriptsMu.Lock()
		if l.transcripts == nil {
			l.transcripts = map[string][]Message{}
		}
		l.transcripts[t.Strand] = msgs
		l.transcriptsMu.Unlock()
		return text, err
	})
}

// earlierText renders the Agency's record of t's earlier runs ahead of
// its prompt, or "" for a first run.
func earlierText(t agent.Turn) string {
	if len(t.Earlier) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Your earlier runs, oldest first")
	if t.EarlierOmitted > 0 {
		fmt.Fprintf(&b, " (%d older ones left out)", t.EarlierOmitted)
	}
	b.WriteString(":\n")
	for _, e := range t.Earlier {
		fmt.Fprintf(&b, "\n[%s, %s] asked:\n%s\nyou reported:\n%s\n", e.Operation, e.State, e.Prompt, e.Report)
	}
	b.WriteString("\nNow:\n")
	return b.String()
}

func (l *Loop) recordUsage(strand string, u Usage) {
	l.usageMu.Lock()
	defer l.usageMu.Unlock()
	if l.usage == nil {
		l.usage = map[string]Usage{}
	}
	l.usage[strand] = u
}

// Report implements agent.Gauge, context_remaining's seam, from the
// usage the provider reported for strand's last reply: the loop never
// compacts, so every strand is in its first window with no checkpoint.
// Notes counts the strand's notes on the Agency's blackboard (at most
// agent.MaxNotesListed are counted).
func (l *Loop) Report(ctx context.Context, strand string) (agent.ContextReport, error) {
	l.usageMu.Lock()
	u := l.usage[strand]
	l.usageMu.Unlock()
	r := agent.ContextReport{Window: 1, Size: ContextWindow, Used: u.InUse()}
	if l.Plane != nil && l.Plane.Agency != nil {
		page, err := l.Plane.Agency.Notes(ctx, agent.Caller{Strand: strand}, agent.NotesNamespace+strand+"/")
		if err != nil {
			return agent.ContextReport{}, err
		}
		r.Notes = len(page.Notes)
	}
	return r, nil
}

// toolsFor returns the registered tools a strand holding names may call,
// in registration order (nil: all of them).
func (l *Loop) toolsFor(names []string) []tool.Tool {
	all := l.Plane.Registry.Registered()
	if names == nil {
		return all
	}
	held := map[string]bool{}
	for _, n := range names {
		held[n] = true
	}
	var out []tool.Tool
	for _, t := range all {
		if held[t.Name] {
			out = append(out, t)
		}
	}
	return out
}

// notesIndex is the index of the memory notes stored so far
// (history.IndexNotes, at most history.MaxNotesIndexBytes), set apart
// from what precedes it, or "" when none is stored or the plane keeps no
// notes. Every run starts with it in its system prompt, so a strand knows
// what earlier sessions remembered. A failure is logged and the run goes
// on without it.
func (l *Loop) notesIndex(ctx context.Context) string {
	var lister history.NoteLister
	switch {
	case l.Plane.Store != nil:
		lister = l.Plane.Store
	case l.Plane.PostgresStore != nil:
		lister = l.Plane.PostgresStore
	}
	idx, err := history.IndexNotes(ctx, lister)
	if err != nil {
		l.logf("notes index: %v\n", err)
		return ""
	}
	if idx.Text == "" {
		return ""
	}
	return "\n" + idx.Text
}

// index adds one entry to the plane's history index, when it has one.
// The history is a help to the model, not the run's record: a failure
// is logged and the run goes on.
func (l *Loop) index(ctx context.Context, c *tool.Call, id, kind, role, text string) {
	if l.Plane.Store == nil || text == "" {
		return
	}
	e := history.Entry{Session: history.StrandSession(c), ID: c.OpID + "/" + id, Kind: kind, Role: role, Text: clip(text, history.MaxEntryTextBytes)}
	if err := l.Plane.Store.Index(ctx, e); err != nil {
		l.logf("%s: indexing %s: %v\n", c.Strand, e.ID, err)
	}
}

func (l *Loop) logf(format string, args ...any) {
	if l.Log != nil {
		l.logMu.Lock()
		defer l.logMu.Unlock()
		fmt.Fprintf(l.Log, format, args...)
	}
}

// clip cuts s to at most n bytes on a UTF-8 boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// firstLine is s up to its first newline, at most maxLogLine bytes.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return clip(s, maxLogLine)
}

// maxLogLine bounds one outcome's line in the log.
const maxLogLine = 160
