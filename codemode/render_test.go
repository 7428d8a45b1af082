package codemode

import (
	"strings"
	"testing"

	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

func enforced(layers ...sandbox.Layer) *sandbox.Enforcement {
	var e sandbox.Enforcement
	for _, l := range layers {
		e.Add(l)
	}
	return &e
}

var (
	nsLayer       = sandbox.Layer{Name: sandbox.LayerNamespaces, Applied: true, Params: "user,mount,net"}
	landlockLayer = sandbox.Layer{Name: sandbox.LayerLandlock, Applied: true, Detail: "abi 6"}
	emptyRoot     = sandbox.Layer{Name: sandbox.LayerEmptyRoot, Applied: true}
	cgroupSkipped = sandbox.Layer{Name: sandbox.LayerCgroup, Reason: "EPERM: no delegated cgroup"}
)

// TestSandboxLine: the enforcement line names layers only (no detail,
// params or reason), keeps DEGRADED whenever a report is degraded,
// merges two stages only when both have reports that read the same, and
// never merges a stage without one.
func TestSandboxLine(t *testing.T) {
	t.Parallel()
	degradedNoSkip := enforced(nsLayer)
	degradedNoSkip.Degraded = true
	cases := []struct {
		name       string
		build, run stageReport
		want       string
	}{
		{"same", stageReport{enf: enforced(nsLayer, landlockLayer)}, stageReport{enf: enforced(nsLayer, landlockLayer)},
			"sandbox: build and run: namespaces, landlock applied"},
		{"differ", stageReport{enf: enforced(nsLayer, landlockLayer)}, stageReport{enf: enforced(nsLayer, emptyRoot)},
			"sandbox: build: namespaces, landlock applied | run: namespaces, empty_root applied"},
		{"same_by_name_only", stageReport{enf: enforced(nsLayer, landlockLayer)},
			stageReport{enf: enforced(sandbox.Layer{Name: sandbox.LayerNamespaces, Applied: true}, sandbox.Layer{Name: sandbox.LayerLandlock, Applied: true, Detail: "abi 4"})},
			"sandbox: build and run: namespaces, landlock applied"},
		{"degraded_merged", stageReport{enf: enforced(nsLayer, cgroupSkipped)}, stageReport{enf: enforced(nsLayer, cgroupSkipped)},
			"sandbox: build and run: namespaces applied; DEGRADED, skipped: cgroup (reasons in details)"},
		{"degraded_run_only", stageReport{enf: enforced(nsLayer)}, stageReport{enf: enforced(nsLayer, cgroupSkipped)},
			"sandbox: build: namespaces applied | run: namespaces applied; DEGRADED, skipped: cgroup (reasons in details)"},
		{"degraded_without_skipped", stageReport{enf: degradedNoSkip}, stageReport{enf: enforced(nsLayer)},
			"sandbox: build: namespaces applied; DEGRADED | run: namespaces applied (reasons in details)"},
		{"nothing_applied", stageReport{enf: enforced()}, stageReport{none: runNotStaged},
			"sandbox: build: nothing applied | run: did not start"},
		{"cached", stageReport{none: buildCached}, stageReport{enf: enforced(emptyRoot)},
			"sandbox: build: cached, no build ran | run: empty_root applied"},
		{"vetted", stageReport{none: buildVetted}, stageReport{none: runNotStaged},
			"sandbox: build: not run (vetting refused the program) | run: did not start"},
		// Control: two stages without reports that say the same are not
		// merged (a merge would read as a report).
		{"unreported_never_merged", stageReport{none: runNotStaged}, stageReport{none: runNotStaged},
			"sandbox: build: did not start | run: did not start"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := sandboxLine(c.build, c.run)
			if got != c.want {
				t.Fatalf("got  %q\nwant %q", got, c.want)
			}
			for _, leak := range []string{"EPERM", "abi", "user,mount"} {
				if strings.Contains(got, leak) {
					t.Errorf("the line carries %q, which belongs to the full report: %s", leak, got)
				}
			}
		})
	}
}

// TestRenderCarriesTheEnforcementLine: every outcome, each refusal
// included, ends with the enforcement line saying what each stage had.
func TestRenderCarriesTheEnforcementLine(t *testing.T) {
	t.Parallel()
	build := enforced(nsLayer, landlockLayer)
	run := enforced(nsLayer, emptyRoot)
	cached := &Execution{Binary: &Binary{Cached: true}}
	built := &Execution{Binary: &Binary{Enforcement: *build}}
	cases := []struct {
		name string
		x    *Execution
		err  error
		code tool.Code
		want string
	}{
		{"vet", &Execution{}, &VetError{Violations: []Violation{{Rule: ruleImportNotAllowed, Construct: `import "os"`, Line: 3, Column: 8}}},
			CodeVetRefused, "sandbox: build: not run (vetting refused the program) | run: did not start"},
		{"build", &Execution{}, &BuildError{Diagnostics: "main.go:1:1: boom\n", Enforcement: *build},
			CodeBuildRejected, "sandbox: build: namespaces, landlock applied | run: did not start"},
		{"builder", &Execution{}, &BuilderError{Code: CodeToolchainUnavailable, Reason: "no go"},
			CodeToolchainUnavailable, "sandbox: build: " + buildIncomplete + " | run: did not start"},
		{"run_refused_cached", cached, &CapError{Code: CodeRunJailUnavailable, Message: "seccomp"},
			CodeRunJailUnavailable, "sandbox: build: cached, no build ran | run: did not start"},
		{"run_refused_built", built, &CapError{Code: CodeRunJailUnavailable, Message: "seccomp"},
			CodeRunJailUnavailable, "sandbox: build: namespaces, landlock applied | run: did not start"},
		{"ran", &Execution{Binary: &Binary{Enforcement: *build}, Run: &RunResult{Enforcement: *run}}, nil,
			"", "sandbox: build: namespaces, landlock applied | run: namespaces, empty_root applied"},
		{"ran_failed", &Execution{Binary: &Binary{Cached: true}, Run: &RunResult{Code: CodeRunFailed, Exit: 2, Enforcement: *run}}, nil,
			CodeRunFailed, "sandbox: build: cached, no build ran | run: namespaces, empty_root applied"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := render(c.x, c.err, nil, 0)
			if o.Code != c.code {
				t.Fatalf("code %q, want %q", o.Code, c.code)
			}
			if !strings.Contains(o.Text, c.want+"\n") && !strings.HasSuffix(o.Text, c.want) {
				t.Fatalf("the answer lacks %q:\n%s", c.want, o.Text)
			}
			if n := strings.Count(o.Text, "sandbox: "); n != 1 {
				t.Errorf("%d enforcement lines:\n%s", n, o.Text)
			}
		})
	}
}

// TestRenderLastFailedCommand: the last failed proc.run command is in
// the details whenever the run kept one, and in the text when the
// program failed.
func TestRenderLastFailedCommand(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		run      RunResult
		details  *FailedCommand
		textLine bool
	}{
		{"failed_run", RunResult{Code: CodeRunFailed, Exit: 1, lastFailure: "git status", lastStderr: "fatal: not a git repository\n"},
			&FailedCommand{Command: "git status", StderrTail: "fatal: not a git repository\n"}, true},
		{"deadline", RunResult{Code: CodeWallDeadline, Exit: -1, lastFailure: "sleep 100"},
			&FailedCommand{Command: "sleep 100"}, true},
		{"completed", RunResult{lastFailure: "false"}, &FailedCommand{Command: "false"}, false},
		{"none", RunResult{Code: CodeRunFailed, Exit: 1}, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := c.run
			o := render(&Execution{Binary: &Binary{Cached: true}, Run: &run}, nil, nil, 0)
			d, ok := o.Details.(Details)
			if !ok {
				t.Fatalf("details %T", o.Details)
			}
			switch {
			case (d.LastFailedCommand == nil) != (c.details == nil):
				t.Fatalf("last_failed_command %+v, want %+v", d.LastFailedCommand, c.details)
			case c.details != nil && *d.LastFailedCommand != *c.details:
				t.Fatalf("last_failed_command %+v, want %+v", *d.LastFailedCommand, *c.details)
			}
			if got := strings.Contains(o.Text, "last failing command: "); got != c.textLine {
				t.Fatalf("text line %v, want %v:\n%s", got, c.textLine, o.Text)
			}
		})
	}
}

// TestRenderSuggestsWhereANameIs: a build error naming a capability name
// another package exports carries the hint, from the program's own
// imports; a name no package has carries none.
func TestRenderSuggestsWhereANameIs(t *testing.T) {
	t.Parallel()
	src := []byte("package main\n\nimport p \"cap/proc\"\n\nfunc main() { p.Start(nil, nil) }\n")
	prog, err := vet(src, WorkspaceSeam())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		diag, want string
	}{
		{"main.go:5:17: undefined: p.Start\n", "hint (line 5): Start is in cap/job, not cap/proc"},
		{"main.go:5:17: undefined: p.Rn\n", "did you mean p.Run?"},
		{"main.go:5:17: undefined: p.Zzzzzz\n", ""},
	} {
		o := render(&Execution{Program: prog}, &BuildError{Diagnostics: c.diag}, nil, 0)
		if c.want == "" {
			if strings.Contains(o.Text, "hint") {
				t.Errorf("%q: a hint where none applies:\n%s", c.diag, o.Text)
			}
			continue
		}
		if !strings.Contains(o.Text, c.want) {
			t.Errorf("%q: the answer lacks %q:\n%s", c.diag, c.want, o.Text)
		}
	}
}

// TestRenderPointsOnceBeforeTheTrailer: the pointer at a package's API
// comes once, right before the trailer (the grants and enforcement
// lines, nothing else after it), whether a
// build failed or a run had a failed call; a call a policy refused (a
// protected path, a ceiling) gets none, since the API docs do not lift
// it, and the first call the docs help with is the one pointed at.
func TestRenderPointsOnceBeforeTheTrailer(t *testing.T) {
	t.Parallel()
	run := enforced(nsLayer, emptyRoot)
	failedCalls := func(calls ...CallEntry) *Execution {
		return &Execution{Binary: &Binary{Cached: true}, Run: &RunResult{Code: CodeRunFailed, Exit: 1, Enforcement: *run, Record: CallRecord{Total: len(calls), Failed: len(calls), Calls: calls}}}
	}
	call := func(cap string, code tool.Code) CallEntry { return CallEntry{Cap: cap, Status: CallFailed, Code: code} }
	for _, c := range []struct {
		name string
		x    *Execution
		err  error
		want string
	}{
		{"build", &Execution{}, &BuildError{Diagnostics: "main.go:5:9: undefined: fs.Reed\n", Enforcement: *enforced(nsLayer)}, pointer("fs")},
		{"misuse", failedCalls(call("fs.read", tool.CodeInvalidArguments)), nil, pointer("fs")},
		{"protected", failedCalls(call("fs.write", tool.CodeProtectedPath)), nil, ""},
		{"outside", failedCalls(call("fs.read", tool.CodeOutsideRoots)), nil, ""},
		{"ceiling", failedCalls(call("proc.run", codeAdmissionCeiling)), nil, ""},
		{"policy then misuse", failedCalls(call("fs.write", tool.CodeProtectedPath), call("proc.run", tool.CodeInvalidArguments)), nil, pointer("proc")},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := render(c.x, c.err, nil, 0)
			if c.want == "" {
				if strings.Contains(o.Text, "fs_read cap://") {
					t.Fatalf("a policy refusal points at the API:\n%s", o.Text)
				}
				return
			}
			if n := strings.Count(o.Text, "fs_read cap://"); n != 1 {
				t.Fatalf("%d pointers, want 1:\n%s", n, o.Text)
			}
			p := strings.Index(o.Text, c.want)
			if p < 0 {
				t.Fatalf("no pointer %q:\n%s", c.want, o.Text)
			}
			// After the pointer's line: the trailer, and nothing else.
			rest := strings.Split(strings.TrimSpace(o.Text[p+len(c.want):]), "\n")
			sawSandbox := false
			for _, l := range rest {
				sawSandbox = sawSandbox || strings.HasPrefix(l, "sandbox: ")
				if !strings.HasPrefix(l, "sandbox: ") && !strings.HasPrefix(l, "grants: ") {
					t.Fatalf("%q after the pointer:\n%s", l, o.Text)
				}
			}
			if !sawSandbox || len(rest) > 2 {
				t.Fatalf("the pointer is not right before the trailer:\n%s", o.Text)
			}
		})
	}
}
