package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/tool"
)

// withNotify replaces s's Engine with one over the same registry, broker,
// job plane and build cache that tells notify about every execution that
// ends on its own.
func (s *session) withNotify(t *testing.T, notify func(ExecutionNotice)) {
	t.Helper()
	dir, b := e2eShared(t)
	eng, err := New(Options{Registry: s.reg, Broker: b, Jobs: s.jobs, Notify: notify, Builder: BuilderOptions{CacheDir: dir, StdPackages: e2eStd}})
	if err != nil {
		t.Fatal(err)
	}
	s.eng = eng
	t.Cleanup(func() { eng.Close(context.Background()) })
}

// dispatchAs calls code_mode as strand through a registry, as a host does.
func (s *session) dispatchAs(t *testing.T, strand string, args map[string]any) tool.Outcome {
	t.Helper()
	reg, err := tool.NewRegistry(s.eng.Tool())
	if err != nil {
		t.Fatal(err)
	}
	c := s.call.At(s.call.OpID, s.call.StepID, s.call.SourceIndex)
	c.Strand = strand
	raw, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	return reg.Dispatch(ctx, c, ToolName, raw)
}

// launched launches src as strand and returns its handle.
func (s *session) launched(t *testing.T, strand, src string) string {
	t.Helper()
	o := s.dispatchAs(t, strand, map[string]any{"mode": "launch", "program": src})
	if o.IsError {
		t.Fatalf("launch: %s: %s", o.Code, o.Text)
	}
	d, ok := o.Details.(ExecutionDetails)
	if !ok || !strings.Contains(o.Text, "launched "+d.Handle) || !strings.Contains(o.Text, "| run: shown by join") || d.State != ExecutionRunning {
		t.Fatalf("launch answered %T %+v:\n%s", o.Details, o.Details, o.Text)
	}
	return d.Handle
}

// awaitExecution waits, on the execution's own change signal, until
// cond holds of the status of handle, launched by strand main.
func awaitExecution(t *testing.T, eng *Engine, handle string, cond func(ExecutionStatus) bool) ExecutionStatus {
	t.Helper()
	eng.execs.mu.Lock()
	x, _ := eng.execs.tab.Lookup("main", handle)
	eng.execs.mu.Unlock()
	if x == nil {
		t.Fatalf("no execution %s", handle)
	}
	deadline := time.NewTimer(2 * time.Minute)
	defer deadline.Stop()
	for {
		eng.execs.mu.Lock()
		changed := x.changed
		eng.execs.mu.Unlock()
		if st := eng.execs.status(x); cond(st) {
			return st
		}
		select {
		case <-changed:
		case <-x.done:
			if st := eng.execs.status(x); !cond(st) {
				t.Fatalf("%s ended before the condition held: %+v", handle, st)
			}
		case <-deadline.C:
			t.Fatalf("%s: the condition never held: %+v", handle, eng.execs.status(x))
		}
	}
}

// scriptProgram registers "ctl", waits for kv key "go", declares itself
// ready, then does what "default" receives: "job <command>" starts a job,
// "proc <argv>" runs a command in the background, "read <path>" reads a
// workspace file (the launching call's roots, long after it answered),
// "stop" prints what
// "ctl" holds and exits, anything else is echoed. Every end-to-end test
// of launched programs runs it, so it is built once.
const scriptProgram = `package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"cap/execution"
	"cap/fs"
	"cap/job"
	"cap/kv"
	"cap/proc"
)

func main() {
	ctx := context.Background()
	if err := execution.Register(ctx, "ctl"); err != nil {
		panic(err)
	}
	for {
		_, ok, err := kv.Get(ctx, "go")
		if err != nil {
			panic(err)
		}
		if ok {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := execution.Ready(ctx); err != nil {
		panic(err)
	}
	for {
		in, ok, err := execution.Receive(ctx, "default", 50*time.Second)
		if err != nil {
			panic(err)
		}
		if !ok {
			continue
		}
		verb, arg, _ := strings.Cut(string(in), " ")
		switch verb {
		case "stop":
			ctl, ok, err := execution.Receive(ctx, "ctl", time.Second)
			fmt.Println("ctl", string(ctl), ok, err)
			return
		case "read":
			f, err := fs.Read(ctx, arg)
			fmt.Println("read", arg, f.Size, err)
		case "job":
			h, err := job.Start(ctx, arg, "")
			fmt.Println("job", h, err)
		case "proc":
			go func() {
				r, err := proc.Run(ctx, proc.Cmd{Argv: strings.Fields(arg)})
				fmt.Println("proc.run came back", r.Exit, err)
			}()
		default:
			fmt.Println("got", string(in))
		}
	}
}
`

// TestLaunchCheckSendJoin drives one launched program through the real
// pipeline: launch answers a handle at once; check reports state,
// readiness and endpoints; send is refused before readiness and to an
// endpoint not registered, then delivered; the program reads a workspace
// file through the launching call's pinned roots after that call
// answered; join renders the result as run does without the call record;
// the owner is told it ended. Another
// strand's handle is refused as one never minted, a handle from before a
// restart reads as lost, and no interaction can replace the source or the
// deadline.
func TestLaunchCheckSendJoin(t *testing.T) {
	t.Parallel()
	s := newSession(t, map[string]string{"a.txt": "hello file"})
	var mu sync.Mutex
	var notices []ExecutionNotice
	s.withNotify(t, func(n ExecutionNotice) {
		mu.Lock()
		notices = append(notices, n)
		mu.Unlock()
	})
	h := s.launched(t, "main", scriptProgram)
	if !handlePattern.MatchString(h) {
		t.Fatalf("handle %q is not of the minted shape", h)
	}
	awaitExecution(t, s.eng, h, func(st ExecutionStatus) bool { return slices.Contains(st.Endpoints, "ctl") })

	o := s.dispatch(t, map[string]any{"mode": "check", "handle": h})
	d, _ := o.Details.(ExecutionDetails)
	if o.IsError || d.State != ExecutionRunning || d.Ready || !slices.Equal(d.Endpoints, []string{"ctl"}) || !strings.Contains(o.Text, "not ready") {
		t.Fatalf("check before ready: %+v\n%s", o.Details, o.Text)
	}
	if o := s.dispatch(t, map[string]any{"mode": "send", "handle": h, "input": "early"}); o.Code != CodeExecutionNotReady {
		t.Fatalf("send before ready: %s: %s", o.Code, o.Text)
	}
	if err := s.eng.kv.Set("main", "go", []byte("1")); err != nil {
		t.Fatal(err)
	}
	awaitExecution(t, s.eng, h, func(st ExecutionStatus) bool { return st.Ready })
	o = s.dispatch(t, map[string]any{"mode": "check", "handle": h})
	if d, _ := o.Details.(ExecutionDetails); !d.Ready || !slices.Equal(d.Endpoints, []string{"ctl", "default"}) || !strings.Contains(o.Text, "ready") {
		t.Fatalf("check after ready: %+v\n%s", o.Details, o.Text)
	}

	refused := []struct {
		name   string
		strand string
		args   map[string]any
		code   tool.Code
		says   string
	}{
		{"unknown_endpoint", "main", map[string]any{"mode": "send", "handle": h, "endpoint": "nope", "input": "x"}, CodeUnknownEndpoint, "ctl, default"},
		{"another_strand", "other", map[string]any{"mode": "check", "handle": h}, CodeUnknownExecution, "launched none"},
		{"another_strand_send", "other", map[string]any{"mode": "send", "handle": h, "input": "x"}, CodeUnknownExecution, "launched none"},
		{"another_strand_cancel", "other", map[string]any{"mode": "cancel", "handle": h}, CodeUnknownExecution, "launched none"},
		{"never_minted", "main", map[string]any{"mode": "check", "handle": "job-1"}, CodeUnknownExecution, h},
		{"before_restart", "main", map[string]any{"mode": "join", "handle": "exec-" + otherEpoch(s.eng) + "-0123456789ab"}, CodeExecutionLost, "restarted"},
		{"replace_source", "main", map[string]any{"mode": "send", "handle": h, "input": "x", "program": "package main\nfunc main() {}\n"}, tool.CodeInvalidArguments, "fixed at launch"},
		{"move_deadline", "main", map[string]any{"mode": "join", "handle": h, "within_ms": 600000}, tool.CodeInvalidArguments, "fixed at launch"},
		{"no_handle", "main", map[string]any{"mode": "check"}, tool.CodeInvalidArguments, "needs handle"},
		{"run_with_handle", "main", map[string]any{"program": "package main\nfunc main() {}\n", "handle": h}, tool.CodeInvalidArguments, "mode run takes no handle"},
	}
	for _, c := range refused {
		o := s.dispatchAs(t, c.strand, c.args)
		if !o.IsError || o.Code != c.code || !strings.Contains(o.Text, c.says) {
			t.Errorf("%s: %s, want %s saying %q:\n%s", c.name, o.Code, c.code, c.says, o.Text)
		}
		if c.strand != "main" {
			// Refused exactly as a handle never minted: nothing says the
			// execution exists.
			never := "exec-" + s.eng.execs.epoch + "-000000000000"
			args := maps.Clone(c.args)
			args["handle"] = never
			n := s.dispatchAs(t, c.strand, args)
			if n.Code != o.Code || strings.ReplaceAll(n.Text, never, h) != o.Text {
				t.Errorf("%s: another strand's handle is refused unlike one never minted:\n%s\n%s", c.name, o.Text, n.Text)
			}
		}
	}

	for _, send := range []map[string]any{
		{"mode": "send", "handle": h, "input": "hello"},
		{"mode": "send", "handle": h, "input": "read a.txt"},
		{"mode": "send", "handle": h, "endpoint": "ctl", "input": "c1"},
		{"mode": "send", "handle": h, "input": "stop"},
	} {
		if o := s.dispatch(t, send); o.IsError || !strings.Contains(o.Text, "sent") {
			t.Fatalf("send %v: %s: %s", send, o.Code, o.Text)
		}
	}
	o = s.dispatch(t, map[string]any{"mode": "join", "handle": h, "wait_ms": maxJoinWait.Milliseconds()})
	if o.IsError {
		t.Fatalf("join: %s: %s", o.Code, o.Text)
	}
	jd, ok := o.Details.(Details)
	for _, want := range []string{"joined " + h + ": exited", "got hello\n", "read a.txt 10 <nil>\n", "ctl c1 true <nil>\n", "sandbox: build: ", " | run: "} {
		if !strings.Contains(o.Text, want) {
			t.Errorf("the join lacks %q:\n%s", want, o.Text)
		}
	}
	if strings.Contains(o.Text, "got early") || strings.Contains(o.Text, "calls: ") || !ok || jd.Record != nil || jd.Run == nil || jd.Exit == nil || *jd.Exit != 0 {
		t.Errorf("the join shows a call record, a refused send or no run: %+v\n%s", o.Details, o.Text)
	}
	if o := s.dispatch(t, map[string]any{"mode": "send", "handle": h, "input": "late"}); o.Code != CodeExecutionEnded {
		t.Errorf("send after the end: %s: %s", o.Code, o.Text)
	}
	if o := s.dispatch(t, map[string]any{"mode": "check", "handle": h}); o.Details.(ExecutionDetails).State != ExecutionExited {
		t.Errorf("check after the end: %s", o.Text)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notices) != 1 || notices[0] != (ExecutionNotice{Owner: "main", Handle: h, State: ExecutionExited}) {
		t.Errorf("notices %+v", notices)
	}
}

// otherEpoch is an epoch eng did not mint.
func otherEpoch(eng *Engine) string {
	if eng.execs.epoch == "00000000" {
		return "00000001"
	}
	return "00000000"
}

// processesWith lists the pids whose command line holds arg as one word.
func processesWith(arg string) []string {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []string
	for _, p := range cmdlines {
		b, err := os.ReadFile(p)
		if err == nil && slices.Contains(strings.Split(string(b), "\x00"), arg) {
			pids = append(pids, filepath.Base(filepath.Dir(p)))
		}
	}
	return pids
}

// awaitProcess waits until a process with arg in its command line runs,
// looking again every few milliseconds (a process of the jail's starting
// sends no signal to wait on).
func awaitProcess(t *testing.T, arg string) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(2 * time.Minute)
	defer deadline.Stop()
	for len(processesWith(arg)) == 0 {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("no process %s started", arg)
		}
	}
}

// TestCancelReapsTheExecutionsStepNotItsJob: cancelling a launched
// program mid-run ends it and the proc.run command it is waiting on
// before the cancel answers, leaves the job it started through cap/job
// running, and tells no one (the owner asked); join then shows the run
// cancelled. (TestMain's teardown check looks for any process left.)
func TestCancelReapsTheExecutionsStepNotItsJob(t *testing.T) {
	t.Parallel()
	const procMark, jobMark = "3599.71", "3598.29"
	s := newSession(t, nil)
	var notified sync.Mutex
	notices := 0
	s.withNotify(t, func(ExecutionNotice) { notified.Lock(); notices++; notified.Unlock() })
	if err := s.eng.kv.Set("main", "go", []byte("1")); err != nil {
		t.Fatal(err)
	}
	h := s.launched(t, "main", scriptProgram)
	awaitExecution(t, s.eng, h, func(st ExecutionStatus) bool { return st.Ready })
	for _, in := range []string{"job exec sleep " + jobMark, "proc sleep " + procMark} {
		if o := s.dispatch(t, map[string]any{"mode": "send", "handle": h, "input": in}); o.IsError {
			t.Fatalf("send %q: %s", in, o.Text)
		}
	}
	awaitProcess(t, procMark)
	awaitProcess(t, jobMark)

	o := s.dispatch(t, map[string]any{"mode": "cancel", "handle": h})
	if o.IsError || !strings.Contains(o.Text, "cancelled "+h) || o.Details.(ExecutionDetails).State != ExecutionCancelled {
		t.Fatalf("cancel: %s: %s", o.Code, o.Text)
	}
	if pids := processesWith(procMark); len(pids) > 0 {
		t.Errorf("the program's proc.run command outlived the cancel: pids %v", pids)
	}
	if pids := processesWith(jobMark); len(pids) == 0 {
		t.Errorf("the job the program started was reaped with it")
	}
	owner := job.OwnerOf(s.call)
	l, err := s.jobs.List(t.Context(), owner)
	if err != nil || len(l.Jobs) != 1 || !l.Jobs[0].State.Pending() {
		t.Fatalf("the job plane lists %+v (%v), want the program's job running", l.Jobs, err)
	}
	if _, err := s.jobs.Kill(t.Context(), owner, l.Jobs[0].ID); err != nil {
		t.Fatal(err)
	}

	o = s.dispatch(t, map[string]any{"mode": "join", "handle": h})
	if o.Code != CodeRunCancelled || !strings.Contains(o.Text, "joined "+h+": cancelled") || !strings.Contains(o.Text, "job ") {
		t.Errorf("join after cancel: %s:\n%s", o.Code, o.Text)
	}
	if o := s.dispatch(t, map[string]any{"mode": "cancel", "handle": h}); o.IsError || !strings.Contains(o.Text, "already cancelled") {
		t.Errorf("second cancel: %s: %s", o.Code, o.Text)
	}
	notified.Lock()
	defer notified.Unlock()
	if notices != 0 {
		t.Errorf("%d notices of an execution its owner cancelled", notices)
	}
}

// TestLiveExecutionBound: a strand runs maxLiveExecutions launched
// programs at once and the next launch is refused naming them; another
// strand is not counted against it; a cancel frees a slot. Close then
// tears every one down, reaped, and refuses later launches.
func TestLiveExecutionBound(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	for _, strand := range []string{"main", "other"} {
		if err := s.eng.kv.Set(strand, "go", []byte("1")); err != nil {
			t.Fatal(err)
		}
	}
	var handles []string
	for range maxLiveExecutions {
		handles = append(handles, s.launched(t, "main", scriptProgram))
	}
	o := s.dispatch(t, map[string]any{"mode": "launch", "program": scriptProgram})
	if o.Code != CodeExecutionCeiling || !strings.Contains(o.Text, fmt.Sprint(maxLiveExecutions)) || !strings.Contains(o.Text, handles[0]) {
		t.Fatalf("launch %d: %s: %s", maxLiveExecutions+1, o.Code, o.Text)
	}
	other := s.launched(t, "other", scriptProgram)
	if o := s.dispatch(t, map[string]any{"mode": "cancel", "handle": handles[0]}); o.IsError {
		t.Fatalf("cancel: %s", o.Text)
	}
	handles = append(handles, s.launched(t, "main", scriptProgram))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.eng.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, h := range append(handles[1:], other) {
		strand := "main"
		if h == other {
			strand = "other"
		}
		o := s.dispatchAs(t, strand, map[string]any{"mode": "check", "handle": h})
		if o.Details.(ExecutionDetails).State != ExecutionCancelled {
			t.Errorf("%s after Close: %s", h, o.Text)
		}
	}
	if o := s.dispatch(t, map[string]any{"mode": "launch", "program": scriptProgram}); o.Code != CodeEngineClosed {
		t.Errorf("launch after Close: %s: %s", o.Code, o.Text)
	}
}

// TestPreludeStatesTheReceiveBound: cap/execution states the host's
// receive bound.
func TestPreludeStatesTheReceiveBound(t *testing.T) {
	t.Parallel()
	src, err := fs.ReadFile(embeddedPrelude(), "execution/execution.go")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("a wait of at most %d s", int(maxReceiveWait.Seconds())); !strings.Contains(string(src), want) {
		t.Errorf("cap/execution's doc does not say %q", want)
	}
}

// TestDescriptionStatesTheModes: code_mode's description names every
// mode and the live bound from its constant, and the schema takes exactly
// the six modes.
func TestDescriptionStatesTheModes(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	tl := s.eng.Tool()
	for _, want := range []string{"mode launch", "check", "send", "join", "cancel", "execution.Ready", fmt.Sprintf("at most %d per strand", maxLiveExecutions)} {
		if !strings.Contains(tl.Description, want) {
			t.Errorf("the description lacks %q", want)
		}
	}
	var schema struct {
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(tl.Schema, &schema); err != nil {
		t.Fatal(err)
	}
	if got := schema.Properties["mode"].Enum; !slices.Equal(got, []string{"run", "launch", "send", "check", "join", "cancel"}) {
		t.Errorf("mode's enum %v", got)
	}
	t.Logf("code_mode surface: %d bytes of %d", len(tl.Description)+len(tl.Schema), maxSurfaceBytes)
}
