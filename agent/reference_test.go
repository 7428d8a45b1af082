package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloom/loom/todo"
	"github.com/agentloom/loom/tool"
)

// gate is a Runner whose runs finish only when the test releases them.
type gate struct {
	mu    sync.Mutex
	chans map[string]chan string
	turns atomic.Int64
}

func newGate() *gate { return &gate{chans: map[string]chan string{}} }

func (g *gate) ch(h string) chan string {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.chans[h]
	if !ok {
		c = make(chan string, 1)
		g.chans[h] = c
	}
	return c
}

func (g *gate) release(h Handle, text string) { g.ch(h.String()) <- text }

func (g *gate) Run(ctx context.Context, t Turn) (string, error) {
	g.turns.Add(1)
	select {
	case s := <-g.ch(Handle{t.Strand, t.Operation}.String()):
		return s, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// echo answers at once with the prompt.
var echo = RunnerFunc(func(ctx context.Context, t Turn) (string, error) { return "done: " + t.Prompt, nil })

var bg = context.Background()

func root(name string, step int) Caller {
	return Caller{Strand: name, OpID: "op", StepID: fmt.Sprint("s", step)}
}

func as(strand string, step int) Caller {
	return Caller{Strand: strand, OpID: "run-1", StepID: fmt.Sprint("s", step)}
}

func spawnReq(purpose string) SpawnRequest {
	return SpawnRequest{Purpose: purpose, Prompt: "work on " + purpose}
}

func mustSpawn(t *testing.T, a *Reference, c Caller, purpose string) Spawned {
	t.Helper()
	sp, err := a.Spawn(bg, c, spawnReq(purpose))
	if err != nil {
		t.Fatalf("spawn %s: %v", purpose, err)
	}
	return sp
}

func waitOne(t *testing.T, a *Reference, c Caller, h Handle) Waited {
	t.Helper()
	ws, err := a.Wait(bg, c, []Handle{h}, a.opts.MaxWait)
	if err != nil {
		t.Fatalf("wait %s: %v", h, err)
	}
	return ws[0]
}

func TestSpawnWaitCompletes(t *testing.T) {
	a := NewAgency(echo, Options{})
	defer a.Close()
	c := root("main", 1)
	sp := mustSpawn(t, a, c, "Scan auth")
	if sp.Handle.Strand != MintName(c, "Scan auth") || sp.Handle.Operation != "run-1" {
		t.Fatalf("handle %s", sp.Handle)
	}
	w := waitOne(t, a, c, sp.Handle)
	want := Waited{Handle: sp.Handle, Ready: true, State: Completed, Report: "done: work on Scan auth",
		Result: TerminalResult{Kind: NoResultAsked}, Deadline: sp.Deadline}
	if diff := cmp.Diff(want, w); diff != "" {
		t.Fatalf("(-want +got)\n%s", diff)
	}
}

func TestSpawnReplayReconciles(t *testing.T) {
	g := newGate()
	a := NewAgency(g, Options{})
	defer a.Close()
	c := root("main", 1)
	first := mustSpawn(t, a, c, "x")
	again := mustSpawn(t, a, c, "x")
	if !again.Reconciled || again.Handle != first.Handle {
		t.Fatalf("replay: %+v vs %+v", again, first)
	}
	other := c
	other.SourceIndex = 1
	second := mustSpawn(t, a, other, "x")
	if second.Reconciled || second.Handle == first.Handle {
		t.Fatalf("another call site reconciled: %+v", second)
	}
	g.release(first.Handle, "ok")
	g.release(second.Handle, "ok")
	waitOne(t, a, c, first.Handle)
	waitOne(t, a, c, second.Handle)
	if n := g.turns.Load(); n != 2 {
		t.Fatalf("%d runs started, want 2", n)
	}
}

func TestDepthCap(t *testing.T) {
	g := newGate()
	a := NewAgency(g, Options{DepthCap: 2})
	defer a.Close()
	c1 := mustSpawn(t, a, root("main", 1), "one")
	c2 := mustSpawn(t, a, as(c1.Handle.Strand, 1), "two") // depth 2: at the cap
	_, err := a.Spawn(bg, as(c2.Handle.Strand, 1), spawnReq("three"))
	if codeOf(err) != CodeDepthCap {
		t.Fatalf("depth 3: %v", err)
	}
}

func TestFanOutCap(t *testing.T) {
	g := newGate()
	a := NewAgency(g, Options{FanOut: 2})
	defer a.Close()
	c := root("main", 0)
	var hs []Handle
	for i := range 2 {
		hs = append(hs, mustSpawn(t, a, root("main", i), "c").Handle)
	}
	if _, err := a.Spawn(bg, root("main", 2), spawnReq("c")); codeOf(err) != CodeFanOut {
		t.Fatalf("third child: %v", err)
	}
	// Another parent is not limited by main's fan-out.
	mustSpawn(t, a, root("other", 0), "c")
	g.release(hs[0], "ok")
	waitOne(t, a, c, hs[0])
	mustSpawn(t, a, root("main", 2), "c")
}

func TestSessionStrandsCap(t *testing.T) {
	g := newGate()
	a := NewAgency(g, Options{SessionStrands: 3})
	defer a.Close()
	var hs []Handle
	for i := range 3 {
		hs = append(hs, mustSpawn(t, a, root(fmt.Sprint("r", i), 0), "c").Handle)
	}
	if _, err := a.Spawn(bg, root("r9", 0), spawnReq("c")); codeOf(err) != CodeSessionStrands {
		t.Fatalf("fourth strand: %v", err)
	}
	// A continuation counts too.
	g.release(hs[0], "ok")
	waitOne(t, a, root("r0", 0), hs[0])
	mustSpawn(t, a, root("r9", 0), "c")
	if _, err := a.Send(bg, root("r0", 1), SendRequest{To: hs[0].Strand, Message: "more"}); codeOf(err) != CodeSessionStrands {
		t.Fatalf("continuation past the cap: %v", err)
	}
}

func TestAddressingIsDescendantsOnly(t *testing.T) {
	g := newGate()
	a := NewAgency(g, Options{})
	defer a.Close()
	main, other := root("main", 1), root("other", 1)
	child := mustSpawn(t, a, main, "child")
	grand := mustSpawn(t, a, as(child.Handle.Strand, 1), "grand")
	// A sibling comes from a call site of its own: one call site mints
	// one child, whatever the purpose.
	sibling := mustSpawn(t, a, root("main", 2), "sibling")
	_ = sibling

	cases := []struct {
		name   string
		caller Caller
		h      Handle
		code   tool.Code
	}{
		{"parent reaches child", main, child.Handle, ""},
		{"root reaches grandchild", main, grand.Handle, ""},
		{"another root", other, child.Handle, CodeNotDescendant},
		{"child reaches its parent's sibling", as(child.Handle.Strand, 2), sibling.Handle, CodeNotDescendant},
		{"grandchild reaches its parent", as(grand.Handle.Strand, 2), child.Handle, CodeNotDescendant},
		{"strand reaches itself", as(child.Handle.Strand, 2), child.Handle, CodeNotDescendant},
		{"forged strand", main, Handle{Strand: "sub:main/child-0000000000000000", Operation: "run-1"}, CodeUnknownHandle},
		{"forged operation", main, Handle{Strand: child.Handle.Strand, Operation: "run-9"}, CodeUnknownHandle},
		{"forged caller", Caller{Strand: "sub:main/me-0000000000000000"}, child.Handle, CodeUnknownHandle},
		{"root name with a slash", Caller{Strand: "main/x"}, child.Handle, CodeInvalidRequest},
	}
	for _, tt := range cases {
		_, err := a.Wait(bg, tt.caller, []Handle{tt.h}, 0)
		if codeOf(err) != tt.code {
			t.Errorf("wait: %s: %v, want %q", tt.name, err, tt.code)
		}
		_, err = a.Send(bg, tt.caller, SendRequest{To: tt.h.Strand, Message: "hi"})
		if tt.name == "forged operation" {
			continue // a send names a strand, not an operation
		}
		if codeOf(err) != tt.code {
			t.Errorf("send: %s: %v, want %q", tt.name, err, tt.code)
		}
	}
	peers, err := a.Roster(bg, as(child.Handle.Strand, 3))
	if err != nil || len(peers) != 1 || peers[0].Strand != grand.Handle.Strand || peers[0].Relation != Child {
		t.Fatalf("child's roster: %+v, %v", peers, err)
	}
	peers, _ = a.Roster(bg, main)
	if len(peers) != 3 || peers[1].Relation != Descendant || peers[1].Depth != 2 {
		t.Fatalf("main's roster: %+v", peers)
	}
	if peers, _ := a.Roster(bg, other); len(peers) != 0 {
		t.Fatalf("another root sees %+v", peers)
	}
}

func TestWaitBounds(t *testing.T) {
	g := newGate()
	a := NewAgency(g, Options{MaxWait: 50 * time.Millisecond})
	defer a.Close()
	c := root("main", 1)
	sp := mustSpawn(t, a, c, "x")
	if a.MaxWaitMs() != 50 {
		t.Fatalf("MaxWaitMs = %d", a.MaxWaitMs())
	}
	ws, err := a.Wait(bg, c, []Handle{sp.Handle}, 50*time.Millisecond) // at the bound
	if err != nil || ws[0].Ready || ws[0].State != Running {
		t.Fatalf("pending wait: %+v, %v", ws, err)
	}
	for _, d := range []time.Duration{51 * time.Millisecond, -time.Millisecond} {
		if _, err := a.Wait(bg, c, []Handle{sp.Handle}, d); codeOf(err) != CodeWaitTooLong {
			t.Errorf("wait %v: %v", d, err)
		}
	}
	many := slices.Repeat([]Handle{sp.Handle}, MaxWaitHandles)
	if _, err := a.Wait(bg, c, many, 0); err != nil {
		t.Errorf("%d handles: %v", MaxWaitHandles, err)
	}
	if _, err := a.Wait(bg, c, append(many, sp.Handle), 0); codeOf(err) != CodeInvalidRequest {
		t.Errorf("%d handles: %v", MaxWaitHandles+1, err)
	}
	if _, err := a.Wait(bg, c, nil, 0); codeOf(err) != CodeInvalidRequest {
		t.Errorf("no handles: %v", err)
	}
}

func TestSendDeliversOrContinues(t *testing.T) {
	inbox := make(chan []string, 1)
	release := make(chan struct{})
	runner := RunnerFunc(func(ctx context.Context, t Turn) (string, error) {
		if t.Operation == "run-1" {
			<-release
			inbox <- t.Inbox()
			return "first", nil
		}
		return "continued: " + t.Prompt, nil
	})
	a := NewAgency(runner, Options{})
	defer a.Close()
	c := root("main", 1)
	sp := mustSpawn(t, a, c, "x")
	d, err := a.Send(bg, c, SendRequest{To: sp.Handle.Strand, Message: "also this"})
	if err != nil || d.Kind != Delivered || d.Handle != sp.Handle {
		t.Fatalf("send to running: %+v, %v", d, err)
	}
	close(release)
	if got := <-inbox; !cmp.Equal(got, []string{"also this"}) {
		t.Fatalf("inbox %q", got)
	}
	waitOne(t, a, c, sp.Handle)
	d, err = a.Send(bg, c, SendRequest{To: sp.Handle.Strand, Message: "next"})
	if err != nil || d.Kind != Started || d.Handle.Operation != "run-2" {
		t.Fatalf("send to idle: %+v, %v", d, err)
	}
	if w := waitOne(t, a, c, d.Handle); w.Report != "continued: next" {
		t.Fatalf("continuation: %+v", w)
	}
	if w := waitOne(t, a, c, sp.Handle); w.Report != "first" {
		t.Fatalf("the old handle no longer reports its run: %+v", w)
	}
	if _, err := a.Send(bg, c, SendRequest{To: sp.Handle.Strand, Message: " "}); codeOf(err) != CodeInvalidRequest {
		t.Fatalf("empty message: %v", err)
	}
}

func TestAbortReasons(t *testing.T) {
	g := newGate()
	a := NewAgency(g, Options{})
	c := root("main", 1)

	sp, err := a.Spawn(bg, c, SpawnRequest{Purpose: "slow", Prompt: "p", Deadline: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if w := waitOne(t, a, c, sp.Handle); w.State != Aborted || w.AbortReason != AbortBudgetExpired {
		t.Fatalf("deadline: %+v", w)
	}

	child := mustSpawn(t, a, root("main", 2), "child")
	grand := mustSpawn(t, a, as(child.Handle.Strand, 1), "grand")
	detached, err := a.Spawn(bg, as(child.Handle.Strand, 2), SpawnRequest{Purpose: "free", Prompt: "p", Detach: true})
	if err != nil {
		t.Fatal(err)
	}
	g.release(child.Handle, "child done")
	if w := waitOne(t, a, c, grand.Handle); w.State != Aborted || w.AbortReason != AbortParentFinished {
		t.Fatalf("grandchild after its parent finished: %+v", w)
	}
	if ws, _ := a.Wait(bg, c, []Handle{detached.Handle}, 0); ws[0].State != Running {
		t.Fatalf("detached child: %+v", ws[0])
	}

	other := mustSpawn(t, a, root("main", 3), "other")
	a.RunEnded("main")
	if w := waitOne(t, a, c, other.Handle); w.AbortReason != AbortParentFinished {
		t.Fatalf("after RunEnded: %+v", w)
	}

	last := mustSpawn(t, a, root("main", 4), "last")
	a.Close()
	if w := waitOne(t, a, c, last.Handle); w.AbortReason != AbortClosed {
		t.Fatalf("after Close: %+v", w)
	}
	if w := waitOne(t, a, c, detached.Handle); w.AbortReason != AbortClosed {
		t.Fatalf("detached after Close: %+v", w)
	}
	if _, err := a.Spawn(bg, root("main", 5), spawnReq("late")); codeOf(err) != CodeAgencyClosed {
		t.Fatalf("spawn after Close: %v", err)
	}
}

func TestRunnerFailureAndPanic(t *testing.T) {
	a := NewAgency(RunnerFunc(func(ctx context.Context, t Turn) (string, error) {
		if t.Purpose == "panic" {
			panic("boom")
		}
		return "", errors.New("model unreachable")
	}), Options{})
	defer a.Close()
	c := root("main", 1)
	if w := waitOne(t, a, c, mustSpawn(t, a, c, "fail").Handle); w.State != Failed || w.Report != "model unreachable" {
		t.Fatalf("failure: %+v", w)
	}
	c2 := root("main", 2)
	if w := waitOne(t, a, c2, mustSpawn(t, a, c2, "panic").Handle); w.State != Failed || !strings.Contains(w.Report, "boom") {
		t.Fatalf("panic: %+v", w)
	}
}

func TestResultContract(t *testing.T) {
	schema, err := ParseResultSchema(json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var a *Reference
	a = NewAgency(RunnerFunc(func(ctx context.Context, t Turn) (string, error) {
		if t.Prompt != "none" {
			if _, err := a.Note(ctx, Caller{Strand: t.Strand, OpID: t.Operation}, ResultNoteKey, json.RawMessage(t.Prompt)); err != nil {
				return "", err
			}
		}
		if !strings.Contains(t.Notice, schema.String()) {
			return "", errors.New("the notice does not state the contract")
		}
		return "report", nil
	}), Options{})
	defer a.Close()
	for i, tc := range []struct {
		prompt string
		want   ResultKind
	}{{`{"count":3}`, ResultValid}, {`{"count":"3"}`, ResultMismatched}, {"none", ResultMissing}} {
		c := root("main", i)
		sp, err := a.Spawn(bg, c, SpawnRequest{Purpose: "count", Prompt: tc.prompt, Result: schema})
		if err != nil {
			t.Fatal(err)
		}
		w := waitOne(t, a, c, sp.Handle)
		if w.Report != "report" || w.Result.Kind != tc.want {
			t.Errorf("%s: %+v", tc.prompt, w)
		}
	}
}

func TestChildTools(t *testing.T) {
	g := newGate()
	held := []string{SpawnToolName, NoteToolName, SendToolName, "fs_read", "bash"}
	a := NewAgency(g, Options{RootTools: held, Models: []string{"small"}})
	defer a.Close()
	c := root("main", 1)
	cases := []struct {
		name  string
		tools []string
		want  []string
		code  tool.Code
	}{
		{"default drops agent_spawn", nil, []string{NoteToolName, SendToolName, "fs_read", "bash"}, ""},
		{"explicit list gets the floor", []string{"fs_read"}, []string{"fs_read", NoteToolName, SendToolName}, ""},
		{"empty list gets the floor", []string{}, []string{NoteToolName, SendToolName}, ""},
		{"explicit agent_spawn is kept", []string{SpawnToolName}, []string{SpawnToolName, NoteToolName, SendToolName}, ""},
		{"a tool the parent lacks", []string{"grep"}, nil, tool.CodeToolNotHeld},
	}
	for i, tt := range cases {
		c.SourceIndex = i
		sp, err := a.Spawn(bg, c, SpawnRequest{Purpose: "t", Prompt: "p", Tools: tt.tools})
		if codeOf(err) != tt.code || !cmp.Equal(sp.Tools, tt.want) {
			t.Errorf("%s: %v, %v; want %v, %q", tt.name, sp.Tools, err, tt.want, tt.code)
		}
	}
	// The floor is limited by what the parent holds.
	lean := NewAgency(g, Options{RootTools: []string{"fs_read", NoteToolName}})
	defer lean.Close()
	if sp, err := lean.Spawn(bg, c, SpawnRequest{Purpose: "t", Prompt: "p", Tools: []string{"fs_read"}}); err != nil ||
		!cmp.Equal(sp.Tools, []string{"fs_read", NoteToolName}) {
		t.Errorf("floor under a parent without agent_send: %v, %v", sp.Tools, err)
	}
	c.SourceIndex = 10
	narrow, err := a.Spawn(bg, c, SpawnRequest{Purpose: "narrow", Prompt: "p", Tools: []string{"fs_read"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Holds(bg, as(narrow.Handle.Strand, 1), "fs_read"); err != nil {
		t.Errorf("holds fs_read: %v", err)
	}
	if err := a.Holds(bg, as(narrow.Handle.Strand, 1), SpawnToolName); codeOf(err) != tool.CodeToolNotHeld {
		t.Errorf("holds agent_spawn: %v", err)
	}
	if err := a.Holds(bg, c, "grep"); codeOf(err) != tool.CodeToolNotHeld {
		t.Errorf("root holds grep: %v", err)
	}
	if _, err := a.Spawn(bg, root("main", 99), SpawnRequest{Purpose: "m", Prompt: "p", Model: "huge"}); codeOf(err) != CodeUnknownModel {
		t.Errorf("unknown model: %v", err)
	}
	if sp, err := a.Spawn(bg, root("main", 98), SpawnRequest{Purpose: "m", Prompt: "p", Model: "small"}); err != nil || sp.Model != "small" {
		t.Errorf("offered model: %+v, %v", sp, err)
	}
}

func TestSpawnRequestBounds(t *testing.T) {
	a := NewAgency(echo, Options{})
	defer a.Close()
	c := root("main", 1)
	cases := []struct {
		name string
		req  SpawnRequest
		code tool.Code
	}{
		{"purpose at the bound", SpawnRequest{Purpose: strings.Repeat("p", maxPurposeBytes), Prompt: "x"}, ""},
		{"purpose past the bound", SpawnRequest{Purpose: strings.Repeat("p", maxPurposeBytes+1), Prompt: "x"}, CodeInvalidRequest},
		{"prompt past the bound", SpawnRequest{Purpose: "p", Prompt: strings.Repeat("x", maxPromptBytes+1)}, CodeInvalidRequest},
		{"empty purpose", SpawnRequest{Prompt: "x"}, CodeInvalidRequest},
		{"empty prompt", SpawnRequest{Purpose: "p"}, CodeInvalidRequest},
		{"negative deadline", SpawnRequest{Purpose: "p", Prompt: "x", Deadline: -1}, CodeInvalidRequest},
		{"too many tools", SpawnRequest{Purpose: "p", Prompt: "x", Tools: make([]string, maxSpawnTools+1)}, CodeInvalidRequest},
		{"model without a catalogue", SpawnRequest{Purpose: "p", Prompt: "x", Model: "m"}, CodeUnknownModel},
	}
	for i, tt := range cases {
		c.SourceIndex = i
		if _, err := a.Spawn(bg, c, tt.req); codeOf(err) != tt.code {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.code)
		}
	}
	c.SourceIndex = 100
	sp, err := a.Spawn(bg, c, SpawnRequest{Purpose: "p", Prompt: "x", Deadline: 10 * defaultMaxRunBudget})
	if err != nil || time.Until(sp.Deadline) > defaultMaxRunBudget {
		t.Errorf("deadline not clamped: %v, %v", sp.Deadline, err)
	}
}

func TestNotes(t *testing.T) {
	a := NewAgency(echo, Options{})
	defer a.Close()
	c := root("main", 1)
	n, err := a.Note(bg, c, "findings/auth", json.RawMessage(`{ "ok" : true }`))
	if err != nil || n.Key != "agent/main/findings/auth" || string(n.Value) != `{"ok":true}` {
		t.Fatalf("note: %+v, %v", n, err)
	}
	if _, err := a.Note(bg, c, "findings/auth", json.RawMessage(`{"ok":true}`)); err != nil {
		t.Errorf("rewriting the same value: %v", err)
	}
	if _, err := a.Note(bg, c, "findings/auth", json.RawMessage(`{"ok":false}`)); codeOf(err) != CodeNoteExists {
		t.Errorf("rewriting another value: %v", err)
	}
	for _, key := range []string{"", "/a", "a/", "a//b", "../x", "a/./b", "a b", "a#b", todoNoteKey, strings.Repeat("k", maxNoteKeyBytes+1)} {
		if _, err := a.Note(bg, c, key, json.RawMessage(`1`)); codeOf(err) != CodeBadNoteKey {
			t.Errorf("key %q: %v", key, err)
		}
	}
	if _, err := a.Note(bg, c, strings.Repeat("k", maxNoteKeyBytes), json.RawMessage(`1`)); err != nil {
		t.Errorf("key at the bound: %v", err)
	}
	// The Agency's bound is a program's (MaxProgramNoteBytes); agent_note's
	// smaller one is the tool's (TestNoteBounds).
	fits := json.RawMessage(`"` + strings.Repeat("x", MaxProgramNoteBytes-2) + `"`)
	if _, err := a.Note(bg, c, "big", fits); err != nil {
		t.Errorf("note at the bound: %v", err)
	}
	over := json.RawMessage(`"` + strings.Repeat("x", MaxProgramNoteBytes-1) + `"`)
	if _, err := a.Note(bg, c, "bigger", over); codeOf(err) != CodeNoteTooLarge {
		t.Errorf("note past the bound: %v", err)
	}
	if _, err := a.Note(bg, c, "bad", json.RawMessage(`{`)); codeOf(err) != CodeNoteTooLarge {
		t.Errorf("not JSON: %v", err)
	}
	page, err := a.Notes(bg, c, "agent/main/findings/")
	if err != nil || len(page.Notes) != 1 || page.Truncated {
		t.Fatalf("notes: %+v, %v", page, err)
	}
	if _, err := a.Notes(bg, c, "main/"); codeOf(err) != CodeBadNoteKey {
		t.Errorf("prefix outside the namespace: %v", err)
	}
	if _, err := a.Todos(bg, c, func(b todo.Board) (todo.Board, error) {
		return todo.Apply(b, todo.Step{Op: todo.OpInit, Items: []string{"a"}})
	}); err != nil {
		t.Fatal(err)
	}
	page, _ = a.Notes(bg, c, "agent/main/todo")
	if len(page.Notes) != 1 || !strings.Contains(string(page.Notes[0].Value), `"active"`) {
		t.Errorf("todo cell not readable as a note: %+v", page)
	}
}

func TestNoteAndListLimits(t *testing.T) {
	a := NewAgency(echo, Options{})
	defer a.Close()
	c := root("main", 1)
	for i := range maxNotesPerStrand - 2 { // two slots left
		if _, err := a.Note(bg, c, fmt.Sprintf("n%03d", i), json.RawMessage(`1`)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Note(bg, c, "last-but-one", json.RawMessage(`1`)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Note(bg, c, "last", json.RawMessage(`1`)); err != nil {
		t.Fatalf("note %d: %v", maxNotesPerStrand, err)
	}
	if _, err := a.Note(bg, c, "one-past", json.RawMessage(`1`)); codeOf(err) != CodeNoteLimit {
		t.Fatalf("note %d: %v", maxNotesPerStrand+1, err)
	}
	page, err := a.Notes(bg, root("other", 1), "agent/")
	if err != nil || len(page.Notes) != MaxNotesListed || !page.Truncated {
		t.Fatalf("listing: %d notes, truncated %v, %v", len(page.Notes), page.Truncated, err)
	}
}

func TestTodosCompareAndSet(t *testing.T) {
	a := NewAgency(echo, Options{})
	defer a.Close()
	c := root("main", 1)
	const writers = 20
	var wg sync.WaitGroup
	var conflicts atomic.Int64
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				_, err := a.Todos(bg, c, func(b todo.Board) (todo.Board, error) {
					return todo.Apply(b, todo.Step{Op: todo.OpAppend, Items: []string{fmt.Sprint("task ", i)}})
				})
				if codeOf(err) == CodeTodoConflict {
					conflicts.Add(1)
					continue
				}
				if err != nil {
					t.Error(err)
				}
				return
			}
		}()
	}
	wg.Wait()
	b, err := a.Todos(bg, c, func(b todo.Board) (todo.Board, error) { return b, nil })
	if err != nil || len(b.Tasks) != writers {
		t.Fatalf("%d tasks landed of %d (%d conflicts): %v", len(b.Tasks), writers, conflicts.Load(), err)
	}
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestTodosConflictAfterRetries(t *testing.T) {
	a := NewAgency(echo, Options{})
	defer a.Close()
	c := root("main", 1)
	calls := 0
	_, err := a.Todos(bg, c, func(b todo.Board) (todo.Board, error) {
		calls++
		// A sibling writes the cell while this step runs, every time.
		if _, err := a.Todos(bg, c, func(b todo.Board) (todo.Board, error) {
			return todo.Apply(b, todo.Step{Op: todo.OpAppend, Items: []string{fmt.Sprint("sibling ", calls)}})
		}); err != nil {
			return todo.Board{}, err
		}
		return todo.Apply(b, todo.Step{Op: todo.OpAppend, Items: []string{"mine"}})
	})
	if codeOf(err) != CodeTodoConflict || calls != maxTodoRetries {
		t.Fatalf("err %v after %d attempts", err, calls)
	}
}

func TestConcurrentSpawnsAndWaits(t *testing.T) {
	a := NewAgency(RunnerFunc(func(ctx context.Context, t Turn) (string, error) {
		time.Sleep(time.Millisecond)
		return t.Strand, nil
	}), Options{FanOut: 64, SessionStrands: 64})
	defer a.Close()
	const parents, each = 4, 8
	var wg sync.WaitGroup
	for p := range parents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var hs []Handle
			for i := range each {
				c := Caller{Strand: fmt.Sprint("root", p), OpID: "op", StepID: "s", SourceIndex: i}
				sp, err := a.Spawn(bg, c, spawnReq("w"))
				if err != nil {
					t.Error(err)
					return
				}
				hs = append(hs, sp.Handle)
				go a.Roster(bg, c)
			}
			ws, err := a.Wait(bg, Caller{Strand: fmt.Sprint("root", p)}, hs, a.opts.MaxWait)
			if err != nil {
				t.Error(err)
				return
			}
			for i, w := range ws {
				if !w.Ready || w.Report != hs[i].Strand {
					t.Errorf("%s: %+v", hs[i], w)
				}
			}
		}()
	}
	wg.Wait()
	a.mu.Lock()
	live := a.live
	a.mu.Unlock()
	if live != 0 {
		t.Fatalf("%d runs still counted live", live)
	}
}
