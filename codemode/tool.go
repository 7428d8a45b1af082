package codemode

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
	"github.com/google/jsonschema-go/jsonschema"
)

// ToolName is the code mode tool's name.
const ToolName = "code_mode"

type codeModeArgs struct {
	Program     string        `json:"program,omitempty" jsonschema:"the whole program: one Go file, package main"`
	ProgramPath string        `json:"program_path,omitempty" jsonschema:"a workspace file holding it, instead"`
	WithinMs    withinMillis  `json:"within_ms,omitempty"`
	Mode        executionMode `json:"mode,omitempty"`
	Handle      string        `json:"handle,omitempty" jsonschema:"what launch answered"`
	Endpoint    string        `json:"endpoint,omitempty" jsonschema:"send's endpoint, default \"default\""`
	Input       string        `json:"input,omitempty" jsonschema:"send's text"`
	WaitMs      joinMillis    `json:"wait_ms,omitempty"`
	Permissions *Permissions  `json:"permissions,omitempty" jsonschema:"as bash's, for the program's calls only"`
	// seam is the seam argument of an Engine serving several (see
	// seamArgs); "" is the default.
	seam string
}

type withinMillis int64

// Details is the Details of a code_mode outcome that got as far as a
// build: what each stage did.
type Details struct {
	// Exit is the program's exit status; absent when it did not run.
	Exit *int `json:"exit,omitempty"`
	// StdoutBytes counts what the program printed; Overflow is set when
	// it spilled to a blob.
	StdoutBytes int64          `json:"stdout_bytes"`
	Overflow    *blob.Overflow `json:"overflow,omitempty"`
	// Record is the program's capability calls; nil when it did not run,
	// and for a join.
	Record *CallRecord `json:"record,omitempty"`
	// Artifacts are what report.emit minted.
	Artifacts []Artifact `json:"artifacts,omitempty"`
	// Edits are the repairs made so the program would build.
	Edits []Repair `json:"edits,omitempty"`
	// Cached says the binary was kept from an identical earlier program.
	Cached bool `json:"cached,omitempty"`
	// Build and Run are the two stages' full enforcement reports (Build
	// is nil for a cached binary, Run when the program did not start).
	Build *sandbox.Enforcement `json:"build,omitempty"`
	Run   *sandbox.Enforcement `json:"run,omitempty"`
	// WaitedMs is the time spent waiting for the toolchain's warm-up,
	// not counted against within_ms; BuildMs and RunMs the stages'.
	WaitedMs int64 `json:"waited_ms,omitempty"`
	BuildMs  int64 `json:"build_ms"`
	RunMs    int64 `json:"run_ms,omitempty"`
	// Fault says why the channel was ended (CodeChannelFault); "" when
	// it was not.
	Fault string `json:"fault,omitempty"`
	// Grants is which grants the program's capability calls composed, or
	// which way none did: beside the enforcement reports, never inside.
	Grants Widening `json:"grants"`
	// LastFailedCommand is the program's last proc.run command that
	// exited non-zero or timed out; nil when none did or it did not run.
	LastFailedCommand *FailedCommand `json:"last_failed_command,omitempty"`
}

// FailedCommand is a proc.run command that exited non-zero or timed out:
// its argv joined by spaces (at most 160 bytes, then "…") and the last
// 2 KiB of its stderr.
type FailedCommand struct {
	Command    string `json:"command"`
	StderrTail string `json:"stderr_tail,omitempty"`
}

// Tool returns the code_mode tool: run one program through vet, build
// and run on the calling strand's authority. ReplayNever (a program may
// write and run commands) and Exclusive (it is a batch of its own).
// An Engine serving more than one seam takes a `seam` argument; one
// serving one seam has no such argument in its schema.
func (e *Engine) Tool() tool.Tool {
	t := tool.Tool{
		Name:          ToolName,
		Description:   e.description(),
		PromptSnippet: "code_mode: run one Go program that does a whole batch of reads, searches, edits and commands",
		Replay:        tool.ReplayNever,
		Mode:          tool.Exclusive,
	}
	schemas := append(append(executionModeSchemas(), job.PermissionsSchemas()...), tool.TypeSchema{Type: reflect.TypeFor[withinMillis](), Schema: &jsonschema.Schema{
		Type: "integer", Description: fmt.Sprintf("the run's wall deadline, default %d, at most %d", defaultWithin.Milliseconds(), maxWithin.Milliseconds()),
	}})
	if len(e.opts.Seams) == 1 {
		return tool.Typed(t, e.runTool, schemas...)
	}
	return tool.Typed(t, e.runSeamTool, append(schemas, e.seamSchema())...)
}

// lspPointer stands for cap/lsp's API in the description, which its
// listing (about 2 KiB) would take past the surface budget: what it does
// and where its API is.
const lspPointer = `import "cap/lsp"` + "\n" +
	"lsp.Definition, References, Implementation, Hover, IncomingCalls, OutgoingCalls (at lsp.At(path, line, ident) or lsp.Symbol(\"pkg.Type.Method\")), DocumentSymbols, WorkspaceSymbols, Diagnostics(paths...), CodeActions and Rename (previews, write nothing), Apply(edit) (all or nothing): read its API with fs_read cap://lsp.\n"

func (e *Engine) description() string {
	union := e.unionSeam()
	withLSP := slices.Contains(union.Packages, "cap/lsp")
	union.Packages = slices.DeleteFunc(union.Packages, func(p string) bool { return p == "cap/lsp" || isMCPPath(p) })
	api, err := describeSeam(embeddedPrelude(), union)
	if withLSP && err == nil {
		api += "\n" + lspPointer
	}
	if err == nil {
		api += e.mcp.description()
	}
	if err != nil {
		api = "(the API could not be rendered: " + err.Error() + "; read it with fs_read cap://)"
	}
	var b strings.Builder
	b.WriteString("Run one Go program instead of many tool calls: a batch of reads, searches, edits and checks, or the first round of an investigation. " +
		"One file, package main with func main(); vetted, built offline and run in a jail with no files, network or processes of its own. " +
		"It reaches the workspace only through the cap packages, on your authority (writes need fs_write or fs_edit" + e.commandsClause() + "; ask for more with permissions, approved once before it starts). ")
	fmt.Fprintf(&b, "Its stdout is the result (past %d KiB: head, tail and where the rest is kept; past %d MiB of output it is stopped); a panic fails showing stderr (println writes there). ", blob.OverflowThreshold>>10, tool.MaxCommandOutputBytes>>20)
	fmt.Fprintf(&b, "Calls are safe from goroutines (at most %d unanswered), each ends within %d s, the run within within_ms. ", maxCallsInFlight, int(maxCallTimeout.Seconds()))
	b.WriteString(modeDescription())
	b.WriteString("A failed call is a *<pkg>.Error: switch on its Code. ")
	b.WriteString(compilerGuidance)
	b.WriteString(e.boundsText())
	b.WriteString(e.agentBoundsText())
	fmt.Fprintf(&b, "Source at most %d KiB. Time zones need import _ \"time/tzdata\". In the API below ctx is a context.Context; fs_read cap:// shows each package's docs.\n", maxSourceBytes>>10)
	std := e.opts.Builder.StdPackages
	if std == nil {
		std = StdPackages()
	}
	b.WriteString(e.importsText(std))
	b.WriteString(api)
	b.WriteString("\n" + e.examplesText())
	return b.String()
}

// compilerGuidance is the description's sentence on failures: what the
// build repairs itself, and how to repair the rest.
const compilerGuidance = "Unused imports, variables and labels are repaired. " +
	"On a compile error fix the named lines, keep the rest; on a run-time failure fix and rerun it, don't move its checks to other tools. "

func (e *Engine) runTool(ctx context.Context, c *tool.Call, a codeModeArgs) tool.Outcome {
	if o, answered := e.interact(ctx, c, a); answered {
		return o
	}
	src, path, o := programSource(c, a)
	if o != nil {
		return *o
	}
	within, notes, bad := millisArg("within_ms", int64(a.WithinMs), maxWithin)
	if bad != nil {
		return *bad
	}
	r := Request{Source: src, SourcePath: path, Seam: a.seam, Within: within, Permissions: a.Permissions}
	if a.Mode == modeLaunch {
		return e.launch(ctx, c, r, notes)
	}
	start := time.Now()
	x, err := e.Execute(ctx, c, r)
	e.checkRefusal(ctx, err)
	return render(x, err, notes, time.Since(start))
}

// millisArg reads the millisecond argument name: negative is refused,
// past max it is clamped to max with the note saying so, and 0 stays 0
// (the caller's default).
func millisArg(name string, ms int64, max time.Duration) (time.Duration, []string, *tool.Outcome) {
	if ms < 0 {
		o := tool.Fail(tool.CodeInvalidArguments, fmt.Sprintf("%s must not be negative (got %d)", name, ms))
		return 0, nil, &o
	}
	if ms > max.Milliseconds() {
		return max, []string{"note: " + tool.ClampNote(name, ms, max.Milliseconds())}, nil
	}
	return time.Duration(ms) * time.Millisecond, nil, nil
}

// programSource is the program the call names: inline, or a workspace
// file read once as fs_read reads one, with the path it was read from
// ("" when inline). What it returns is the snapshot vetted, built, shown
// to an operator asked to approve permissions, and run.
func programSource(c *tool.Call, a codeModeArgs) ([]byte, string, *tool.Outcome) {
	refuse := func(code tool.Code, text string) ([]byte, string, *tool.Outcome) {
		o := tool.Fail(code, text)
		return nil, "", &o
	}
	switch {
	case a.Program != "" && a.ProgramPath != "":
		return refuse(tool.CodeInvalidArguments, "give the program either inline (program) or as a workspace file (program_path), not both")
	case a.Program != "":
		return []byte(a.Program), "", nil
	case a.ProgramPath != "":
		f, err := c.ReadFile(a.ProgramPath)
		var fe *tool.FileError
		if errors.As(err, &fe) {
			return refuse(fe.Code, "program_path: "+fe.Message)
		}
		if len(f.Content) > maxSourceBytes {
			return refuse(CodeVetRefused, fmt.Sprintf("program_path %s is %d bytes; a program is at most %d", f.Path, len(f.Content), maxSourceBytes))
		}
		return f.Content, f.Path, nil
	}
	return refuse(CodeNoProgram, "give the program inline (program: one Go file, package main with func main()) or as a workspace file (program_path)")
}

// render turns an execution into the tool's outcome. Every outcome, a
// refusal at any stage included, ends with its trailer: the enforcement
// line (sandboxLine) and the grants line (a run's last line; on a
// refusal it comes before the enforcement line, and only when grants
// were asked for). The pointer at a capability package's API, when the
// failure is one its docs help with, comes once, right before the
// trailer.
func render(x *Execution, err error, notes []string, took time.Duration) tool.Outcome {
	var d Details
	var b strings.Builder
	for _, n := range notes {
		b.WriteString(n + "\n")
	}
	if x != nil {
		d.Grants = x.Widening
	}
	build := stageReport{none: buildIncomplete}
	if x != nil && x.Binary != nil {
		bin := x.Binary
		d.Edits, d.Cached, d.WaitedMs = bin.Edits, bin.Cached, bin.Waited.Milliseconds()
		build.none = buildCached
		if !bin.Cached {
			enf := bin.Enforcement
			d.Build = &enf
		}
	}
	if x != nil && x.Run != nil && x.Run.lastFailure != "" {
		d.LastFailedCommand = &FailedCommand{Command: x.Run.lastFailure, StderrTail: x.Run.lastStderr}
	}
	if err != nil {
		code := stageCode(err)
		ptr := ""
		var be *BuildError
		var ve *VetError
		switch {
		case errors.As(err, &be):
			enf := be.Enforcement
			d.Build = &enf
			b.WriteString("program did not compile, so nothing ran (build_rejected); the toolchain said:\n" + be.Diagnostics + "\n")
			if x != nil && x.Program != nil {
				for _, s := range suggestions(be.Diagnostics, programImports(x.Program.file), x.Program.Seam.Packages) {
					b.WriteString(s + "\n")
				}
			}
			ptr = pointerFromText(be.Diagnostics)
		case errors.As(err, &ve):
			build.none = buildVetted
			b.WriteString(strings.TrimRight(err.Error(), "\n") + "\n")
		default:
			b.WriteString(strings.TrimRight(err.Error(), "\n") + "\n")
		}
		writePointer(&b, ptr)
		if x != nil && x.Widening.State != GrantsNone {
			b.WriteString(x.Widening.String() + "\n")
		}
		build.enf = d.Build
		b.WriteString(sandboxLine(build, stageReport{none: runNotStaged}))
		return failed(code, &b, d)
	}
	r := x.Run
	exit := r.Exit
	d.Exit, d.StdoutBytes, d.Overflow, d.Record, d.Artifacts, d.Fault = &exit, r.StdoutBytes, r.Overflow, &r.Record, r.Artifacts, r.Fault
	if x.joined {
		d.Record = nil
	}
	enf := r.Enforcement
	d.Run = &enf
	d.RunMs, d.BuildMs = r.Duration.Milliseconds(), max(took-r.Duration-time.Duration(d.WaitedMs)*time.Millisecond, 0).Milliseconds()
	if r.Code != "" {
		// A failed run says so first, then what it printed.
		b.WriteString(failureText(r) + "\n---\n")
	}
	if r.Stdout != "" {
		b.WriteString(r.Stdout)
		if !strings.HasSuffix(r.Stdout, "\n") {
			b.WriteString("\n")
		}
	} else {
		b.WriteString("(the program printed nothing)\n")
	}
	b.WriteString("---\n")
	if d.WaitedMs > 0 {
		fmt.Fprintf(&b, "waited %d ms for the toolchain's one-time warm-up (not counted against within_ms)\n", d.WaitedMs)
	}
	if len(d.Edits) > 0 {
		b.WriteString("repaired before building: " + repairsText(d.Edits) + "\n")
	}
	for _, a := range r.Artifacts {
		fmt.Fprintf(&b, "artifact: %s (%d bytes) at %s\n", a.Name, a.Bytes, a.Path)
	}
	if !x.joined {
		fmt.Fprintf(&b, "%s\n", recordLine(r.Record))
	}
	writePointer(&b, pointerFromRecord(r.Record))
	build.enf = d.Build
	b.WriteString(sandboxLine(build, stageReport{enf: d.Run}) + "\n")
	b.WriteString(x.Widening.String() + "\n")
	if r.Code == "" {
		return tool.Outcome{Text: b.String(), Details: d}
	}
	return failed(r.Code, &b, d)
}

// failureText says how a failed run ended: the cause, the stderr's head
// and tail, and the last proc.run command that failed.
func failureText(r *RunResult) string {
	var b strings.Builder
	switch {
	case r.OutputLimited:
		fmt.Fprintf(&b, "the program wrote more than its output bound (stdout and stderr together) and was stopped; print less, or keep a large result with report.Emit")
	case r.Code == CodeRunFailed:
		fmt.Fprintf(&b, "the program failed (exit %d)", r.Exit)
	case r.Code == CodeWallDeadline:
		fmt.Fprintf(&b, "the program was still running at its wall deadline and was killed; what it printed is below. Give it a larger within_ms (at most %d) or do less per run", maxWithin.Milliseconds())
	case r.Code == CodeChannelFault:
		b.WriteString("the program's capability channel faulted, ending it: " + r.Fault)
	case r.Code == CodeRunCancelled:
		b.WriteString("the run was cancelled (by mode cancel, or by the host ending the session or the call)")
	default:
		b.WriteString("the run failed: " + string(r.Code))
	}
	if r.Stderr != "" {
		b.WriteString("; stderr:\n" + strings.TrimRight(r.Stderr, "\n"))
	}
	if r.lastFailure != "" {
		b.WriteString("\nlast failing command: " + r.lastFailure)
		if r.lastStderr != "" {
			b.WriteString("\n" + strings.TrimRight(r.lastStderr, "\n"))
		}
	}
	return b.String()
}

func failed(code tool.Code, b *strings.Builder, d Details) tool.Outcome {
	o := tool.Fail(code, strings.TrimRight(b.String(), "\n"))
	o.Details = d
	return o
}

func repairsText(rs []Repair) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("line %d %s %s", r.Line, r.Kind, r.Name)
	}
	return strings.Join(parts, "; ")
}

func recordLine(r CallRecord) string {
	s := fmt.Sprintf("calls: %d", r.Total)
	var parts []string
	for _, p := range []struct {
		n    int
		name string
	}{{r.OK, "ok"}, {r.Failed, "failed"}, {r.Cancelled, "cancelled"}, {r.Unsettled, "unsettled"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.name))
		}
	}
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}

// Why a stage has no enforcement report, as sandboxLine says it.
const (
	buildCached = "cached, no build ran"
	buildVetted = "not run (vetting refused the program)"
	// buildIncomplete: refused before the build, or the build did not
	// finish (a toolchain or jail failure, a cancel).
	buildIncomplete = "no report (no build finished)"
	runNotStaged    = "did not start"
	runByJoin       = "shown by join"
)

// stageReport is one jailed stage for sandboxLine: its report, or why it
// has none.
type stageReport struct {
	enf  *sandbox.Enforcement
	none string
}

// sandboxLine is the compact, model-facing enforcement line of both
// stages, on every result: each report's layers by name only (applied,
// then, when degraded, "DEGRADED" and the skipped ones; Detail, Params and
// reasons stay in the full reports of Details). Two reports that read the
// same are stated once ("sandbox: build and run: ..."). A stage without a
// report says why in its own words and is never merged, so the line never
// claims a jail that was not applied.
func sandboxLine(build, run stageReport) string {
	b, r := build.text(), run.text()
	if build.enf != nil && run.enf != nil && b == r {
		return "sandbox: build and run: " + b + degradedHint(build.enf)
	}
	hint := degradedHint(build.enf)
	if hint == "" {
		hint = degradedHint(run.enf)
	}
	return "sandbox: build: " + b + " | run: " + r + hint
}

func (s stageReport) text() string {
	if s.enf == nil {
		return s.none
	}
	return layerNames(*s.enf)
}

// degradedHint points at the full report when e is degraded.
func degradedHint(e *sandbox.Enforcement) string {
	if e != nil && e.Degraded {
		return " (reasons in details)"
	}
	return ""
}

// layerNames renders e by layer name only: "a, b applied", then
// "; DEGRADED" and ", skipped: c, d" when it is degraded.
func layerNames(e sandbox.Enforcement) string {
	var applied, skipped []string
	for _, l := range e.Layers {
		if l.Applied {
			applied = append(applied, l.Name)
		} else {
			skipped = append(skipped, l.Name)
		}
	}
	s := "nothing applied"
	if len(applied) > 0 {
		s = strings.Join(applied, ", ") + " applied"
	}
	if e.Degraded || len(skipped) > 0 {
		s += "; DEGRADED"
		if len(skipped) > 0 {
			s += ", skipped: " + strings.Join(skipped, ", ")
		}
	}
	return s
}

// capPackageRef matches a qualified exported name in a compiler
// diagnostic ("undefined: fs.ReadFile").
var capPackageRef = regexp.MustCompile(`\b([a-z][a-z0-9]*)\.[A-Z]`)

// isCapPackage reports whether name is a capability package of the
// prelude (cap/<name>, per capExports).
func isCapPackage(name string) bool {
	_, ok := capExports()[preludeModule+"/"+name]
	return ok
}

// pointerFromText points at the API of the first capability package
// diag qualifies a name with; "" when it qualifies none.
func pointerFromText(diag string) string {
	for _, m := range capPackageRef.FindAllStringSubmatch(diag, maxSuggestLines) {
		if isCapPackage(m[1]) {
			return pointer(m[1])
		}
	}
	return ""
}

// pointerFromRecord points at the API of the first capability package
// whose call failed other than by a policy refusal (policyRefusals),
// which reading the API does not lift; "" when none did.
func pointerFromRecord(r CallRecord) string {
	for _, e := range r.Calls {
		if e.Status == CallFailed && !policyRefusals[e.Code] {
			if pkg, _, _ := strings.Cut(e.Cap, "."); isCapPackage(pkg) {
				return pointer(pkg)
			}
		}
	}
	return ""
}

// policyRefusals are the call failures that a policy, a grant or a
// ceiling decided, not the program's use of the API: a call failing so
// gets no pointer at the API.
var policyRefusals = map[tool.Code]bool{
	codeAdmissionCeiling:          true,
	codeSpawnCeiling:              true,
	codeTooManyCalls:              true,
	codeMCPToolUnauthorized:       true,
	tool.CodeProtectedPath:        true,
	tool.CodePermissionDenied:     true,
	tool.CodeOutsideRoots:         true,
	tool.CodeOutsideWritableRoots: true,
	tool.CodeGitControlPath:       true,
	job.CodeJobCeilingReached:     true,
	job.CodeJobClearanceRefused:   true,
	job.CodeLifetimeRefused:       true,
	agent.CodeDepthCap:            true,
	agent.CodeFanOut:              true,
	agent.CodeSessionStrands:      true,
}

// writePointer writes p on its own line, if any.
func writePointer(b *strings.Builder, p string) {
	if p != "" {
		b.WriteString(p + "\n")
	}
}

func pointer(pkg string) string {
	return "fs_read cap://" + pkg + " shows cap/" + pkg + "'s documented API."
}
