package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// escalation is a scripted escalation plane: it counts the refusals
// raised to it and answers each with answer.
type escalation struct {
	raised atomic.Int32
	last   atomic.Pointer[tool.RaisedRefusal]
	answer func(tool.RaisedRefusal) tool.Escalation
}

func (e *escalation) raise(_ context.Context, r tool.RaisedRefusal) tool.Escalation {
	e.raised.Add(1)
	e.last.Store(&r)
	return e.answer(r)
}

// approveAll resumes with exactly the grants wanted, as an operator
// answering accept does (mcpserve's approver).
func approveAll(r tool.RaisedRefusal) tool.Escalation {
	return tool.Escalation{Resume: true, Grants: r.Denial.Wanted}
}

func decline(tool.RaisedRefusal) tool.Escalation { return tool.Escalation{} }

// outsideDir is a directory beside the session's workspace that its
// policy neither reads nor writes.
func outsideDir(t *testing.T, s *session, name string) string {
	t.Helper()
	d := filepath.Join(filepath.Dir(s.ws), name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// dispatchCtx calls code_mode through a registry under ctx with the
// session's call and its escalation plane esc (nil: none).
func (s *session) dispatchCtx(t *testing.T, ctx context.Context, esc *escalation, args map[string]any) (tool.Outcome, Details) {
	t.Helper()
	reg, err := tool.NewRegistry(s.eng.Tool())
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(args)
	c := *s.call
	if esc != nil {
		c.RaiseRefusal = esc.raise
	}
	o := reg.Dispatch(ctx, &c, ToolName, raw)
	d, _ := o.Details.(Details)
	return o, d
}

// writeBoth is the body of a program writing name under dir through
// fs.Write and name+".sh" through proc.Run, printing how each came out
// after label.
func writeBoth(label, dir, name string) string {
	return `if _, err := fs.Write(ctx, "` + dir + `/` + name + `", []byte("from fs\n")); err != nil {
		fmt.Println("` + label + `fs:", err.(*fs.Error).Code)
	} else {
		fmt.Println("` + label + `fs: ok")
	}
	if r, err := proc.Run(ctx, proc.Cmd{Argv: []string{"sh", "-c", "echo from proc > ` + dir + `/` + name + `.sh"}}); err != nil {
		fmt.Println("` + label + `proc:", err.(*proc.Error).Code)
	} else {
		fmt.Println("` + label + `proc: exit", r.Exit)
	}
`
}

// writeProgram is a program of writeBoth bodies.
func writeProgram(bodies ...string) string {
	return mainWith([]string{"cap/fs", "cap/proc", "context", "fmt"}, "ctx := context.Background()\n"+strings.Join(bodies, ""))
}

// TestApprovedWritableRootActsOnCapabilityCallsOnly: an approval of the
// writable root a call declares lets the program's fs.Write and proc.Run
// write there, raised once; a second refusal the running program meets
// (another root) is answered in band and never raised; and the build's
// and the run jail's reports are those of a run without the grant (no
// writable path in the run jail). The control, a program declaring
// nothing, is refused both writes in band.
func TestApprovedWritableRootActsOnCapabilityCallsOnly(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	granted, other := outsideDir(t, s, "granted"), outsideDir(t, s, "other")

	control, cd := s.dispatchCtx(t, context.Background(), nil, map[string]any{"program": writeProgram(writeBoth("", granted, "control.txt"))})
	if control.IsError || !strings.Contains(control.Text, "fs: "+string(tool.CodeOutsideRoots)) || strings.Contains(control.Text, "proc: exit 0") {
		t.Fatalf("control: %s: %s", control.Code, control.Text)
	}
	if cd.Grants.State != GrantsNone || cd.Build == nil || cd.Run == nil {
		t.Fatalf("control details: grants %+v, build %v, run %v", cd.Grants, cd.Build, cd.Run)
	}

	esc := &escalation{answer: approveAll}
	src := writeProgram(writeBoth("", granted, "a.txt"), writeBoth("other ", other, "b.txt"))
	o, d := s.dispatchCtx(t, context.Background(), esc, map[string]any{"program": src, "permissions": map[string]any{"writable_roots": []string{granted}, "network": "full"}})
	if o.IsError {
		t.Fatalf("%s: %s", o.Code, o.Text)
	}
	for _, want := range []string{"fs: ok", "proc: exit 0", "other fs: " + string(tool.CodeOutsideRoots), "grants: writable_root " + granted} {
		if !strings.Contains(o.Text, want) {
			t.Errorf("the answer lacks %q:\n%s", want, o.Text)
		}
	}
	if strings.Contains(o.Text, "other proc: exit 0") {
		t.Errorf("proc.run wrote under the root not granted:\n%s", o.Text)
	}
	for _, f := range []string{"a.txt", "a.txt.sh"} {
		if _, err := os.Stat(filepath.Join(granted, f)); err != nil {
			t.Errorf("%s not written under the granted root: %v", f, err)
		}
	}
	for _, f := range []string{"b.txt", "b.txt.sh"} {
		if _, err := os.Stat(filepath.Join(other, f)); err == nil {
			t.Errorf("%s written under the root not granted", f)
		}
	}
	if n := esc.raised.Load(); n != 1 {
		t.Errorf("raised %d times; want once for the whole execution", n)
	}
	want := Widening{State: GrantsComposed, Grants: []sandbox.Grant{{Kind: sandbox.GrantWritableRoot, Path: granted}, {Kind: sandbox.GrantNetwork}}, Asked: true}
	if diff := cmp.Diff(want, d.Grants); diff != "" {
		t.Errorf("Details.Grants (-want +got):\n%s", diff)
	}
	if d.Build == nil || d.Run == nil {
		t.Fatalf("missing reports: build %v, run %v", d.Build, d.Run)
	}
	if diff := cmp.Diff(cd.Build, d.Build); diff != "" {
		t.Errorf("the build's report changed under the grant (-control +granted):\n%s", diff)
	}
	if diff := cmp.Diff(cd.Run, d.Run); diff != "" {
		t.Errorf("the run jail's report changed under the grant (-control +granted):\n%s", diff)
	}
	if m, _ := d.Run.Layer(sandbox.LayerEmptyRoot); !strings.Contains(m.Params, "no writable path") || strings.Contains(m.Params, granted) {
		t.Errorf("the run jail's empty root: %+v", m)
	}
}

// TestRefusedApprovalStartsNothing: a shortfall declined by the operator,
// or with no escalation plane to ask, leaves the program unstarted (its
// first effect absent) and refused in band, naming the grant to ask for.
func TestRefusedApprovalStartsNothing(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		esc    *escalation
		raised int32
		state  WideningState
		says   string
	}{
		{name: "declined", esc: &escalation{answer: decline}, raised: 1, state: GrantsSpent, says: "did not approve"},
		{name: "no_plane", state: GrantsNone, says: "no one to approve"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newSession(t, nil)
			out := outsideDir(t, s, "wanted")
			src := mainWith([]string{"cap/fs", "context"}, `fs.Write(context.Background(), "started.txt", []byte("ran"))`)
			o, d := s.dispatchCtx(t, context.Background(), c.esc, map[string]any{"program": src, "permissions": map[string]any{"writable_roots": []string{out}, "network": "full"}})
			if !o.IsError || o.Code != tool.Code(sandbox.DenialRequirementsNotCovered) {
				t.Fatalf("%s: %s", o.Code, o.Text)
			}
			for _, want := range []string{"not started", "writable_root " + out, "network", c.says} {
				if !strings.Contains(o.Text, want) {
					t.Errorf("the refusal lacks %q:\n%s", want, o.Text)
				}
			}
			if _, err := os.Stat(filepath.Join(s.ws, "started.txt")); err == nil {
				t.Error("the program ran")
			}
			if d.Run != nil || d.Grants.State != c.state {
				t.Errorf("run %v, grants %+v; want no run, %s", d.Run, d.Grants, c.state)
			}
			if c.esc != nil {
				if n := c.esc.raised.Load(); n != c.raised {
					t.Errorf("raised %d times, want %d", n, c.raised)
				}
				if r := c.esc.last.Load(); r == nil || r.Tool != ToolName || len(r.Denial.Wanted) != 2 {
					t.Errorf("raised %+v", r)
				}
			}
		})
	}
}

// TestGrantsValue: Details.Grants and the result's grants line say which
// grants a run composed, or which way it composed none.
func TestGrantsValue(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	out := outsideDir(t, s, "grantable")
	wanted := []sandbox.Grant{{Kind: sandbox.GrantReadableRoot, Path: out}}
	prog := mainWith([]string{"fmt"}, `fmt.Println("ran")`)
	perm := map[string]any{"readable_roots": []string{out}}
	for _, c := range []struct {
		name   string
		args   map[string]any
		answer func(context.CancelFunc) func(tool.RaisedRefusal) tool.Escalation
		want   Widening
		line   string
		ran    bool
	}{
		{name: "none", args: map[string]any{"program": prog}, want: Widening{State: GrantsNone}, line: "grants: none", ran: true},
		{name: "covered_by_the_session", args: map[string]any{"program": prog, "permissions": map[string]any{"writable_roots": []string{s.ws}}},
			want: Widening{State: GrantsNone}, line: "grants: none", ran: true},
		{name: "composed", args: map[string]any{"program": prog, "permissions": perm},
			answer: func(context.CancelFunc) func(tool.RaisedRefusal) tool.Escalation { return approveAll },
			want:   Widening{State: GrantsComposed, Grants: wanted, Asked: true}, line: "grants: readable_root " + out, ran: true},
		{name: "spent", args: map[string]any{"program": prog, "permissions": perm},
			answer: func(context.CancelFunc) func(tool.RaisedRefusal) tool.Escalation { return decline },
			want:   Widening{State: GrantsSpent, Asked: true}, line: "the approval was asked and not given"},
		{name: "spent_short", args: map[string]any{"program": prog, "permissions": perm},
			answer: func(context.CancelFunc) func(tool.RaisedRefusal) tool.Escalation {
				return func(tool.RaisedRefusal) tool.Escalation {
					return tool.Escalation{Resume: true, Grants: []sandbox.Grant{{Kind: sandbox.GrantReadableRoot, Path: "/nonexistent-elsewhere"}}}
				}
			},
			want: Widening{State: GrantsSpent, Grants: []sandbox.Grant{{Kind: sandbox.GrantReadableRoot, Path: "/nonexistent-elsewhere"}}, Asked: true}, line: "still not covered"},
		{name: "unreached", args: map[string]any{"program": prog, "permissions": perm},
			answer: func(cancel context.CancelFunc) func(tool.RaisedRefusal) tool.Escalation {
				// The approval arrives as the host's call ends: the grants
				// are carried, and the program never starts.
				return func(r tool.RaisedRefusal) tool.Escalation { cancel(); return approveAll(r) }
			},
			want: Widening{State: GrantsUnreached, Grants: wanted, Asked: true}, line: "carried and never reached"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var esc *escalation
			if c.answer != nil {
				esc = &escalation{answer: c.answer(cancel)}
			}
			o, d := s.dispatchCtx(t, ctx, esc, c.args)
			if esc != nil && esc.raised.Load() != 1 {
				t.Errorf("raised %d times; a refusal after the resume stands in band, never raised again", esc.raised.Load())
			}
			if diff := cmp.Diff(c.want, d.Grants); diff != "" {
				t.Errorf("Details.Grants (-want +got):\n%s\n%s", diff, o.Text)
			}
			if !strings.Contains(o.Text, c.line) {
				t.Errorf("the answer lacks %q:\n%s", c.line, o.Text)
			}
			if ran := strings.Contains(o.Text, "ran\n"); ran != c.ran || (d.Run != nil) != c.ran {
				t.Errorf("ran %v (run report %v), want %v: %s: %s", ran, d.Run != nil, c.ran, o.Code, o.Text)
			}
			if c.ran && !strings.HasSuffix(strings.TrimRight(o.Text, "\n"), c.want.String()) {
				t.Errorf("the grants line is not the answer's last:\n%s", o.Text)
			}
		})
	}
}

// TestSessionJobFromProgram: job.StartForSession starts a job with no
// wall deadline only for a call that declared wall_s 0 and, under a
// session policy with a wall, got the wall grant approved; never from a
// sub-agent, whose wall_s is refused before anything is asked.
func TestSessionJobFromProgram(t *testing.T) {
	t.Parallel()
	start := mainWith([]string{"cap/job", "context", "fmt"}, `h, err := job.StartForSession(context.Background(), "sleep 300", "")
	if err != nil {
		fmt.Println("refused:", err.(*job.Error).Code)
		return
	}
	fmt.Println("started:", h)`)
	wall := map[string]any{"wall_s": 0}
	for _, c := range []struct {
		name    string
		strand  string
		wallMs  int
		args    map[string]any
		answer  func(tool.RaisedRefusal) tool.Escalation
		raised  int32
		code    tool.Code // the call's refusal
		says    string
		started bool
	}{
		{name: "undeclared", strand: "main", wallMs: 120_000, args: map[string]any{"program": start}, answer: approveAll,
			says: "refused: " + string(sandbox.DenialRequirementsNotCovered)},
		// Without a wall in the session policy bash would start it; a
		// program still needs the call to have declared it.
		{name: "undeclared_no_wall", strand: "main", args: map[string]any{"program": start}, answer: approveAll,
			says: "refused: " + string(sandbox.DenialRequirementsNotCovered)},
		{name: "declined", strand: "main", wallMs: 120_000, args: map[string]any{"program": start, "permissions": wall}, answer: decline, raised: 1,
			code: tool.Code(sandbox.DenialRequirementsNotCovered), says: "wall"},
		{name: "approved", strand: "main", wallMs: 120_000, args: map[string]any{"program": start, "permissions": wall}, answer: approveAll, raised: 1,
			says: "started: ", started: true},
		{name: "declared_no_wall", strand: "main", args: map[string]any{"program": start, "permissions": wall}, answer: approveAll,
			says: "started: ", started: true},
		{name: "sub_agent_declared", strand: "sub:main/helper-0123456789abcdef", wallMs: 120_000, args: map[string]any{"program": start, "permissions": wall}, answer: approveAll,
			code: job.CodeLifetimeRefused, says: "sub-agent"},
		{name: "sub_agent_undeclared", strand: "sub:main/helper-0123456789abcdef", wallMs: 120_000, args: map[string]any{"program": start}, answer: approveAll,
			says: "refused: " + string(job.CodeLifetimeRefused)},
		{name: "wall_s_not_zero", strand: "main", wallMs: 120_000, args: map[string]any{"program": start, "permissions": map[string]any{"wall_s": 60}}, answer: approveAll,
			code: tool.CodeInvalidArguments, says: "only 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newSession(t, nil)
			s.call.Base.WallMs = c.wallMs
			s.call.Strand = c.strand
			esc := &escalation{answer: c.answer}
			o, d := s.dispatchCtx(t, context.Background(), esc, c.args)
			if o.Code != c.code || !strings.Contains(o.Text, c.says) {
				t.Fatalf("got %q: %s; want %q saying %q", o.Code, o.Text, c.code, c.says)
			}
			if n := esc.raised.Load(); n != c.raised {
				t.Errorf("raised %d times, want %d", n, c.raised)
			}
			l, err := s.jobs.List(context.Background(), job.OwnerOf(s.call))
			if err != nil {
				t.Fatal(err)
			}
			if started := len(l.Jobs) == 1; started != c.started {
				t.Fatalf("jobs %+v, want started %v", l.Jobs, c.started)
			}
			if !c.started {
				return
			}
			r := l.Jobs[0]
			if r.Lifetime != job.LifetimeSession || !r.Deadline.IsZero() {
				t.Errorf("job %+v: want a session lifetime, no deadline", r)
			}
			want := Widening{State: GrantsNone}
			if c.wallMs > 0 {
				want = Widening{State: GrantsComposed, Grants: []sandbox.Grant{{Kind: sandbox.GrantWall}}, Asked: true}
			}
			if diff := cmp.Diff(want, d.Grants); diff != "" {
				t.Errorf("Details.Grants (-want +got):\n%s", diff)
			}
			if _, err := s.jobs.Kill(context.Background(), job.OwnerOf(s.call), r.ID); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestProgramRefusalsAreNeverRaised: a refusal a capability call meets
// while the program runs is answered to the program in band, even where
// the same call through bash would raise it (job.start under a session
// policy that does not give bash's scratch directory), and never reaches
// the escalation plane.
func TestProgramRefusalsAreNeverRaised(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	s.call.Base.WritableRoots = []string{s.ws}
	esc := &escalation{answer: approveAll}
	src := mainWith([]string{"cap/job", "cap/proc", "context", "fmt"}, `ctx := context.Background()
	if _, err := job.Start(ctx, "true", ""); err != nil {
		fmt.Println("job:", err.(*job.Error).Code)
	}
	if _, err := proc.Run(ctx, proc.Cmd{Argv: []string{"true"}}); err != nil {
		fmt.Println("proc:", err.(*proc.Error).Code)
	}`)
	o, _ := s.dispatchCtx(t, context.Background(), esc, map[string]any{"program": src})
	for _, want := range []string{"job: " + string(sandbox.DenialRequirementsNotCovered), "proc: " + string(sandbox.DenialRequirementsNotCovered)} {
		if !strings.Contains(o.Text, want) {
			t.Errorf("the answer lacks %q:\n%s", want, o.Text)
		}
	}
	if n := esc.raised.Load(); n != 0 {
		t.Errorf("a running program's refusals were raised %d times", n)
	}
	// The control: bash itself raises the same shortfall.
	bash := job.BashTool(s.jobs)
	c := *s.call
	c.RaiseRefusal = esc.raise
	bash.Run(context.Background(), &c, json.RawMessage(`{"command":"true","mode":"background"}`))
	if n := esc.raised.Load(); n != 1 {
		t.Errorf("bash raised %d times; the control expects once", n)
	}
}

// TestPermissionsInTheSurface: code_mode's schema takes bash's
// permissions (the same properties, the network enum) plus wall_s, and
// its description says where more access comes from.
func TestPermissionsInTheSurface(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	tl := s.eng.Tool()
	var schema struct {
		Properties map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(tl.Schema, &schema); err != nil {
		t.Fatal(err)
	}
	var bashSchema struct {
		Properties map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(job.BashTool(s.jobs).Schema, &bashSchema); err != nil {
		t.Fatal(err)
	}
	got, bash := schema.Properties["permissions"].Properties, bashSchema.Properties["permissions"].Properties
	if len(bash) == 0 || len(got) != len(bash)+1 || got["wall_s"] == nil {
		t.Fatalf("code_mode permissions %v; bash's %v", got, bash)
	}
	for k, v := range bash {
		if string(got[k]) != string(v) {
			t.Errorf("permissions.%s is %s in code_mode, %s in bash", k, got[k], v)
		}
	}
	if !strings.Contains(tl.Description, "permissions") {
		t.Error("the description does not say where more access comes from")
	}
}

// TestUngrantablePermissionsAreNotRaised: permissions no grant can cover
// (a writable root under a protected entry) are refused before the
// program starts without asking anyone.
func TestUngrantablePermissionsAreNotRaised(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	esc := &escalation{answer: approveAll}
	hooks := filepath.Join(s.ws, ".git", "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	o, d := s.dispatchCtx(t, context.Background(), esc, map[string]any{"program": mainWith([]string{"fmt"}, `fmt.Println("ran")`),
		"permissions": map[string]any{"writable_roots": []string{hooks}}})
	if !o.IsError || !strings.Contains(o.Text, "No approval can cover this") || d.Run != nil {
		t.Fatalf("%s: %s", o.Code, o.Text)
	}
	if n := esc.raised.Load(); n != 0 {
		t.Errorf("raised %d times", n)
	}
	if d.Grants.State != GrantsNone || d.Grants.Asked {
		t.Errorf("grants %+v", d.Grants)
	}
}

// swapPrograms are two programs one file holds in turn: the one read
// when the call is made writes "A" under dir, and the harmless-looking
// one written over it while the operator is asked writes "B".
func swapPrograms(dir string) (a, b string) {
	prog := func(mark string) string {
		return mainWith([]string{"cap/fs", "context", "fmt"}, `ctx := context.Background()
	// program `+mark+`
	if _, err := fs.Write(ctx, "`+dir+`/ran.txt", []byte("`+mark+`\n")); err != nil {
		fmt.Println("refused:", err.(*fs.Error).Code)
	}
	fmt.Println("`+mark+` ran")`)
	}
	return prog("A"), prog("B")
}

// TestRaisedRefusalNamesTheSnapshot: code_mode raises its permissions
// naming what runs, from the snapshot it read and built: a program_path
// file rewritten while the operator is asked is not what the refusal
// shows, nor what runs. The control is the file itself, which holds the
// other program by the time anyone could open it.
func TestRaisedRefusalNamesTheSnapshot(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	granted := outsideDir(t, s, "granted")
	a, b := swapPrograms(granted)
	file := filepath.Join(s.ws, "tools", "p.go")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(a), 0o644); err != nil {
		t.Fatal(err)
	}
	var onDisk []byte
	esc := &escalation{answer: func(r tool.RaisedRefusal) tool.Escalation {
		if err := os.WriteFile(file, []byte(b), 0o644); err != nil {
			t.Error(err)
		}
		onDisk, _ = os.ReadFile(file)
		return approveAll(r)
	}}
	o, _ := s.dispatchCtx(t, context.Background(), esc, map[string]any{"program_path": "tools/p.go", "permissions": map[string]any{"writable_roots": []string{granted}}})
	if o.IsError {
		t.Fatalf("%s: %s", o.Code, o.Text)
	}
	r := esc.last.Load()
	if r == nil || r.Subject == nil {
		t.Fatalf("the refusal names nothing it runs: %+v", r)
	}
	want := tool.Subject{Kind: tool.SubjectProgram, Text: a, Path: "tools/p.go"}
	if diff := cmp.Diff(want, *r.Subject); diff != "" {
		t.Errorf("the refusal's subject (-want +got):\n%s", diff)
	}
	if string(onDisk) != b || r.Subject.Text == string(onDisk) {
		t.Fatalf("control: the file does not hold the swapped program when asked")
	}
	if got, _ := os.ReadFile(filepath.Join(granted, "ran.txt")); string(got) != "A\n" || !strings.Contains(o.Text, "A ran") {
		t.Errorf("what ran is not what was shown: ran.txt %q\n%s", got, o.Text)
	}
}

// TestRaisedLongProgramIsCutWithItsDigest: an inline program too long
// for a question is raised whole, and described cut, saying where, with
// the digest of the whole.
func TestRaisedLongProgramIsCutWithItsDigest(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	granted := outsideDir(t, s, "granted")
	src, _ := swapPrograms(granted)
	src += strings.Repeat("// a comment that pads the program past what one question shows\n", 100)
	esc := &escalation{answer: decline}
	o, _ := s.dispatchCtx(t, context.Background(), esc, map[string]any{"program": src, "permissions": map[string]any{"writable_roots": []string{granted}}})
	if !o.IsError {
		t.Fatalf("a declined program ran: %s", o.Text)
	}
	r := esc.last.Load()
	if r == nil || r.Subject == nil || r.Subject.Text != src || r.Subject.Path != "" {
		t.Fatalf("the refusal does not carry the inline program: %+v", r)
	}
	d, ok := r.Describe(4 << 10)
	for _, w := range []string{"given inline:\n│ package main\n", "sha256 " + r.Subject.Digest(), fmt.Sprintf(" of %d bytes are shown", len(src))} {
		if !ok || !strings.Contains(d, w) {
			t.Errorf("the description lacks %q:\n%s", w, d)
		}
	}
}
