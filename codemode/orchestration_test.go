package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/tool"
)

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
	x, err := s.eng.ExecuteOn(ctx, s.call, seam, []byte(src), 0)
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
	if got, want := strings.Join(names, " "), "workspace=cap/fs,cap/search,cap/proc,cap/kv,cap/report,cap/job,cap/notes orchestration=cap/strand,cap/notes,cap/report"; got != want {
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
// refused naming those served; with one seam the schema has no seam.
func TestSeamArgument(t *testing.T) {
	t.Parallel()
	s, _ := newAgentSession(t, agent.Options{}, 0)
	tl := s.eng.Tool()
	if !strings.Contains(string(tl.Schema), `"seam"`) || !strings.Contains(string(tl.Schema), "workspace (default), orchestration") {
		t.Errorf("a two-seam schema lacks seam:\n%s", tl.Schema)
	}
	o := s.dispatch(t, map[string]any{"program": "package main\n\nfunc main() {}\n", "seam": "network"})
	if o.Code != CodeUnknownSeam || !strings.Contains(o.Text, `"workspace"`) || !strings.Contains(o.Text, `"orchestration"`) {
		t.Errorf("unknown seam: %s %s", o.Code, o.Text)
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
	if !errors.As(err, &ve) || ve.Violations[0].Rule != RuleImportNotAllowed || !strings.Contains(ve.Error(), "orchestration seam") {
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
	orch := s.eng.newSeamHost(s.call, OrchestrationSeam())
	_, err := orch.route(ctx, "fs.read", map[string]any{"path": "x"})
	var ce *CapError
	if !errors.As(err, &ce) || ce.Code != CodeUnknownCapability || !strings.Contains(ce.Message, "orchestration seam") || !strings.Contains(ce.Message, "strand.spawn") || strings.Contains(ce.Message, "fs.read,") {
		t.Errorf("fs.read on the orchestration seam: %v", err)
	}
	ws := s.eng.newSeamHost(s.call, WorkspaceSeam())
	if _, err := ws.route(ctx, "strand.spawn", map[string]any{"purpose": "p", "prompt": "p"}); !errors.As(err, &ce) || ce.Code != CodeUnknownCapability {
		t.Errorf("strand.spawn on the workspace seam: %v", err)
	}
	if _, err := ws.route(ctx, "fs.read", map[string]any{"path": "x"}); !errors.As(err, &ce) || ce.Code != tool.CodeNotFound {
		t.Errorf("the control, fs.read on the workspace seam: %v", err)
	}
	if _, err := orch.route(ctx, "notes.list", map[string]any{}); err != nil {
		t.Errorf("the control, notes.list on the orchestration seam: %v", err)
	}
	none := s.eng.newSeamHost(s.call, Seam{})
	if _, err := none.route(ctx, "kv.get", map[string]any{"key": "k"}); !errors.As(err, &ce) || ce.Code != CodeUnknownCapability {
		t.Errorf("a binary of no seam was served kv.get: %v", err)
	}
}

// TestTwoSeamDescription: the description of an Engine serving both
// seams stays within MaxSurfaceBytes with its schema, states the shared
// imports once and each seam's extra ones, and shows RecipeFanOut.
func TestTwoSeamDescription(t *testing.T) {
	t.Parallel()
	s, _ := newAgentSession(t, agent.Options{}, 0)
	tl := s.eng.Tool()
	n := len(tl.Description) + len(tl.Schema)
	t.Logf("two-seam code_mode surface: %d bytes of %d", n, MaxSurfaceBytes)
	if n > MaxSurfaceBytes {
		t.Fatalf("code_mode costs %d bytes; the budget is %d", n, MaxSurfaceBytes)
	}
	for _, want := range []string{
		"Imports on every seam: cap/report, cap/notes, the standard packages",
		`Seam "workspace" (the default) adds cap/fs, cap/search, cap/proc, cap/kv, cap/job.`,
		`Seam "orchestration" adds cap/strand.`,
		"func strand.Spawn(", "func notes.Put(", RecipeFanOut, RecipeSurvey,
		fmt.Sprintf("%d spawns", DefaultSpawnCeiling), fmt.Sprintf("%d note writes", MaxNoteWrites),
	} {
		if !strings.Contains(tl.Description, want) {
			t.Errorf("the description lacks %q:\n%s", want, tl.Description)
		}
	}
	if c := strings.Count(tl.Description, "import \"cap/report\""); c != 1 {
		t.Errorf("cap/report's API is rendered %d times", c)
	}
}
