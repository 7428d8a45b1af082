package mcpserve

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// approvalInputID is the key of the approval question in an
// input-required result's inputRequests, and of its answer in the
// retried call's inputResponses.
const approvalInputID = "agentloom_approval"

// maxApprovalStateBytes bounds the requestState a retried call may carry;
// a longer one is not this server's and is not decoded.
const maxApprovalStateBytes = 4 << 10

// approvalState is what an input-required result asks the client to echo
// back: the question the user answers, bound to the call it was asked
// for. The server signs it, so a retry can carry only a question this
// server asked, for the same tool and arguments and the same work to run,
// before it expired.
type approvalState struct {
	Tool   string   `json:"tool"`
	Args   string   `json:"args"`   // hex SHA-256 of the call's arguments
	Grants []string `json:"grants"` // the grants the question named, in order
	// Runs is subjectDigest of what the question showed would run: a
	// retry that would run anything else (a program file rewritten since)
	// is not the call the user answered.
	Runs string `json:"runs"`
	// Expires is when the question lapses, in Unix nanoseconds: an answer
	// at or after it is late. Nanoseconds, so no rounding moves it.
	Expires int64 `json:"expires_ns"`
}

// subjectDigest is the hex SHA-256 of everything s shows (its kind, text,
// file and directory, each length-prefixed); "" for nil.
func subjectDigest(s *tool.Subject) string {
	if s == nil {
		return ""
	}
	h := sha256.New()
	for _, f := range []string{string(s.Kind), s.Text, s.Path, s.Dir} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// expiry is when a question asked at now with timeout lapses.
func expiry(now time.Time, timeout time.Duration) int64 { return now.Add(timeout).UnixNano() }

// late says an answer at now comes at or after expires.
func late(now time.Time, expires int64) bool { return now.UnixNano() >= expires }

// newStateKey returns the key a Server signs its approval states with,
// fresh per Server: a state outlives neither the server nor its process.
func newStateKey() []byte {
	k := make([]byte, sha256.Size)
	_, _ = rand.Read(k) // crypto/rand.Read never fails on Linux ≥ 3.17 and panics rather than return short
	return k
}

func argsDigest(args json.RawMessage) string {
	sum := sha256.Sum256(args)
	return hex.EncodeToString(sum[:])
}

func grantStrings(gs []sandbox.Grant) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.String()
	}
	return out
}

func (a *approver) sign(st approvalState) string {
	body, _ := json.Marshal(st) // plain strings and ints: never fails
	mac := hmac.New(sha256.New, a.stateKey)
	mac.Write(body)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(body) + "." + enc.EncodeToString(mac.Sum(nil))
}

// verify decodes a state this server signed, or says it is not one.
func (a *approver) verify(s string) (approvalState, bool) {
	if len(s) > maxApprovalStateBytes {
		return approvalState{}, false
	}
	body64, mac64, ok := strings.Cut(s, ".")
	enc := base64.RawURLEncoding
	body, err1 := enc.DecodeString(body64)
	got, err2 := enc.DecodeString(mac64)
	if !ok || err1 != nil || err2 != nil {
		return approvalState{}, false
	}
	mac := hmac.New(sha256.New, a.stateKey)
	mac.Write(body)
	var st approvalState
	if !hmac.Equal(got, mac.Sum(nil)) || json.Unmarshal(body, &st) != nil {
		return approvalState{}, false
	}
	return st, true
}

// roundTrips reports whether ss's client is asked through multi
// round-trip results rather than a request sent while the call runs.
func roundTrips(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion >= multiRoundTripVersion
}

// roundTrip is the approval path of one call from a client on a multi
// round-trip protocol version. The first call asks by ending with an
// input-required result; the client's retry carries the answer, and the
// call is dispatched again, resuming with the grants only when the answer
// is accept, the state is this server's for the same tool and arguments,
// it has not expired, and the refusal asks for exactly the grants the
// question named. Nothing ran before the first refusal, so the retry
// replays nothing.
type roundTrip struct {
	a     *approver
	ss    *mcp.ServerSession
	name  string
	args  json.RawMessage
	k     *asked
	retry *mcp.CallToolParamsRaw // nil on a first call

	ask *mcp.CallToolResult // the input-required result to answer, once raised
}

func (a *approver) roundTrip(ss *mcp.ServerSession, p *mcp.CallToolParamsRaw, k *asked) *roundTrip {
	rt := &roundTrip{a: a, ss: ss, name: p.Name, args: p.Arguments, k: k}
	if p.RequestState != "" || len(p.InputResponses) > 0 {
		rt.retry = p
	}
	return rt
}

// raise is the call's RaiseRefusal.
func (rt *roundTrip) raise(_ context.Context, r tool.RaisedRefusal) tool.Escalation {
	if r.Denial == nil || len(r.Denial.Wanted) == 0 {
		return tool.Escalation{}
	}
	if v, note, ok := rt.a.noPath(rt.ss); !ok {
		rt.k.record(v, note)
		return tool.Escalation{}
	}
	if rt.retry != nil {
		return rt.answered(r)
	}
	if rt.ask != nil {
		return tool.Escalation{} // one question per call
	}
	msg, ok := question(rt.name, rt.args, r)
	if !ok {
		rt.k.record(ApprovalTooLarge, tooLargeNote)
		return tool.Escalation{}
	}
	st := approvalState{Tool: rt.name, Args: argsDigest(rt.args), Grants: grantStrings(r.Denial.Wanted),
		Runs: subjectDigest(r.Subject), Expires: expiry(rt.a.now(), rt.a.timeout)}
	rt.ask = &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{approvalInputID: &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: elicitSchema}},
		RequestState:  rt.a.sign(st),
	}
	return tool.Escalation{}
}

// answered settles the refusal of a retried call from the answer it
// carries.
func (rt *roundTrip) answered(r tool.RaisedRefusal) tool.Escalation {
	st, ok := rt.a.verify(rt.retry.RequestState)
	switch {
	case !ok:
		rt.k.record(ApprovalFailed, "The retried call carried an approval state this server did not issue; nobody's answer applies, and the refusal stands.")
		return tool.Escalation{}
	case st.Tool != rt.name || st.Args != argsDigest(rt.args):
		rt.k.record(ApprovalFailed, "The retried call is not the call the approval question was asked for (its tool or arguments changed); the refusal stands.")
		return tool.Escalation{}
	case late(rt.a.now(), st.Expires):
		rt.k.record(ApprovalTimedOut, "The answer to the approval question came after "+rt.a.timeout.String()+"; the refusal stands.")
		return tool.Escalation{}
	case !slices.Equal(st.Grants, grantStrings(r.Denial.Wanted)):
		rt.k.record(ApprovalFailed, "The retried call asks for other grants than the question the user answered; the refusal stands.")
		return tool.Escalation{}
	case st.Runs != subjectDigest(r.Subject):
		rt.k.record(ApprovalFailed, "The retried call would run something other than what the approval question showed (its program file changed since, say); the refusal stands. Call again to be asked about what it runs now.")
		return tool.Escalation{}
	}
	res, ok := rt.retry.InputResponses[approvalInputID].(*mcp.ElicitResult)
	if !ok {
		rt.k.record(ApprovalFailed, "The retried call carried no answer to the approval question; the refusal stands.")
		return tool.Escalation{}
	}
	verdict, note := verdictOf(res)
	rt.k.record(verdict, note)
	if verdict != ApprovalGranted {
		return tool.Escalation{}
	}
	return tool.Escalation{Resume: true, Grants: append([]sandbox.Grant(nil), r.Denial.Wanted...)}
}
