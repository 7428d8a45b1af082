package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The bounds of an approval question (see Options.ApproveWithElicitation).
const (
	// ApprovalTimeout is how long a raised refusal waits for the client's
	// answer when Options.ApprovalTimeout is zero, counted from the raise
	// (waiting for an earlier question of the session included).
	ApprovalTimeout = 2 * time.Minute
	// maxApprovalMessageBytes bounds the text of one approval question.
	// What runs takes the room the grants leave, cut with its size and
	// digest when longer (tool.RaisedRefusal.Describe). A question whose
	// grants, or what runs, would not fit is not asked (neither is ever
	// shown in part without saying so): the refusal stands,
	// ApprovalTooLarge.
	maxApprovalMessageBytes = 4 << 10
	// maxApprovalNoteBytes bounds the failure cause an in-band refusal
	// quotes when a question could not be asked.
	maxApprovalNoteBytes = 256
)

// MetaApprovalKey is the _meta key of a result whose call raised a
// refusal to the client: how the last question ended, an Approval.
const MetaApprovalKey = "agentloom/approval"

// Approval says how one approval question ended; it is the value of a
// result's _meta[MetaApprovalKey].
type Approval string

// How an approval question ends. Only ApprovalGranted widens the call.
const (
	// ApprovalGranted: the client answered accept; the call resumed with
	// exactly the grants the question named, for that call only.
	ApprovalGranted Approval = "granted"
	// ApprovalDeclined: the client's user declined.
	ApprovalDeclined Approval = "declined"
	// ApprovalCancelled: the client's user dismissed the question.
	ApprovalCancelled Approval = "cancelled"
	// ApprovalTimedOut: no answer came within the approval timeout.
	ApprovalTimedOut Approval = "timed_out"
	// ApprovalNoPath: the server has no way to ask this client: it did not
	// declare the elicitation capability, or its protocol version forbids
	// a request from the server while a call runs.
	ApprovalNoPath Approval = "no_approval_path"
	// ApprovalTooLarge: the grants wanted, or at least 256 bytes of what
	// runs, do not fit in one question of 4 KiB
	// (maxApprovalMessageBytes); nothing was asked.
	ApprovalTooLarge Approval = "too_large"
	// ApprovalFailed: the question was sent but no answer arrived (the
	// session or the call ended, or the client answered with an error).
	ApprovalFailed Approval = "failed"
)

// elicitSchema is the form of an approval question: no field to fill in,
// only accept, decline or cancel.
var elicitSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// approver asks the clients of one Server, one question at a time per
// session.
type approver struct {
	timeout  time.Duration
	stateKey []byte // signs the approval states of multi round-trip questions
	mu       sync.Mutex
	turns    map[*mcp.ServerSession]chan struct{}

	// testNow is a test hook: the clock multi round-trip states are
	// minted and checked on. Nil is time.Now.
	testNow func() time.Time
}

// now is the time a multi round-trip state is minted or checked at.
func (a *approver) now() time.Time {
	if a.testNow != nil {
		return a.testNow()
	}
	return time.Now()
}

// turn returns the session's one-question token channel, made on first
// use and forgotten when the session ends.
func (a *approver) turn(ss *mcp.ServerSession) chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ch, ok := a.turns[ss]; ok {
		return ch
	}
	ch := make(chan struct{}, 1)
	a.turns[ss] = ch
	go func() {
		_ = ss.Wait()
		a.mu.Lock()
		delete(a.turns, ss)
		a.mu.Unlock()
	}()
	return ch
}

// asked is what the questions of one call came to, for the result.
type asked struct {
	mu   sync.Mutex
	last Approval
	note string // why the refusal stands; empty when granted
}

func (k *asked) record(a Approval, note string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.last, k.note = a, note
}

func (k *asked) result() (Approval, string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.last, k.note
}

// raiser returns the RaiseRefusal of one call of tool name with args,
// asking ss's client, recording each answer in k.
func (a *approver) raiser(ss *mcp.ServerSession, name string, args json.RawMessage, k *asked) func(context.Context, tool.RaisedRefusal) tool.Escalation {
	return func(ctx context.Context, r tool.RaisedRefusal) tool.Escalation {
		if r.Denial == nil || len(r.Denial.Wanted) == 0 {
			return tool.Escalation{} // nothing an approval could grant
		}
		verdict, note := a.ask(ctx, ss, name, args, r)
		k.record(verdict, note)
		if verdict != ApprovalGranted {
			return tool.Escalation{}
		}
		return tool.Escalation{Resume: true, Grants: append([]sandbox.Grant(nil), r.Denial.Wanted...)}
	}
}

// tooLargeNote is the sentence a refusal adds when its question would not
// fit in one message.
var tooLargeNote = fmt.Sprintf("The approval question would exceed %d bytes, so nobody was asked; ask for fewer roots at a time, or name them by a shorter path.", maxApprovalMessageBytes)

// noPath says whether ss's client can be asked at all and, when it cannot,
// how the question ended and the sentence the refusal adds.
func (a *approver) noPath(ss *mcp.ServerSession) (Approval, string, bool) {
	if ss == nil {
		return ApprovalNoPath, "No approval path: this call came from no MCP session the server could ask.", false
	}
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return ApprovalNoPath, "No approval path: this MCP client did not declare the elicitation capability, so the server cannot ask its user; nobody was asked.", false
	}
	if ip.Capabilities.Elicitation.Form == nil && ip.Capabilities.Elicitation.URL != nil {
		return ApprovalNoPath, "No approval path: this MCP client accepts only URL elicitation, not the form an approval question is; nobody was asked.", false
	}
	return "", "", true
}

// ask puts one question to ss's client and says how it ended, with the
// sentence an in-band refusal adds when it was not granted.
func (a *approver) ask(ctx context.Context, ss *mcp.ServerSession, name string, args json.RawMessage, r tool.RaisedRefusal) (Approval, string) {
	if v, note, ok := a.noPath(ss); !ok {
		return v, note
	}
	msg, ok := question(name, args, r)
	if !ok {
		return ApprovalTooLarge, tooLargeNote
	}
	ctx, cancel := context.WithTimeoutCause(ctx, a.timeout, errApprovalTimeout)
	defer cancel()
	turn := a.turn(ss)
	select {
	case turn <- struct{}{}:
		defer func() { <-turn }()
	case <-ctx.Done():
		return a.ended(ctx, "waiting for an earlier approval question of this session")
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < min(minApprovalWindow, a.timeout/2) {
		// The earlier question used this one's time: asking now would give
		// its user no time to answer, while the client may still show the
		// earlier question it was not yet told to drop.
		return ApprovalTimedOut, fmt.Sprintf("Nobody answered the approval question within %s (an earlier question of this session used the time); the refusal stands.", a.timeout)
	}
	res, err := ss.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: elicitSchema})
	if err != nil {
		if ctx.Err() != nil {
			return a.ended(ctx, "waiting for the answer")
		}
		return ApprovalFailed, "The approval question got no answer: " + cut(err.Error(), maxApprovalNoteBytes) + "."
	}
	return verdictOf(res)
}

// verdictOf reads the client's answer to an approval question.
func verdictOf(res *mcp.ElicitResult) (Approval, string) {
	switch res.Action {
	case "accept":
		return ApprovalGranted, ""
	case "decline":
		return ApprovalDeclined, "The user declined it when asked through the MCP client."
	case "cancel":
		return ApprovalCancelled, "The user dismissed the approval question without answering."
	}
	return ApprovalFailed, "The client answered the approval question with the unknown action " + strconv.Quote(cut(res.Action, maxApprovalNoteBytes)) + "; only accept grants."
}

// multiRoundTripVersion is the first MCP protocol version on which a
// server may not send a request to the client while serving a call
// (SEP-2322; the SDK refuses ServerSession.Elicit there): it asks by
// answering the call with an input-required result instead (roundTrip).
const multiRoundTripVersion = "2026-07-28"

// minApprovalWindow is the least time a question must have left to be
// asked (or half the approval timeout, when that is shorter): one that
// waited its turn past that is answered as timed out instead.
const minApprovalWindow = time.Second

// errApprovalTimeout is the cause of a question's context ending at the
// approval timeout, telling it from the call's own end.
var errApprovalTimeout = errors.New("the approval timeout passed")

// ended says how a question whose context ended came out: the timeout,
// or the call itself ending.
func (a *approver) ended(ctx context.Context, while string) (Approval, string) {
	if errors.Is(context.Cause(ctx), errApprovalTimeout) {
		return ApprovalTimedOut, fmt.Sprintf("Nobody answered the approval question within %s (%s); the refusal stands.", a.timeout, while)
	}
	return ApprovalFailed, "The call ended while " + while + "."
}

// question is the text of the approval question for r, raised by tool
// name called with args: exactly the grants wanted and what runs, as
// r.Describe renders them (every model-influenced value escaped, every
// text a quoted block, a long one cut with its size and digest). Only for
// a tool that names nothing it runs (r.Subject nil) does it fall back to
// quoting the arguments' command, program or program file, saying they
// are only what the call asked for. ok is false when the grants, or what
// runs, do not fit in maxApprovalMessageBytes.
func question(name string, args json.RawMessage, r tool.RaisedRefusal) (string, bool) {
	head := "The tool " + tool.Escape(name) + " asks for more access than this session's policy gives, for this one call only:\n"
	const tail = "Accept grants exactly these for this call; decline or cancel refuses them."
	room := maxApprovalMessageBytes - len(head) - len(tail)
	body, ok := r.Describe(room)
	if !ok {
		return "", false
	}
	if r.Subject == nil {
		body += fromArgs(args, room-len(body))
	}
	return head + body + tail, true
}

// fromArgs quotes, in at most room bytes, the command, program or
// program file a call's arguments name, for a tool that did not say what
// it runs; "" when they name none or it does not fit.
func fromArgs(args json.RawMessage, room int) string {
	var a struct {
		Command     *string `json:"command"`
		Program     *string `json:"program"`
		ProgramPath *string `json:"program_path"`
	}
	if json.Unmarshal(args, &a) != nil {
		return ""
	}
	var label, value string
	switch {
	case a.Command != nil:
		label, value = "The call's command argument (the tool did not say what it runs):\n", *a.Command
	case a.Program != nil:
		label, value = "The call's program argument (the tool did not say what it runs):\n", *a.Program
	case a.ProgramPath != nil:
		label, value = "The call names this program file; the tool did not say what it read from it, so what runs cannot be shown:\n", *a.ProgramPath
	default:
		return ""
	}
	q := tool.Quote(value, room-len(label))
	if q == "" {
		return ""
	}
	return label + q
}

// cut returns s, or its head of at most max bytes cut at a rune boundary
// with its length said.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	end := max
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + "… (" + strconv.Itoa(len(s)) + " bytes)"
}

// annotate adds to a call's result how its approval questions ended:
// _meta[MetaApprovalKey], and when the refusal stands, the sentence saying
// why after the tool's text.
func annotate(r *mcp.CallToolResult, k *asked) {
	verdict, note := k.result()
	if verdict == "" {
		return
	}
	if r.Meta == nil {
		r.Meta = mcp.Meta{}
	}
	r.Meta[MetaApprovalKey] = string(verdict)
	if note == "" || !r.IsError {
		return
	}
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			if tc.Text != "" {
				tc.Text += "\n"
			}
			tc.Text += note
			return
		}
	}
	r.Content = append([]mcp.Content{&mcp.TextContent{Text: note}}, r.Content...)
}
