package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/tool"
)

// maxTwoSeamSurfaceBytes is maxSurfaceBytes for an Engine serving both
// seams, whose description adds the orchestration seam's API and its
// example (TestTwoSeamDescription measures it).
const maxTwoSeamSurfaceBytes = 9 << 10

// reviewArea is what a scripted child reviews: its prompt less "Review ".
func reviewArea(t agent.Turn) string { return strings.TrimPrefix(t.Prompt, "Review ") }

// scriptedReviewer is the scripted Runner of the orchestration tests: each
// child writes a result note through the Agency under its own coordinates
// ({area, issues}; "billing" breaks the contract with a string) and
// answers with a one-line report.
func scriptedReviewer(agency *agent.Reference) agent.RunnerFunc {
	return func(ctx context.Context, t agent.Turn) (string, error) {
		area := reviewArea(t)
		var result any = map[string]any{"area": area, "issues": len(area) % 3}
		if area == "billing" {
			result = map[string]any{"area": area, "issues": "two"}
		}
		value, _ := json.Marshal(result)
		c := agent.Caller{Strand: t.Strand, OpID: t.Operation, StepID: "child-step"}
		if _, err := agency.Note(ctx, c, agent.ResultNoteKey, value); err != nil {
			return "", err
		}
		return "Reviewed " + area, nil
	}
}

// newAgentSession is newSession whose registry also holds the agent tools
// over a reference Agency running children with the scripted reviewer,
// governing it, and whose Engine has that Agency (so it serves the
// workspace and the orchestration seams) and spawnCeiling.
func newAgentSession(t testing.TB, opts agent.Options, spawnCeiling int) (*session, *agent.Reference) {
	t.Helper()
	s := newSession(t, nil)
	var agency *agent.Reference
	agency = agent.NewAgency(agent.RunnerFunc(func(ctx context.Context, tu agent.Turn) (string, error) {
		return scriptedReviewer(agency)(ctx, tu)
	}), opts)
	t.Cleanup(func() { agency.Close() })
	for _, tl := range agent.Tools(agency) {
		if err := s.reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	agency.Govern(s.reg)
	dir, b := e2eShared(t)
	eng, err := New(Options{Registry: s.reg, Broker: b, Jobs: s.jobs, Agency: agency, SpawnCeiling: spawnCeiling,
		Builder: BuilderOptions{CacheDir: dir, StdPackages: e2eStd}})
	if err != nil {
		t.Fatal(err)
	}
	s.eng = eng
	return s, agency
}

// execOn runs src through every stage on seam.
func (s *session) execOn(t *testing.T, seam, src string) *RunResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	x, err := s.eng.Execute(ctx, s.call, Request{Source: []byte(src), Seam: seam})
	if err != nil {
		t.Fatalf("the program did not run: %v\n%s", err, src)
	}
	if x.Run.Code != "" {
		t.Fatalf("the run failed (%s, exit %d):\nstdout: %s\nstderr: %s", x.Run.Code, x.Run.Exit, x.Run.Stdout, x.Run.Stderr)
	}
	return x.Run
}

// TestSeamsServed: an Engine with an Agency serves the workspace seam
// (the default, cap/notes added) and the orchestration seam; without one
// it serves the workspace seam alone, with neither cap/notes nor
// cap/strand; without agent_spawn registered, no orchestration seam.
func TestSeamsServed(t *testing.T) {
	t.Parallel()
	s, agency := newAgentSession(t, agent.Options{}, 0)
	var names []string
	for _, sm := range s.eng.Seams() {
		names = append(names, sm.Name+"="+strings.Join(sm.Packages, ","))
	}
	if got, want := strings.Join(names, " "), "workspace=cap/fs,cap/search,cap/proc,cap/kv,cap/report,cap/job,cap/notes,cap/execution orchestration=cap/strand,cap/notes,cap/report,cap/execution"; got != want {
		t.Errorf("seams %s, want %s", got, want)
	}
	bare := newSession(t, nil)
	if got := bare.eng.Seams(); len(got) != 1 || got[0].Name != WorkspaceSeamName || strings.Contains(strings.Join(got[0].Packages, ","), "cap/notes") {
		t.Errorf("without an Agency: %v", got)
	}
	notesOnly, err := tool.NewRegistry(append(tool.FileTools(), agent.NoteTool(agency), agent.NotesTool(agency))...)
	if err != nil {
		t.Fatal(err)
	}
	_, b := e2eShared(t)
	eng, err := New(Options{Registry: notesOnly, Broker: b, Agency: agency})
	if err != nil {
		t.Fatal(err)
	}
	if got := eng.Seams(); len(got) != 1 || !strings.Contains(strings.Join(got[0].Packages, ","), "cap/notes") {
		t.Errorf("with the note tools and no agent_spawn: %v", got)
	}
}

// TestSeamArgument: with two seams the schema takes seam (an enum of the
// served names) and an absent one is the default; an unknown seam is
// refused naming those served; with one seam the schema has no seam, and
// no refusal suggests it.
func TestSeamArgument(t *testing.T) {
	t.Parallel()
	s, _ := newAgentSession(t, agent.Options{}, 0)
	tl := s.eng.Tool()
	if !strings.Contains(string(tl.Schema), `"seam"`) || !strings.Contains(string(tl.Schema), "workspace (the default), orchestration") ||
		!strings.Contains(string(tl.Schema), `"enum":["workspace","orchestration"]`) {
		t.Errorf("a two-seam schema lacks seam:\n%s", tl.Schema)
	}
	// The schema's enum refuses an unknown seam, naming those served; the
	// Engine's own API refuses it under CodeUnknownSeam.
	o := s.dispatch(t, map[string]any{"program": "package main\n\nfunc main() {}\n", "seam": "network"})
	if o.Code != tool.CodeInvalidArguments || !strings.Contains(o.Text, "workspace") || !strings.Contains(o.Text, "orchestration") {
		t.Errorf("unknown seam: %s %s", o.Code, o.Text)
	}
	if _, err := s.eng.seamNamed("network"); codeOf(err) != CodeUnknownSeam || !strings.Contains(err.Error(), `"orchestration"`) {
		t.Errorf("unknown seam through the API: %v", err)
	}
	// Absent, the seam is the workspace: a program importing cap/strand is
	// refused there, naming it.
	o = s.dispatch(t, map[string]any{"program": "package main\n\nimport \"cap/strand\"\n\nfunc main() { _ = strand.Spawn }\n"})
	if o.Code != CodeVetRefused || !strings.Contains(o.Text, "workspace seam") {
		t.Errorf("default seam: %s %s", o.Code, o.Text)
	}
	bare := newSession(t, nil)
	if sc := string(bare.eng.Tool().Schema); strings.Contains(sc, "seam") {
		t.Errorf("a one-seam schema offers seam:\n%s", sc)
	}
	if o := bare.dispatch(t, map[string]any{"program": "package main\n\nfunc main() {}\n", "seam": "workspace"}); !o.IsError {
		t.Errorf("a one-seam engine took a seam argument: %s", o.Text)
	}
	// What a mode takes, as a refusal lists it, is what the schema takes.
	if o := bare.dispatch(t, map[string]any{"program": "package main\n\nfunc main() {}\n", "handle": "x"}); o.Code != tool.CodeInvalidArguments || strings.Contains(o.Text, "seam") {
		t.Errorf("a one-seam engine's refusal of handle at run: %s %s", o.Code, o.Text)
	}
	if o := s.dispatch(t, map[string]any{"program": "package main\n\nfunc main() {}\n", "handle": "x"}); o.Code != tool.CodeInvalidArguments || !strings.Contains(o.Text, "seam") {
		t.Errorf("a two-seam engine's refusal of handle at run does not name seam: %s %s", o.Code, o.Text)
	}
}

// TestOrchestrationSeamVetsOutWorkspacePackages: a program on the
// orchestration seam importing cap/fs is refused by vetting, which names
// the seam; the same program on the workspace seam vets (the control).
func TestOrchestrationSeamVetsOutWorkspacePackages(t *testing.T) {
	t.Parallel()
	s, _ := newAgentSession(t, agent.Options{}, 0)
	src := []byte("package main\n\nimport (\n\t\"context\"\n\n\t\"cap/fs\"\n)\n\nfunc main() { fs.Read(context.Background(), \"x\") }\n")
	_, err := s.eng.VetOn(src, OrchestrationSeamName)
	var ve *VetError
	if !errors.As(err, &ve) || ve.Violations[0].Rule != ruleImportNotAllowed || !strings.Contains(ve.Error(), "orchestration seam") {
		t.Fatalf("cap/fs on the orchestration seam: %v", err)
	}
	if _, err := s.eng.VetOn(src, WorkspaceSeamName); err != nil {
		t.Fatalf("the control did not vet: %v", err)
	}
}

// TestRouterServesOnlyTheSeamsPackages: whatever cap_call a binary sends,
// the router serves only its seam's packages: fs.read from an
// orchestration program is unknown_capability naming what that seam
// offers, and so is strand.spawn from a workspace one; the same calls on
// the other seam pass the check (the control: they fail later, for other
// reasons, or succeed).
func TestRouterServesOnlyTheSeamsPackages(t *testing.T) {
	t.Parallel()
	s, _ := newAgentSession(t, agent.Options{}, 0)
	ctx := context.Background()
	orch := s.eng.newSeamHost(s.call, OrchestrationSeam(), nil)
	_, err := orch.route(ctx, "fs.read", map[string]any{"path": "x"})
	var ce *CapError
	if !errors.As(err, &ce) || ce.Code != codeUnknownCapability || !strings.Contains(ce.Message, "orchestration seam") || !strings.Contains(ce.Message, "strand.spawn") || strings.Contains(ce.Message, "fs.read,") {
		t.Errorf("fs.read on the orchestration seam: %v", err)
	}
	ws := s.eng.newSeamHost(s.call, WorkspaceSeam(), nil)
	if _, err := ws.route(ctx, "strand.spawn", map[string]any{"purpose": "p", "prompt": "p"}); !errors.As(err, &ce) || ce.Code != codeUnknownCapability {
		t.Errorf("strand.spawn on the workspace seam: %v", err)
	}
	if _, err := ws.route(ctx, "fs.read", map[string]any{"path": "x"}); !errors.As(err, &ce) || ce.Code != tool.CodeNotFound {
		t.Errorf("the control, fs.read on the workspace seam: %v", err)
	}
	if _, err := orch.route(ctx, "notes.list", map[string]any{}); err != nil {
		t.Errorf("the control, notes.list on the orchestration seam: %v", err)
	}
	none := s.eng.newSeamHost(s.call, Seam{}, nil)
	if _, err := none.route(ctx, "kv.get", map[string]any{"key": "k"}); !errors.As(err, &ce) || ce.Code != codeUnknownCapability {
		t.Errorf("a binary of no seam was served kv.get: %v", err)
	}
}

// TestTwoSeamDescription: the description of an Engine serving both
// seams stays within maxTwoSeamSurfaceBytes with its schema, states the shared
// imports once and each seam's extra ones, and shows RecipeFanOut.
func TestTwoSeamDescription(t *testing.T) {
	t.Parallel()
	s, agency := newAgentSession(t, agent.Options{}, 0)
	tl := productionEngine(t, s, agency).Tool()
	n := len(tl.Description) + len(tl.Schema)
	t.Logf("two-seam code_mode surface: %d bytes of %d", n, maxTwoSeamSurfaceBytes)
	if n > maxTwoSeamSurfaceBytes {
		t.Fatalf("code_mode costs %d bytes; the budget is %d", n, maxTwoSeamSurfaceBytes)
	}
	for _, want := range []string{
		"Imports on every seam: cap/report, cap/notes, cap/execution, the standard packages bufio bytes cmp compress/{bzip2,",
		`Seam "workspace" (the default) adds cap/fs, cap/search, cap/proc, cap/kv, cap/job.`,
		`Seam "orchestration" adds cap/strand.`,
		"func strand.Spawn(", "func notes.Put(", RecipeFanOut,
		fmt.Sprintf("%d spawns", defaultSpawnCeiling), fmt.Sprintf("%d note writes", maxNoteWrites),
	} {
		if !strings.Contains(tl.Description, want) {
			t.Errorf("the description lacks %q:\n%s", want, tl.Description)
		}
	}
	if c := strings.Count(tl.Description, "import \"cap/report\""); c != 1 {
		t.Errorf("cap/report's API is rendered %d times", c)
	}
}

// TestFanOutRecipeRuns: RecipeFanOut, verbatim, through the tool on the
// orchestration seam with a scripted Runner: three distinct children are
// spawned with the contract, joined by one wait, and reported (billing's
// mismatch included) in the output and an artifact. Run again under the
// same call coordinates, the same source reconciles onto the same three
// children; under another call it mints three new ones.
func TestFanOutRecipeRuns(t *testing.T) {
	t.Parallel()
	s, agency := newAgentSession(t, agent.Options{}, 0)
	ctx := context.Background()
	run := func() string {
		t.Helper()
		o := s.dispatch(t, map[string]any{"program": RecipeFanOut, "seam": OrchestrationSeamName})
		if o.IsError {
			t.Fatalf("%s: %s", o.Code, o.Text)
		}
		return o.Text
	}
	text := run()
	for _, want := range []string{
		"review-auth-", ": completed, result valid {\"area\":\"auth\",\"issues\":1}",
		"review-billing-", "result mismatched {\"area\":\"billing\",\"issues\":\"two\"} issues is a string, want integer",
		"artifact: reviews.txt", "calls: 5 (5 ok)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the answer lacks %q:\n%s", want, text)
		}
	}
	if n := strings.Count(text, ": completed, result "); n != 3 {
		t.Errorf("%d children reported, want 3:\n%s", n, text)
	}
	roster := func() []string {
		peers, err := agency.Roster(ctx, agent.Caller{Strand: "main"})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range peers {
			names = append(names, p.Strand)
		}
		return names
	}
	first := roster()
	if len(first) != 3 {
		t.Fatalf("roster after one run: %v", first)
	}
	run()
	if again := roster(); strings.Join(again, " ") != strings.Join(first, " ") {
		t.Errorf("the replayed execution minted new children: %v, first %v", again, first)
	}
	s.call = s.call.At(s.call.OpID, s.call.StepID, s.call.SourceIndex+1)
	run()
	if other := roster(); len(other) != 6 {
		t.Errorf("another call site reconciled onto the first children: %v", other)
	}
}

// TestSpawnCeiling: a spawn loop is admitted defaultSpawnCeiling times
// (or the configured SpawnCeiling), then refused in band with
// spawn_ceiling naming the number; a strand.map afterwards reports the
// same refusal as each item's outcome.
func TestSpawnCeiling(t *testing.T) {
	t.Parallel()
	src := mainWith([]string{"context", "errors", "fmt", "strings", "cap/strand"}, `ctx := context.Background()
	n := 0
	for i := 0; i < 40; i++ {
		_, err := strand.Spawn(ctx, fmt.Sprint("task ", i), "Review x", strand.Options{})
		var e *strand.Error
		if errors.As(err, &e) {
			fmt.Printf("%d admitted; then %s: %s\n", n, e.Code, e.Message)
			break
		}
		if err != nil {
			fmt.Println("unexpected:", err)
			return
		}
		n++
	}
	res, err := strand.Map(ctx, []strand.Item{{"a", "Review a"}, {"b", "Review b"}}, strand.Options{}, 0)
	var codes []string
	for _, r := range res {
		var e *strand.Error
		if errors.As(r.Err, &e) {
			codes = append(codes, e.Code)
		} else {
			codes = append(codes, r.Outcome.State)
		}
	}
	fmt.Println("map:", err, strings.Join(codes, " "))`)
	for _, ceiling := range []int{0, 5} {
		t.Run(fmt.Sprint("ceiling=", ceiling), func(t *testing.T) {
			t.Parallel()
			s, _ := newAgentSession(t, agent.Options{FanOut: 64, SessionStrands: 128}, ceiling)
			res := s.execOn(t, OrchestrationSeamName, src)
			want := ceiling
			if want == 0 {
				want = defaultSpawnCeiling
			}
			for _, w := range []string{
				fmt.Sprintf("%d admitted; then %s: strand.spawn reached its ceiling of %d spawns", want, codeSpawnCeiling, want),
				"waiting frees no slot",
				fmt.Sprintf("map: <nil> %s %s", codeSpawnCeiling, codeSpawnCeiling),
			} {
				if !strings.Contains(res.Stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, res.Stdout)
				}
			}
		})
	}
}

// TestNoteCeilings: note writes (strand.note and notes.put, one tally)
// are admitted maxNoteWrites times and reads (strand.notes, notes.get,
// notes.list, one tally) maxNoteReads times, then refused in band with
// admission_ceiling naming the capability and the number.
func TestNoteCeilings(t *testing.T) {
	t.Parallel()
	s, _ := newAgentSession(t, agent.Options{}, 0)
	res := s.execOn(t, OrchestrationSeamName, mainWith([]string{"context", "errors", "fmt", "cap/notes", "cap/strand"}, `ctx := context.Background()
	code := func(err error) string {
		var e *notes.Error
		if errors.As(err, &e) {
			return e.Code + ": " + e.Message
		}
		return fmt.Sprint(err)
	}
	w := 0
	for ; w < 300; w++ {
		var err error
		if w%2 == 0 {
			err = strand.Note(ctx, "k", []byte("1"))
		} else {
			_, err = notes.Put(ctx, "k", []byte("1"))
		}
		if err != nil {
			fmt.Printf("writes %d; then %s\n", w, code(err))
			break
		}
	}
	r := 0
	for ; r < 100; r++ {
		var err error
		switch r % 3 {
		case 0:
			_, _, err = strand.Notes(ctx, "")
		case 1:
			_, _, err = notes.Get(ctx, "agent/main/k")
		default:
			_, _, err = notes.List(ctx, "agent/main/")
		}
		if err != nil {
			fmt.Printf("reads %d; then %s\n", r, code(err))
			break
		}
	}
	v, found, err := notes.Get(ctx, "agent/main/k")
	fmt.Printf("get after the ceiling: %q %v %v\n", v, found, code(err))`))
	for _, w := range []string{
		fmt.Sprintf("writes %d; then %s: ", maxNoteWrites, codeAdmissionCeiling),
		fmt.Sprintf("ceiling of %d note writes (strand.note and notes.put together)", maxNoteWrites),
		fmt.Sprintf("reads %d; then %s: ", maxNoteReads, codeAdmissionCeiling),
		fmt.Sprintf("ceiling of %d note reads", maxNoteReads),
		"waiting frees no slot",
		"get after the ceiling: \"\" false " + string(codeAdmissionCeiling),
	} {
		if !strings.Contains(res.Stdout, w) {
			t.Errorf("stdout lacks %q:\n%s", w, res.Stdout)
		}
	}
}

// TestStrandGate: a strand that does not hold agent_spawn has
// strand.spawn and strand.map refused tool_not_held, while the notes it
// may write still work in the same program; holding every tool, the same
// program spawns (the control).
func TestStrandGate(t *testing.T) {
	t.Parallel()
	src := mainWith([]string{"context", "errors", "fmt", "cap/notes", "cap/strand"}, `ctx := context.Background()
	code := func(err error) string {
		var e *strand.Error
		if errors.As(err, &e) {
			return e.Code
		}
		if err != nil {
			return err.Error()
		}
		return "ok"
	}
	_, err := strand.Spawn(ctx, "p", "Review p", strand.Options{})
	fmt.Println("spawn", code(err))
	res, err := strand.Map(ctx, []strand.Item{{"q", "Review q"}}, strand.Options{}, 0)
	fmt.Println("map", code(err), len(res))
	_, err = notes.Put(ctx, "k", []byte("true"))
	fmt.Println("put", code(err))`)
	for _, held := range []bool{true, false} {
		t.Run(fmt.Sprint("held=", held), func(t *testing.T) {
			t.Parallel()
			s, _ := newAgentSession(t, agent.Options{}, 0)
			if !held {
				s.reg.SetHolds(func(_ context.Context, _, name string) bool { return name != agent.SpawnToolName })
			}
			res := s.execOn(t, OrchestrationSeamName, src)
			want := "spawn ok\nmap ok 1\nput ok\n"
			if !held {
				want = fmt.Sprintf("spawn %s\nmap %s 0\nput ok\n", tool.CodeToolNotHeld, tool.CodeToolNotHeld)
			}
			if res.Stdout != want {
				t.Errorf("stdout:\n%s\nwant:\n%s", res.Stdout, want)
			}
		})
	}
}

// TestWorkspaceCallFromAnOrchestrationBinary: a binary the host runs on
// the orchestration seam that sends fs.read (built here from a workspace
// program, as a hostile binary would send it) has the call refused by the
// router, unknown_capability naming the orchestration seam; the same
// binary on the workspace seam reads the file (the control).
func TestWorkspaceCallFromAnOrchestrationBinary(t *testing.T) {
	t.Parallel()
	s, _ := newAgentSession(t, agent.Options{}, 0)
	if err := os.WriteFile(filepath.Join(s.ws, "r.txt"), []byte("from the workspace"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := s.eng.VetOn([]byte(mainWith([]string{"context", "fmt", "cap/fs"}, `f, err := fs.Read(context.Background(), "r.txt")
	fmt.Printf("%s|%v", f.Content, err)`)), WorkspaceSeamName)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin, err := s.eng.Build(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		seam Seam
		want string
	}{
		{WorkspaceSeam(), "from the workspace|<nil>"},
		{OrchestrationSeam(), `|fs.read: unknown_capability: no capability "fs.read" on the orchestration seam; it offers report.emit, execution.ready`},
	} {
		b := *bin
		b.Seam = c.seam
		res, err := s.eng.Run(ctx, s.call, &b, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(res.Stdout, c.want) {
			t.Errorf("on the %s seam: %q, want %q", c.seam.Name, res.Stdout, c.want)
		}
	}
}

// TestStrandSendAndRoster: a program spawns a child, joins it, sends the
// idle child a message (a new run under a new handle) and joins that,
// lists its roster (one child, two runs), and has a wait on a handle that
// is not its descendant's refused in band with the Agency's code.
func TestStrandSendAndRoster(t *testing.T) {
	t.Parallel()
	s, _ := newAgentSession(t, agent.Options{}, 0)
	res := s.execOn(t, OrchestrationSeamName, mainWith([]string{"context", "errors", "fmt", "time", "cap/strand"}, `ctx := context.Background()
	c, err := strand.Spawn(ctx, "review auth", "Review auth", strand.Options{})
	if err != nil {
		fmt.Println("spawn:", err)
		return
	}
	outs, err := strand.Wait(ctx, []string{c.Handle}, 20*time.Second)
	fmt.Println("first:", outs[0].State, outs[0].Report, err)
	h, err := strand.Send(ctx, c.Strand, "Review auth")
	fmt.Println("sent, new handle:", h != c.Handle && h != "", err)
	outs, err = strand.Wait(ctx, []string{h}, 20*time.Second)
	fmt.Println("second:", outs[0].State, outs[0].Report, err)
	peers, err := strand.Roster(ctx)
	fmt.Println("roster:", len(peers), peers[0].Strand == c.Strand, peers[0].Runs, peers[0].Relation, err)
	_, err = strand.Wait(ctx, []string{"sub:other/x-0000000000000000#run-1"}, 0)
	var e *strand.Error
	errors.As(err, &e)
	fmt.Println("forged:", e.Code)`))
	want := "first: completed Reviewed auth <nil>\nsent, new handle: true <nil>\nsecond: completed Reviewed auth <nil>\nroster: 1 true 2 child <nil>\nforged: " + string(agent.CodeUnknownHandle) + "\n"
	if res.Stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", res.Stdout, want)
	}
}

// TestStrandMapReportsEachItem: strand.map reports every item's outcome
// in order: with the Agency's fan-out at 1 and the first child still
// running, the second item is that fan-out refusal, while the first is
// its child's (not yet ready) outcome; a map of more than maxMapItems
// items (which one wait must join: at most agent.MaxWaitHandles) is
// refused whole. The host has no broker, no job plane and no process
// runner: strand.* reaches none of them.
func TestStrandMapReportsEachItem(t *testing.T) {
	t.Parallel()
	if maxMapItems > agent.MaxWaitHandles {
		t.Fatalf("maxMapItems %d exceeds what one wait joins (%d)", maxMapItems, agent.MaxWaitHandles)
	}
	release := make(chan struct{})
	agency := agent.NewAgency(agent.RunnerFunc(func(ctx context.Context, _ agent.Turn) (string, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "done", nil
	}), agent.Options{FanOut: 1})
	t.Cleanup(func() { close(release); agency.Close() })
	reg, err := tool.NewRegistry(agent.Tools(agency)...)
	if err != nil {
		t.Fatal(err)
	}
	h := &seamHost{seam: OrchestrationSeam(), call: &tool.Call{Strand: "main", OpID: "op", StepID: "step"}, reg: reg, agency: agency}
	items := []any{map[string]any{"purpose": "one", "prompt": "p"}, map[string]any{"purpose": "two", "prompt": "p"}}
	res, err := h.route(context.Background(), "strand.map", map[string]any{"items": items, "wait_ms": int64(0)})
	if err != nil {
		t.Fatal(err)
	}
	got := res.(map[string]any)["items"].([]any)
	first, second := got[0].(map[string]any), got[1].(map[string]any)
	if first["code"] != "" || first["state"] != string(agent.Running) || first["purpose"] != "one" {
		t.Errorf("first item: %v", first)
	}
	if second["code"] != string(agent.CodeFanOut) || second["purpose"] != "two" || second["message"] == "" {
		t.Errorf("second item: %v", second)
	}
	many := make([]any, maxMapItems+1)
	for i := range many {
		many[i] = map[string]any{"purpose": "x", "prompt": "p"}
	}
	var ce *CapError
	if _, err := h.route(context.Background(), "strand.map", map[string]any{"items": many}); !errors.As(err, &ce) || ce.Code != codeInvalidCapabilityArguments {
		t.Errorf("%d items: %v", len(many), err)
	}
}

// TestNoteValuesAreBounded: a program's note value past
// agent.MaxProgramNoteBytes (1 MiB, not agent_note's 16 KiB), or not
// JSON, is refused before the Agency is asked and counts against no
// ceiling; one at the bound is written.
func TestNoteValuesAreBounded(t *testing.T) {
	t.Parallel()
	agency := agent.NewAgency(agent.RunnerFunc(func(context.Context, agent.Turn) (string, error) { return "", nil }), agent.Options{})
	t.Cleanup(func() { agency.Close() })
	reg, err := tool.NewRegistry(agent.Tools(agency)...)
	if err != nil {
		t.Fatal(err)
	}
	h := &seamHost{seam: WorkspaceSeam(), call: &tool.Call{Strand: "main", OpID: "op", StepID: "step"}, reg: reg, agency: agency}
	at := []byte(`"` + strings.Repeat("x", agent.MaxProgramNoteBytes-2) + `"`)
	var ce *CapError
	for _, c := range []struct {
		key   string
		value []byte
		code  tool.Code
	}{
		{"big", append(at, ' '), agent.CodeNoteTooLarge},
		{"prose", []byte("not json"), codeInvalidCapabilityArguments},
		{"at", at, ""},
	} {
		_, err := h.route(context.Background(), "notes.put", map[string]any{"key": c.key, "value": c.value})
		switch {
		case c.code == "" && err != nil:
			t.Errorf("%s: %v", c.key, err)
		case c.code != "" && (!errors.As(err, &ce) || ce.Code != c.code):
			t.Errorf("%s: %v, want %s", c.key, err, c.code)
		}
	}
	if n := h.adm.n[admitNoteWrite]; n != 1 {
		t.Errorf("%d writes admitted, want 1", n)
	}
	// A relative key given to notes.get is refused naming the full key
	// it stands for, and spends no read.
	_, err = h.route(context.Background(), "notes.get", map[string]any{"key": "at"})
	if !errors.As(err, &ce) || ce.Code != agent.CodeBadNoteKey || !strings.Contains(ce.Message, `"agent/main/at"`) {
		t.Errorf("notes.get of a relative key: %v", err)
	}
	if n := h.adm.n[admitNoteRead]; n != 0 {
		t.Errorf("%d reads admitted, want 0", n)
	}
}

// TestPointersNameTheAgentPackages: a build error or a failed call in
// cap/strand or cap/notes points at that package's documented API; a
// ceiling, which reading the API does not lift, points nowhere.
func TestPointersNameTheAgentPackages(t *testing.T) {
	t.Parallel()
	if got := pointerFromText("./main.go:9:9: undefined: strand.Spwn"); got != pointer("strand") {
		t.Errorf("build error pointer %q", got)
	}
	failed := func(cap string, code tool.Code) CallRecord {
		return CallRecord{Calls: []CallEntry{{Cap: cap, Status: CallFailed, Code: code}}}
	}
	for _, c := range []struct {
		rec  CallRecord
		want string
	}{
		{failed("notes.put", agent.CodeNoteExists), pointer("notes")},
		{failed("strand.wait", agent.CodeUnknownHandle), pointer("strand")},
		{failed("strand.spawn", codeSpawnCeiling), ""},
		{failed("notes.get", codeAdmissionCeiling), ""},
	} {
		if got := pointerFromRecord(c.rec); got != c.want {
			t.Errorf("%s %s: pointer %q, want %q", c.rec.Calls[0].Cap, c.rec.Calls[0].Code, got, c.want)
		}
	}
}

// TestGivenSeamsWithoutAnAgency: an Engine with no Agency serves nothing
// over one: a given seam offering cap/strand is refused at New, and
// cap/notes is left out of one that lists it (WorkspaceSeam() does).
func TestGivenSeamsWithoutAnAgency(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	if _, err := New(Options{Registry: s.reg, Broker: s.eng.opts.Broker, Seams: []Seam{WorkspaceSeam(), OrchestrationSeam()}}); err == nil {
		t.Error("New served the orchestration seam without an Agency")
	}
	eng, err := New(Options{Registry: s.reg, Broker: s.eng.opts.Broker, Seams: []Seam{WorkspaceSeam()}})
	if err != nil {
		t.Fatal(err)
	}
	if got := eng.Seams()[0].Packages; slices.Contains(got, "cap/notes") || !slices.Contains(got, "cap/fs") {
		t.Errorf("the given workspace seam without an Agency offers %v", got)
	}
}

// TestSendCeiling: strand.send is admitted maxSends times in one
// execution, whatever became of each send (here every one names a strand
// that does not exist), and the next is refused admission_ceiling naming
// the capability and the number; a fresh execution (its own tally) is
// admitted again.
func TestSendCeiling(t *testing.T) {
	t.Parallel()
	agency := agent.NewAgency(agent.RunnerFunc(func(context.Context, agent.Turn) (string, error) { return "done", nil }), agent.Options{})
	t.Cleanup(func() { agency.Close() })
	reg, err := tool.NewRegistry(agent.Tools(agency)...)
	if err != nil {
		t.Fatal(err)
	}
	newHost := func() *seamHost {
		return &seamHost{seam: OrchestrationSeam(), call: &tool.Call{Strand: "main", OpID: "op", StepID: "step"}, reg: reg, agency: agency}
	}
	send := func(h *seamHost) error {
		_, err := h.route(context.Background(), "strand.send", map[string]any{"to": "sub:main/nobody-0000000000000000", "message": "hi"})
		return err
	}
	h := newHost()
	for i := range maxSends {
		var ce *CapError
		if err := send(h); errors.As(err, &ce) && ce.Code == codeAdmissionCeiling {
			t.Fatalf("send %d refused at the ceiling: %v", i, err)
		}
	}
	var ce *CapError
	err = send(h)
	if !errors.As(err, &ce) || ce.Code != codeAdmissionCeiling {
		t.Fatalf("send %d: %v, want %s", maxSends, err, codeAdmissionCeiling)
	}
	for _, want := range []string{"strand.send", fmt.Sprintf("ceiling of %d calls", maxSends), "waiting frees no slot"} {
		if !strings.Contains(ce.Message, want) {
			t.Errorf("the refusal lacks %q: %s", want, ce.Message)
		}
	}
	if err := send(newHost()); errors.As(err, &ce) && ce.Code == codeAdmissionCeiling {
		t.Errorf("a fresh execution's first send was refused at the ceiling: %v", err)
	}
}

// TestAgentBoundsFollowTheOfferedPackages: the description states the
// strand and notes ceilings only for the packages a served seam offers:
// both with cap/strand, the notes ones alone with cap/notes alone, and
// neither when no seam offers either.
func TestAgentBoundsFollowTheOfferedPackages(t *testing.T) {
	t.Parallel()
	agency := agent.NewAgency(agent.RunnerFunc(func(context.Context, agent.Turn) (string, error) { return "done", nil }), agent.Options{MaxWait: 20 * time.Second})
	t.Cleanup(func() { agency.Close() })
	spawns := fmt.Sprintf("%d spawns", defaultSpawnCeiling)
	notes := fmt.Sprintf("%d note writes", maxNoteWrites)
	for _, tc := range []struct {
		name     string
		packages []string
		want     []string
		absent   []string
	}{
		// The Agency's shorter wait bound is the one stated.
		{"strand", []string{"cap/strand", "cap/notes", "cap/report"}, []string{spawns, notes, "agent_ tool", "a wait at most 20 s"}, nil},
		{"notes alone", []string{"cap/notes", "cap/report"}, []string{notes, "agent_note or agent_notes"}, []string{spawns}},
		{"neither", []string{"cap/fs", "cap/report"}, nil, []string{spawns, notes, "agent_"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Engine{opts: Options{Seams: []Seam{{Name: "s", Packages: tc.packages}}, Agency: agency}}
			got := e.agentBoundsText()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %q: %q", w, got)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(got, a) {
					t.Errorf("states %q though no seam offers it: %q", a, got)
				}
			}
		})
	}
}
