package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentloom/loom/agent"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// TestAnswerFitsTheOutcomeBound: the largest answer code_mode states it
// gives, from its own bounds (the stdout shown inline, the diagnostics,
// the vet refusal and its type check, the itemised call record and the artifacts, plus an
// allowance for the lines around them), fits tool.MaxOutcomeBytes, so
// Dispatch's structural bound never cuts it. A bound raised here without
// the outcome bound fails.
func TestAnswerFitsTheOutcomeBound(t *testing.T) {
	t.Parallel()
	// frame allows for an answer's headlines and notes; item for one
	// listed entry's key, state and JSON punctuation (as the root
	// package's TestBoundAboveEveryFamilysMaximum counts them).
	const frame, item = 16 << 10, 512
	n := blob.OverflowThreshold + maxDiagnosticBytes + maxVetErrorBytes + maxTypeCheckBytes +
		maxRecordedCalls*(maxCallSummaryBytes+item) + maxEmits*item + frame
	if n > tool.MaxOutcomeBytes {
		t.Errorf("code_mode answers up to %d bytes, over tool.MaxOutcomeBytes (%d)", n, tool.MaxOutcomeBytes)
	}
}

// maxSurfaceBytes bounds the code_mode tool's description and schema
// together on an Engine serving one seam: what the tool costs a model's
// context on every turn, the whole standard allowlist included
// (TestSurfaceBudget measures it).
const maxSurfaceBytes = 8 << 10

// TestSurfaceBudget: code_mode's description and schema together stay
// within maxSurfaceBytes, and the description carries what a model needs:
// the imports offered, the rendered API and a recipe.
func TestSurfaceBudget(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	tl := productionEngine(t, s, nil).Tool()
	if n := len(tl.Description) + len(tl.Schema); n > maxSurfaceBytes {
		t.Fatalf("code_mode costs %d bytes of description and schema; the budget is %d", n, maxSurfaceBytes)
	}
	for _, want := range []string{"cap/fs", "func fs.Read(", "strings", recipeSurvey, recipeCheck, "fs_read cap://", compilerGuidance} {
		if !strings.Contains(tl.Description, want) {
			t.Errorf("the description lacks %q", want)
		}
	}
	t.Logf("code_mode surface: %d bytes", len(tl.Description)+len(tl.Schema))
}

// productionEngine is an Engine over s's registry with the builder's
// zero value, as a host makes one: its description lists every package of
// StdPackages, where the test sessions' builders list e2eStd only. It
// builds nothing.
func productionEngine(t *testing.T, s *session, agency agent.Agency) *Engine {
	t.Helper()
	eng, err := New(Options{Registry: s.reg, Broker: s.eng.opts.Broker, Jobs: s.jobs, Agency: agency})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

// dispatch calls code_mode through a registry the way a host does.
func (s *session) dispatch(t *testing.T, args map[string]any) tool.Outcome {
	t.Helper()
	reg, err := tool.NewRegistry(s.eng.Tool())
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(args)
	return reg.Dispatch(context.Background(), s.call, ToolName, raw)
}

// TestRecipesInTheDescriptionRun: every recipe the description shows
// runs verbatim through the tool.
func TestRecipesInTheDescriptionRun(t *testing.T) {
	t.Parallel()
	for name, src := range map[string]string{"survey": recipeSurvey, "check": recipeCheck} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newSession(t, map[string]string{"a.go": "package a\n// TODO: x\n"})
			gitInit(t, s.ws)
			o := s.dispatch(t, map[string]any{"program": src})
			if o.IsError {
				t.Fatalf("%s: %s", o.Code, o.Text)
			}
			for _, want := range []string{"---\n", "calls: ", "sandbox: build: ", " | run: "} {
				if !strings.Contains(o.Text, want) {
					t.Errorf("the answer lacks %q:\n%s", want, o.Text)
				}
			}
		})
	}
}

// TestToolRefusals: each way a call can fail is in band, with its code
// and a sentence saying what to do.
func TestToolRefusals(t *testing.T) {
	t.Parallel()
	s := newSession(t, map[string]string{"prog.go": "package main\n\nfunc main() { println(\"from a file\") }\n"})
	cases := []struct {
		name string
		args map[string]any
		code tool.Code
		says string
	}{
		{"none", map[string]any{}, CodeNoProgram, "give the program"},
		{"both", map[string]any{"program": "x", "program_path": "prog.go"}, tool.CodeInvalidArguments, "not both"},
		{"missing_path", map[string]any{"program_path": "nope.go"}, tool.CodeNotFound, "program_path"},
		{"vet", map[string]any{"program": "package main\n\nimport \"os\"\n\nfunc main() { os.Exit(1) }\n"}, CodeVetRefused, "os"},
		{"build", map[string]any{"program": "package main\n\nimport \"cap/fs\"\n\nfunc main() { fs.ReadEverything() }\n"}, CodeBuildRejected, "fs_read cap://fs"},
		{"negative_within", map[string]any{"program": "package main\nfunc main() {}\n", "within_ms": -1}, tool.CodeInvalidArguments, "within_ms"},
		{"run_failed", map[string]any{"program": "package main\n\nfunc main() { panic(\"boom\") }\n"}, CodeRunFailed, "boom"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			o := s.dispatch(t, c.args)
			if !o.IsError || o.Code != c.code || !strings.Contains(o.Text, c.says) {
				t.Fatalf("code %q, want %q saying %q:\n%s", o.Code, c.code, c.says, o.Text)
			}
		})
	}
	o := s.dispatch(t, map[string]any{"program_path": "prog.go"})
	if o.IsError || !strings.HasPrefix(o.Text, "from a file\n") && !strings.Contains(o.Text, "printed nothing") {
		t.Fatalf("program_path: %s", o.Text)
	}
}

// TestNoToolchainIsARefusal: a host whose toolchain cannot be found gets
// toolchain_unavailable naming what to install, never a crash.
func TestNoToolchainIsARefusal(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	eng, err := New(Options{Registry: s.reg, Broker: s.call.Broker.(*broker.Broker), Builder: BuilderOptions{
		Toolchain: Toolchain{GOROOT: t.TempDir()}, CacheDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	s.eng = eng
	o := s.dispatch(t, map[string]any{"program": "package main\n\nfunc main() {}\n"})
	if !o.IsError || o.Code != CodeToolchainUnavailable || !strings.Contains(o.Text, "install Go") {
		t.Fatalf("%s: %s", o.Code, o.Text)
	}
}

// TestMissingRunLayerIsItsOwnRefusal: a run the broker refuses for a
// required layer is run_jail_unavailable naming the layer.
func TestMissingRunLayerIsItsOwnRefusal(t *testing.T) {
	t.Parallel()
	err := runRefusal(sandbox.NewDenial(sandbox.DenialLayerRequired, "seccomp unavailable", &sandbox.MissingLayer{Layer: sandbox.LayerSeccomp, Reason: "EINVAL"}))
	var ce *CapError
	if !errors.As(err, &ce) || ce.Code != CodeRunJailUnavailable || !strings.Contains(ce.Message, sandbox.LayerSeccomp) {
		t.Fatalf("%v", err)
	}
	o := render(&Execution{}, err, nil, 0)
	if o.Code != CodeRunJailUnavailable {
		t.Fatalf("the tool renders it as %s", o.Code)
	}
}

// TestSeamOffersOnlyWhatTheRegistryAuthorizes: without bash and the job
// tools, a program is offered neither cap/proc nor cap/job: the
// description leaves them out and vetting refuses them.
func TestSeamOffersOnlyWhatTheRegistryAuthorizes(t *testing.T) {
	t.Parallel()
	reg, err := tool.NewRegistry(tool.FileTools()...)
	if err != nil {
		t.Fatal(err)
	}
	b := broker.New(broker.Options{HelperPath: jailHelper.Path(t)})
	t.Cleanup(func() { b.Close() })
	eng, err := New(Options{Registry: reg, Broker: b})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(eng.Seams()[0].Packages, " "); got != "cap/fs cap/search cap/kv cap/report cap/execution" {
		t.Fatalf("seam packages %s", got)
	}
	desc := eng.Tool().Description
	if strings.Contains(desc, "cap/proc") || strings.Contains(desc, "cap/job") || strings.Contains(desc, recipeCheck) {
		t.Errorf("the description offers what no tool authorizes:\n%s", desc)
	}
	_, err = eng.Vet([]byte("package main\n\nimport \"cap/proc\"\n\nfunc main() { _ = proc.Run }\n"))
	var ve *VetError
	if !errors.As(err, &ve) || ve.Violations[0].Rule != ruleImportNotAllowed {
		t.Fatalf("cap/proc vetted without bash: %v", err)
	}
}
