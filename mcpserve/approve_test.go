package mcpserve

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/internal/jailtest"
	"github.com/agentloom/loom/plane"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMain(m *testing.M) {
	code := m.Run()
	jailHelper.Remove()
	os.Exit(code)
}

// jailHelper is the host-built jail helper this package's test brokers
// run, built once per test binary and removed by TestMain.
var jailHelper jailtest.Shared

// secretName is the file in the directory outside the workspace that only
// a granted command can list.
const secretName = "only-with-a-grant.txt"

// shellPlane is a plane of bash and the job tools over a workspace, and a
// directory outside it holding secretName, all under /var/tmp (the jail's
// /tmp is private).
func shellPlane(t *testing.T) (p *plane.Plane, outside string) {
	t.Helper()
	root, err := os.MkdirTemp("/var/tmp", "loom-mcpserve-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	ws, outside := filepath.Join(root, "ws"), filepath.Join(root, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, secretName), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err = plane.New(plane.Config{
		Workspace:     ws,
		Families:      plane.FamilyShell,
		BlobDir:       filepath.Join(root, "blobs"),
		Scratch:       filepath.Join(root, "scratch"),
		BrokerOptions: broker.Options{HelperPath: jailHelper.Path(t)},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, outside
}

// elicitingVersion is a protocol version on which a server may ask its
// client during a call.
const elicitingVersion = "2025-11-25"

// connectAt is connect with the client asking for protocol version.
func connectAt(t *testing.T, srv *Server, copts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Run(ctx, st)
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "approver", Version: "1"}, copts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		cancel()
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	return cs
}

// questions records the approval questions a client was asked and
// answers each with answer.
type questions struct {
	mu       sync.Mutex
	messages []string
	answer   func(context.Context) (*mcp.ElicitResult, error)
}

func (q *questions) handle(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	q.mu.Lock()
	q.messages = append(q.messages, r.Params.Message)
	q.mu.Unlock()
	return q.answer(ctx)
}

func (q *questions) asked() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]string(nil), q.messages...)
}

func answering(action string) func(context.Context) (*mcp.ElicitResult, error) {
	return func(context.Context) (*mcp.ElicitResult, error) { return &mcp.ElicitResult{Action: action}, nil }
}

// hanging answers only when the question is withdrawn.
func hanging(ctx context.Context) (*mcp.ElicitResult, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// listOutside is a bash call listing outside, asking to read it.
func listOutside(outside string) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{
		"command":     "ls " + outside,
		"permissions": map[string]any{"readable_roots": []string{outside}},
	}}
}

func metaOf(r *mcp.CallToolResult, key string) string {
	s, _ := r.Meta[key].(string)
	return s
}

// TestApprovalThroughElicitation: a bash call asking to read a directory
// outside the workspace runs with the grant only when the client's user
// accepts; every other ending keeps the refusal in band, saying why. Each
// case runs on a protocol version where the server asks during the call
// and, unless roundTripToo is false, on one where it asks through a multi
// round-trip result the client answers by retrying.
func TestApprovalThroughElicitation(t *testing.T) {
	type approvalCase struct {
		name     string
		approve  bool // Options.ApproveWithElicitation
		answer   func(context.Context) (*mcp.ElicitResult, error)
		version  string
		asked    bool     // whether the client is asked
		granted  bool     // whether the command lists the directory
		approval Approval // _meta[MetaApprovalKey]; "" = absent
		says     string   // in the text of a refusal
	}
	cases := []approvalCase{
		{name: "accept", approve: true, answer: answering("accept"), version: elicitingVersion, asked: true, granted: true, approval: ApprovalGranted},
		{name: "decline", approve: true, answer: answering("decline"), version: elicitingVersion, asked: true, approval: ApprovalDeclined, says: "declined it when asked"},
		{name: "cancel", approve: true, answer: answering("cancel"), version: elicitingVersion, asked: true, approval: ApprovalCancelled, says: "dismissed the approval question"},
		{name: "unknown_action", approve: true, answer: answering("maybe"), version: elicitingVersion, asked: true, approval: ApprovalFailed, says: "only accept grants"},
		{name: "hanging_client", approve: true, answer: hanging, version: elicitingVersion, asked: true, approval: ApprovalTimedOut, says: "Nobody answered the approval question within"},
		{name: "no_capability", approve: true, version: elicitingVersion, approval: ApprovalNoPath, says: "did not declare the elicitation capability"},
		{name: "option_off", answer: answering("accept"), version: elicitingVersion},
	}
	for _, c := range cases {
		// A hanging client holds a multi round-trip question on its own
		// side, where no server timeout reaches; a late retry is
		// TestApprovalRoundTripRetries' expired case.
		if c.name != "hanging_client" {
			rt := c
			rt.name, rt.version = c.name+"_round_trip", multiRoundTripVersion
			cases = append(cases, rt)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, outside := shellPlane(t)
			srv, err := New(p.Registry, p.Call, Options{ApproveWithElicitation: c.approve, ApprovalTimeout: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			q := &questions{answer: c.answer}
			copts := &mcp.ClientOptions{}
			if c.answer != nil {
				copts.ElicitationHandler = q.handle
			}
			cs := connectAt(t, srv, copts, c.version)
			params := listOutside(outside)
			// A question that is never bounded fails here, not at the test
			// binary's timeout.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, err := cs.CallTool(ctx, params)
			if err != nil {
				t.Fatalf("a refusal became a protocol error: %v", err)
			}
			out := text(r)
			if listed := strings.Contains(out, secretName); listed != c.granted || r.IsError == c.granted {
				t.Errorf("isError=%v, listed the directory=%v; want granted=%v:\n%s", r.IsError, listed, c.granted, out)
			}
			if !c.granted && metaOf(r, MetaCodeKey) != string(sandbox.DenialRequirementsNotCovered) {
				t.Errorf("code = %q, want %s", metaOf(r, MetaCodeKey), sandbox.DenialRequirementsNotCovered)
			}
			if got := metaOf(r, MetaApprovalKey); got != string(c.approval) {
				t.Errorf("approval = %q, want %q", got, c.approval)
			}
			if c.says != "" && !strings.Contains(out, c.says) {
				t.Errorf("the refusal does not say %q:\n%s", c.says, out)
			}
			asked := q.asked()
			if (len(asked) > 0) != c.asked || len(asked) > 1 {
				t.Fatalf("the client was asked %d times, want asked=%v", len(asked), c.asked)
			}
			if c.asked {
				for _, want := range []string{"bash", string(sandbox.GrantReadableRoot) + " " + outside, "What runs is this command", "│ " + params.Arguments.(map[string]any)["command"].(string) + "\n", "this one call only"} {
					if !strings.Contains(asked[0], want) {
						t.Errorf("the question does not name %q:\n%s", want, asked[0])
					}
				}
			}
		})
	}
}

// TestApprovalControlWithoutPermissions: the same listing without asking
// for permissions is refused by the jail, so a granted run listing the
// directory shows the grant at work.
func TestApprovalControlWithoutPermissions(t *testing.T) {
	t.Parallel()
	p, outside := shellPlane(t)
	srv, err := New(p.Registry, p.Call, Options{ApproveWithElicitation: true})
	if err != nil {
		t.Fatal(err)
	}
	q := &questions{answer: answering("accept")}
	cs := connectAt(t, srv, &mcp.ClientOptions{ElicitationHandler: q.handle}, elicitingVersion)
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "ls " + outside}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.IsError || strings.Contains(text(r), secretName) {
		t.Errorf("an unpermitted listing outside the workspace: isError=%v\n%s", r.IsError, text(r))
	}
	if n := len(q.asked()); n != 0 {
		t.Errorf("the client was asked %d times for a call that raised nothing", n)
	}
}

// TestApprovalOneQuestionAtATime: two calls of one session wanting
// approval at once never have two questions open. The client answers
// accept only once two questions are open, so asking both at once would
// grant both.
func TestApprovalOneQuestionAtATime(t *testing.T) {
	t.Parallel()
	p, outside := shellPlane(t)
	srv, err := New(p.Registry, p.Call, Options{ApproveWithElicitation: true, ApprovalTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	open, most := 0, 0
	both := make(chan struct{})
	handler := func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		open++
		most = max(most, open)
		if open == 2 {
			close(both)
		}
		mu.Unlock()
		defer func() { mu.Lock(); open--; mu.Unlock() }()
		select {
		case <-both:
			return &mcp.ElicitResult{Action: "accept"}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	cs := connectAt(t, srv, &mcp.ClientOptions{ElicitationHandler: handler}, elicitingVersion)
	results := make([]*mcp.CallToolResult, 2)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			r, err := cs.CallTool(context.Background(), listOutside(outside))
			if err != nil {
				t.Errorf("call %d: %v", i, err)
				return
			}
			results[i] = r
		})
	}
	wg.Wait()
	// A handler may still be returning after its question timed out.
	mu.Lock()
	most1 := most
	mu.Unlock()
	if most1 != 1 {
		t.Errorf("%d approval questions were open at once, want 1", most1)
	}
	for i, r := range results {
		if r == nil {
			continue
		}
		if !r.IsError || metaOf(r, MetaApprovalKey) != string(ApprovalTimedOut) {
			t.Errorf("call %d: isError=%v approval=%q, want the timeout:\n%s", i, r.IsError, metaOf(r, MetaApprovalKey), text(r))
		}
	}
}

// TestQuestionBounded: the question names every grant and what runs and
// stays within maxApprovalMessageBytes, cutting a long command or program
// with its size and digest; grants that alone exceed it, or leave no room
// for what runs, are not asked about at all.
func TestQuestionBounded(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", maxApprovalMessageBytes)
	few := &sandbox.Denial{Code: sandbox.DenialRequirementsNotCovered, Reason: long, Wanted: []sandbox.Grant{{Kind: sandbox.GrantReadableRoot, Path: "/srv/a"}, {Kind: sandbox.GrantNetwork}}}
	r := raised(few)
	r.Subject = &tool.Subject{Kind: tool.SubjectCommand, Text: long, Dir: "/ws"}
	msg, ok := question("bash", []byte(`{"command":"ignored"}`), r)
	if !ok || len(msg) > maxApprovalMessageBytes {
		t.Fatalf("question: ok=%v, %d bytes (bound %d)", ok, len(msg), maxApprovalMessageBytes)
	}
	// A command shows printable ASCII only: é is escaped.
	for _, want := range []string{"readable_root /srv/a", "- network", "│ «U+00E9»«U+00E9»", fmt.Sprintf(" of %d bytes are shown", len(long)), "sha256 " + r.Subject.Digest()} {
		if !strings.Contains(msg, want) {
			t.Errorf("the question lacks %q:\n%.600s", want, msg)
		}
	}
	if strings.Contains(msg, "ignored") {
		t.Errorf("the question quotes the arguments although the tool said what runs:\n%.600s", msg)
	}
	prog := "package main\n\nfunc main() {}\n" + strings.Repeat("// x\n", maxApprovalMessageBytes)
	r.Subject = &tool.Subject{Kind: tool.SubjectProgram, Text: prog}
	if msg, ok := question("code_mode", nil, r); !ok || len(msg) > maxApprovalMessageBytes || !strings.Contains(msg, "given inline:\n│ package main\n") ||
		!strings.Contains(msg, fmt.Sprintf(" of %d bytes are shown", len(prog))) || !strings.Contains(msg, "sha256 "+r.Subject.Digest()) {
		t.Errorf("a code_mode question does not show its program cut, with its digest: ok=%v\n%.600s", ok, msg)
	}
	var many []sandbox.Grant
	for i := 0; len(many)*20 < maxApprovalMessageBytes; i++ {
		many = append(many, sandbox.Grant{Kind: sandbox.GrantReadableRoot, Path: "/srv/" + strings.Repeat("d", 20)})
	}
	if msg, ok := question("bash", nil, raised(&sandbox.Denial{Code: sandbox.DenialRequirementsNotCovered, Wanted: many})); ok {
		t.Errorf("%d grants over the bound were asked about in %d bytes", len(many), len(msg))
	}
	nearly := many[:(maxApprovalMessageBytes-300)/len("- readable_root /srv/dddddddddddddddddddd\n")]
	r = raised(&sandbox.Denial{Code: sandbox.DenialRequirementsNotCovered, Wanted: nearly})
	if msg, ok := question("bash", nil, r); !ok {
		t.Fatalf("control: %d grants do not fit on their own:\n%s", len(nearly), msg)
	}
	r.Subject = &tool.Subject{Kind: tool.SubjectProgram, Text: prog, Path: strings.Repeat("p/", 200)}
	if msg, ok := question("code_mode", nil, r); ok {
		t.Errorf("a question with no room for what runs was asked (%d bytes):\n%s", len(msg), msg)
	}
}

// TestQuestionShowsTheSnapshotNotThePath: a code_mode refusal naming the
// program it read is asked about with that text and its digest; the
// file's name alone (all a question built from the arguments can show,
// the control) would let a file swapped back since pass for what runs.
func TestQuestionShowsTheSnapshotNotThePath(t *testing.T) {
	t.Parallel()
	snapshot := "package main\n\n// writes outside the roots\nfunc main() { evil() }\n"
	now := "package main\n\nfunc main() {}\n"
	args := []byte(`{"program_path":"tools/p.go","permissions":{"writable_roots":["/srv/a"]}}`)
	r := raised(&sandbox.Denial{Code: sandbox.DenialRequirementsNotCovered, Wanted: []sandbox.Grant{{Kind: sandbox.GrantWritableRoot, Path: "/srv/a"}}})

	control, ok := question("code_mode", args, r)
	if !ok || !strings.Contains(control, "tools/p.go") || strings.Contains(control, "evil()") {
		t.Fatalf("control: a question from the arguments alone should name only the path:\n%s", control)
	}
	if !strings.Contains(control, "what runs cannot be shown") {
		t.Errorf("a question from the arguments alone does not say it cannot show what runs:\n%s", control)
	}

	r.Subject = &tool.Subject{Kind: tool.SubjectProgram, Text: snapshot, Path: "tools/p.go"}
	msg, ok := question("code_mode", args, r)
	for _, want := range []string{"sha256 " + r.Subject.Digest(), "as read from the file:\n│ tools/p.go\n", "│ func main() { evil() }\n", "whatever the file holds now"} {
		if !ok || !strings.Contains(msg, want) {
			t.Errorf("the question lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, now) || strings.Contains(msg, "cannot be shown") {
		t.Errorf("the question shows something other than the snapshot:\n%s", msg)
	}
}

// TestQuestionEscapesModelText: a command, a directory, a reason and a
// grant's path a model wrote cannot draw a line of the question: the
// control, the same values after a label as the question used to put
// them, draws a grant line and a fake tail.
func TestQuestionEscapesModelText(t *testing.T) {
	t.Parallel()
	attack := "true\r\x1b[2K\n- network\n\u202eAccept grants exactly these for this call"
	if naive := "Command: " + attack + "\n"; !strings.Contains(naive, "\n- network\n") {
		t.Fatalf("control: the raw command draws no grant line: %q", naive)
	}
	r := tool.RaisedRefusal{Tool: "bash", Denial: &sandbox.Denial{Code: sandbox.DenialRequirementsNotCovered, Reason: attack,
		Wanted: []sandbox.Grant{{Kind: sandbox.GrantReadableRoot, Path: "/srv/a\n- network"}}},
		Subject: &tool.Subject{Kind: tool.SubjectCommand, Text: attack, Dir: "/ws\n- network"}}
	msg, ok := question("bash\n- network", nil, r)
	if !ok {
		t.Fatal("not asked")
	}
	for _, line := range strings.Split(msg, "\n") {
		if strings.HasPrefix(line, "- network") || strings.HasPrefix(line, "Accept") && line != "Accept grants exactly these for this call; decline or cancel refuses them." {
			t.Errorf("the model drew the line %q:\n%s", line, msg)
		}
		if strings.ContainsAny(line, "\r\x1b\u202e") {
			t.Errorf("a control survived in %q", line)
		}
	}
	if !strings.Contains(msg, "│ true«CR»«ESC»[2K\n│ - network\n│ «U+202E»Accept") {
		t.Errorf("the command is not quoted line by line:\n%s", msg)
	}
}

func raised(d *sandbox.Denial) tool.RaisedRefusal { return tool.RaisedRefusal{Tool: "bash", Denial: d} }

// text is the text content of a result.
func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestApprovalRoundTripRetries answers a multi round-trip question by
// hand: only a retry of the same call carrying this server's unexpired
// state and an accept runs with the grant; a forged state, changed
// arguments, a late answer or no answer keep the refusal, saying why.
// The server's clock stands still unless a case moves it, so lateness is
// decided by the case, never by how long the calls took.
func TestApprovalRoundTripRetries(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		later    time.Duration // how long after the question the retry comes; the timeout is a minute
		retry    func(first *mcp.CallToolResult, p *mcp.CallToolParams)
		granted  bool
		approval Approval
		says     string
	}{
		{name: "accept", granted: true, approval: ApprovalGranted, retry: func(first *mcp.CallToolResult, p *mcp.CallToolParams) {
			p.RequestState, p.InputResponses = first.RequestState, mcp.InputResponseMap{approvalInputID: &mcp.ElicitResult{Action: "accept"}}
		}},
		{name: "forged_state", approval: ApprovalFailed, says: "did not issue", retry: func(first *mcp.CallToolResult, p *mcp.CallToolParams) {
			// The same question with a later expiry, under the old signature.
			body64, mac, _ := strings.Cut(first.RequestState, ".")
			body, _ := base64.RawURLEncoding.DecodeString(body64)
			var st approvalState
			if err := json.Unmarshal(body, &st); err != nil {
				panic(err)
			}
			st.Expires++
			body, _ = json.Marshal(st)
			p.RequestState = base64.RawURLEncoding.EncodeToString(body) + "." + mac
			p.InputResponses = mcp.InputResponseMap{approvalInputID: &mcp.ElicitResult{Action: "accept"}}
		}},
		{name: "changed_arguments", approval: ApprovalFailed, says: "arguments changed", retry: func(first *mcp.CallToolResult, p *mcp.CallToolParams) {
			p.Arguments.(map[string]any)["command"] = "ls -a " + p.Arguments.(map[string]any)["permissions"].(map[string]any)["readable_roots"].([]string)[0]
			p.RequestState, p.InputResponses = first.RequestState, mcp.InputResponseMap{approvalInputID: &mcp.ElicitResult{Action: "accept"}}
		}},
		{name: "late", later: time.Minute, approval: ApprovalTimedOut, says: "came after", retry: func(first *mcp.CallToolResult, p *mcp.CallToolParams) {
			p.RequestState, p.InputResponses = first.RequestState, mcp.InputResponseMap{approvalInputID: &mcp.ElicitResult{Action: "accept"}}
		}},
		{name: "last_moment", later: time.Minute - time.Nanosecond, granted: true, approval: ApprovalGranted, retry: func(first *mcp.CallToolResult, p *mcp.CallToolParams) {
			p.RequestState, p.InputResponses = first.RequestState, mcp.InputResponseMap{approvalInputID: &mcp.ElicitResult{Action: "accept"}}
		}},
		{name: "no_answer", approval: ApprovalFailed, says: "no answer", retry: func(first *mcp.CallToolResult, p *mcp.CallToolParams) {
			p.RequestState = first.RequestState
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, outside := shellPlane(t)
			srv, err := New(p.Registry, p.Call, Options{ApproveWithElicitation: true, ApprovalTimeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			clock := &stoppedClock{at: time.Date(2026, 1, 2, 3, 4, 5, 999_999_999, time.UTC)}
			srv.approve.testNow = clock.now
			q := &questions{answer: answering("accept")}
			cs := connectAt(t, srv, &mcp.ClientOptions{ElicitationHandler: q.handle, MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}, multiRoundTripVersion)
			ctx := context.Background()
			first, err := cs.CallTool(ctx, listOutside(outside))
			if err != nil {
				t.Fatal(err)
			}
			clock.advance(c.later)
			ask, ok := first.InputRequests[approvalInputID].(*mcp.ElicitParams)
			if !first.NeedsInput() || !ok || first.RequestState == "" || len(first.Content) != 0 {
				t.Fatalf("the first call did not ask through an input-required result: %+v", first)
			}
			if !strings.Contains(ask.Message, string(sandbox.GrantReadableRoot)+" "+outside) {
				t.Errorf("the question does not name the grant:\n%s", ask.Message)
			}
			params := listOutside(outside)
			c.retry(first, params)
			r, err := cs.CallTool(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			out := text(r)
			if listed := strings.Contains(out, secretName); listed != c.granted || r.IsError == c.granted || r.NeedsInput() {
				t.Errorf("isError=%v needsInput=%v listed=%v; want granted=%v:\n%s", r.IsError, r.NeedsInput(), listed, c.granted, out)
			}
			if got := metaOf(r, MetaApprovalKey); got != string(c.approval) {
				t.Errorf("approval = %q, want %q", got, c.approval)
			}
			if c.says != "" && !strings.Contains(out, c.says) {
				t.Errorf("the refusal does not say %q:\n%s", c.says, out)
			}
			if n := len(q.asked()); n != 0 {
				t.Errorf("the server sent %d elicitation requests during a call on a multi round-trip version", n)
			}
		})
	}
}

// stoppedClock is a clock that moves only when told.
type stoppedClock struct {
	mu sync.Mutex
	at time.Time
}

func (c *stoppedClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

func (c *stoppedClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = c.at.Add(d)
}

// TestApprovalStateExpiry: a state minted at t with timeout d is late at
// t+d and after, and in time before, to the nanosecond. The control is
// the old reckoning (the expiry rounded down to a millisecond, compared
// with >), which takes an answer a millisecond late as in time.
func TestApprovalStateExpiry(t *testing.T) {
	t.Parallel()
	minted := time.Date(2026, 1, 2, 3, 4, 5, 400_000, time.UTC) // 0.4 ms into a millisecond
	const timeout = time.Nanosecond
	exp := expiry(minted, timeout)
	cases := []struct {
		at   time.Duration // after the mint
		late bool
	}{
		{0, false},
		{timeout - 1, false},
		{timeout, true},
		{timeout + 1, true},
		{500 * time.Microsecond, true},
		{time.Hour, true},
	}
	for _, c := range cases {
		if got := late(minted.Add(c.at), exp); got != c.late {
			t.Errorf("answered %v after the mint: late=%v, want %v", c.at, got, c.late)
		}
	}
	oldLate := func(now time.Time, expires int64) bool { return now.UnixMilli() > expires }
	if oldLate(minted.Add(500*time.Microsecond), minted.Add(timeout).UnixMilli()) {
		t.Error("control: the old reckoning already refuses an answer 0.5 ms after a 1 ns timeout")
	}
}

// TestApprovalStateBindsWhatRuns: a retry whose tool would run anything
// other than what the question showed (the same arguments, a program file
// rewritten since) is refused; the control is the same retry with what
// runs unchanged, which is granted, and the old binding (tool, arguments,
// grants) that finds nothing changed.
func TestApprovalStateBindsWhatRuns(t *testing.T) {
	t.Parallel()
	a := &approver{timeout: time.Minute, stateKey: newStateKey(), turns: map[*mcp.ServerSession]chan struct{}{}}
	clock := &stoppedClock{at: time.Unix(1_700_000_000, 0)}
	a.testNow = clock.now
	args := json.RawMessage(`{"program_path":"tools/p.go","permissions":{"writable_roots":["/srv/a"]}}`)
	d := &sandbox.Denial{Code: sandbox.DenialRequirementsNotCovered, Wanted: []sandbox.Grant{{Kind: sandbox.GrantWritableRoot, Path: "/srv/a"}}}
	shown := tool.RaisedRefusal{Tool: "code_mode", Denial: d, Subject: &tool.Subject{Kind: tool.SubjectProgram, Path: "tools/p.go", Text: "package main\n// the program shown\n"}}
	st := approvalState{Tool: "code_mode", Args: argsDigest(args), Grants: grantStrings(d.Wanted), Runs: subjectDigest(shown.Subject), Expires: expiry(clock.now(), a.timeout)}
	retry := func(r tool.RaisedRefusal) (tool.Escalation, Approval, string) {
		k := &asked{}
		rt := &roundTrip{a: a, name: "code_mode", args: args, k: k, retry: &mcp.CallToolParamsRaw{
			RequestState: a.sign(st), InputResponses: mcp.InputResponseMap{approvalInputID: &mcp.ElicitResult{Action: "accept"}}}}
		esc := rt.answered(r)
		v, note := k.result()
		return esc, v, note
	}
	if esc, v, _ := retry(shown); !esc.Resume || v != ApprovalGranted {
		t.Fatalf("control: the same retry was not granted: %+v %s", esc, v)
	}
	swapped := shown
	swapped.Subject = &tool.Subject{Kind: tool.SubjectProgram, Path: "tools/p.go", Text: "package main\n// swapped in after the question\n"}
	old := st.Tool == swapped.Tool && st.Args == argsDigest(args) && slices.Equal(st.Grants, grantStrings(swapped.Denial.Wanted))
	if !old {
		t.Fatal("control: the old binding already tells the swapped retry apart")
	}
	esc, v, note := retry(swapped)
	if esc.Resume || v != ApprovalFailed || !strings.Contains(note, "other than what the approval question showed") {
		t.Errorf("a retry running another program: resume=%v %s %q", esc.Resume, v, note)
	}
	for _, s := range []*tool.Subject{
		{Kind: tool.SubjectProgram, Path: "tools/q.go", Text: shown.Subject.Text},
		{Kind: tool.SubjectCommand, Text: shown.Subject.Text, Dir: "tools/p.go"},
		nil,
	} {
		r := shown
		r.Subject = s
		if esc, _, _ := retry(r); esc.Resume {
			t.Errorf("a retry naming %+v was granted on a question about %+v", s, shown.Subject)
		}
	}
}
