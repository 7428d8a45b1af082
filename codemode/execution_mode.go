package codemode

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
	"github.com/google/jsonschema-go/jsonschema"
)

// executionMode is code_mode's mode argument.
type executionMode string

// The modes of code_mode.
const (
	modeRun    executionMode = "run"
	modeLaunch executionMode = "launch"
	modeSend   executionMode = "send"
	modeCheck  executionMode = "check"
	modeJoin   executionMode = "join"
	modeCancel executionMode = "cancel"
)

// joinMillis is join's wait_ms.
type joinMillis int64

func executionModeSchemas() []tool.TypeSchema {
	return []tool.TypeSchema{
		{Type: reflect.TypeFor[executionMode](), Schema: &jsonschema.Schema{Type: "string",
			Enum: []any{string(modeRun), string(modeLaunch), string(modeSend), string(modeCheck), string(modeJoin), string(modeCancel)}}},
		{Type: reflect.TypeFor[joinMillis](), Schema: &jsonschema.Schema{Type: "integer",
			Description: fmt.Sprintf("join's wait (0: %d), check's for readiness (0: none); at most %d", defaultJoinWait.Milliseconds(), maxJoinWait.Milliseconds())}},
	}
}

// modeDescription is the description's paragraph on the modes.
func modeDescription() string {
	return fmt.Sprintf("mode launch answers a handle at once while the program runs on (at most %d per strand): then mode check, send (to an endpoint, once it called execution.Ready), join or cancel. ", maxLiveExecutions)
}

// ExecutionDetails is the Details of a launch, check, send, cancel, and
// of a join that found the program still running.
type ExecutionDetails struct {
	ExecutionStatus
	// Edits, Cached and Build are the launch's build, as Details has them.
	Edits  []Repair             `json:"edits,omitempty"`
	Cached bool                 `json:"cached,omitempty"`
	Build  *sandbox.Enforcement `json:"build,omitempty"`
}

// modeArguments says which arguments each mode takes: the source and
// the deadline only at launch (or run), so no interaction with a running
// program can replace what it runs or change its bounds.
func modeArguments(a codeModeArgs, seams int) (mode executionMode, refusal string) {
	mode = a.Mode
	if mode == "" {
		mode = modeRun
	}
	given := map[string]bool{"program": a.Program != "", "program_path": a.ProgramPath != "", "within_ms": a.WithinMs != 0,
		"handle": a.Handle != "", "endpoint": a.Endpoint != "", "input": a.Input != "", "wait_ms": a.WaitMs != 0,
		"permissions": a.Permissions != nil, "seam": a.seam != ""}
	build := []string{"program", "program_path", "within_ms", "permissions"}
	if seams > 1 {
		build = append(build, "seam") // the schema has seam only then
	}
	takes := map[executionMode][]string{
		modeRun: build, modeLaunch: build,
		modeSend: {"handle", "endpoint", "input"}, modeCheck: {"handle", "wait_ms"}, modeJoin: {"handle", "wait_ms"}, modeCancel: {"handle"},
	}[mode]
	for _, k := range []string{"program", "program_path", "within_ms", "permissions", "seam", "handle", "endpoint", "input", "wait_ms"} {
		if given[k] && !strings.Contains(" "+strings.Join(takes, " ")+" ", " "+k+" ") {
			why := ""
			if mode != modeRun && mode != modeLaunch {
				why = "; a launched program's source, seam, deadline and permissions are fixed at launch"
			}
			return mode, fmt.Sprintf("mode %s takes no %s: it takes %s%s", mode, k, strings.Join(takes, ", "), why)
		}
	}
	if mode != modeRun && mode != modeLaunch && a.Handle == "" {
		return mode, fmt.Sprintf("mode %s needs handle: what launch answered", mode)
	}
	return mode, ""
}

// interact answers the modes that address a launched execution (send,
// check, join, cancel) and refuses an argument the mode does not take;
// answered is false for run and launch with their arguments, which the
// caller goes on to build.
func (e *Engine) interact(ctx context.Context, c *tool.Call, a codeModeArgs) (o tool.Outcome, answered bool) {
	mode, refusal := modeArguments(a, len(e.opts.Seams))
	if refusal != "" {
		return tool.Fail(tool.CodeInvalidArguments, refusal), true
	}
	if mode == modeRun || mode == modeLaunch {
		return tool.Outcome{}, false
	}
	x, err := e.execs.lookup(c.Strand, a.Handle)
	if err != nil {
		return capFailure(err), true
	}
	switch mode {
	case modeCheck:
		return e.check(ctx, x, a), true
	case modeSend:
		return e.send(x, a), true
	case modeJoin:
		return e.join(ctx, x, a), true
	}
	return e.cancel(ctx, x), true
}

func capFailure(err error) tool.Outcome {
	var ce *CapError
	if errors.As(err, &ce) {
		return tool.Fail(ce.Code, ce.Message)
	}
	return tool.Fail(stageCode(err), err.Error())
}

// statusText is check's sentence.
func statusText(st ExecutionStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s (%d ms)", st.Handle, st.State, st.ElapsedMs)
	switch {
	case st.State != ExecutionRunning:
		b.WriteString("; join it for its result")
	case st.Ready:
		fmt.Fprintf(&b, ", ready; endpoints: %s; %s not yet received", strings.Join(st.Endpoints, ", "), inputsText(st.Queued))
	default:
		b.WriteString(", not ready: sends are refused until it calls execution.Ready")
		if len(st.Endpoints) > 0 {
			b.WriteString("; endpoints registered: " + strings.Join(st.Endpoints, ", "))
		}
	}
	return b.String()
}

// launch builds src as run does (its refusals are run's), then starts it
// under its own step on the Engine's context and answers its handle.
func (e *Engine) launch(ctx context.Context, c *tool.Call, r Request, notes []string) tool.Outcome {
	x, err := e.execs.reserve(c)
	if err != nil {
		return capFailure(err)
	}
	start := time.Now()
	pre, st, err := e.prepare(ctx, c, r)
	if err != nil {
		e.execs.drop(x)
		e.checkRefusal(ctx, err)
		return render(pre, err, notes, time.Since(start))
	}
	within, bin := st.within, pre.Binary
	x.call.Grants = st.call.Grants
	if noBroker(x.call.Broker) {
		x.call.Broker = st.call.Broker
	}
	x.built = time.Since(start)
	if err := e.execs.start(x, pre, func(ctx context.Context) (*RunResult, error) {
		res, err := e.runAs(ctx, x.call, bin, within, st.permit, x)
		// Composed only if the program started (the broker may refuse
		// its run), as Execute says; finish reads pre after this.
		pre.Widening = st.permit.widening(res != nil)
		return res, err
	}); err != nil {
		return render(pre, err, notes, time.Since(start))
	}
	d := ExecutionDetails{ExecutionStatus: e.execs.status(x), Edits: bin.Edits, Cached: bin.Cached}
	if !bin.Cached {
		enf := bin.Enforcement
		d.Build = &enf
	}
	var b strings.Builder
	for _, n := range notes {
		b.WriteString(n + "\n")
	}
	fmt.Fprintf(&b, "launched %s: %s, within %d ms. Use the handle with mode check, send (once it calls execution.Ready), join or cancel.\n", x.handle, d.State, within.Milliseconds())
	if len(bin.Edits) > 0 {
		b.WriteString("repaired before building: " + repairsText(bin.Edits) + "\n")
	}
	b.WriteString(sandboxLine(stageReport{enf: d.Build, none: buildCached}, stageReport{none: runByJoin}))
	return tool.Outcome{Text: b.String(), Details: d}
}

func (e *Engine) send(x *execution, a codeModeArgs) tool.Outcome {
	endpoint := a.Endpoint
	if endpoint == "" {
		endpoint = defaultEndpoint
	}
	if len(a.Input) > maxInputBytes {
		return tool.Fail(tool.CodeInvalidArguments, fmt.Sprintf("input is %d bytes; a send carries at most %d", len(a.Input), maxInputBytes))
	}
	n, err := e.execs.send(x, endpoint, []byte(a.Input))
	if err != nil {
		return capFailure(err)
	}
	st := e.execs.status(x)
	return tool.Outcome{Text: fmt.Sprintf("sent %d bytes to %s endpoint %s; %s not yet received", len(a.Input), x.handle, endpoint, inputsText(n)), Details: ExecutionDetails{ExecutionStatus: st}}
}

// check answers x's state, first waiting at most wait_ms (0: not at all,
// at most maxJoinWait) until it is ready for input or has ended.
func (e *Engine) check(ctx context.Context, x *execution, a codeModeArgs) tool.Outcome {
	wait, notes, bad := millisArg("wait_ms", int64(a.WaitMs), maxJoinWait)
	if bad != nil {
		return *bad
	}
	if wait > 0 {
		e.execs.awaitReady(ctx, x, wait)
	}
	st := e.execs.status(x)
	return tool.Outcome{Text: strings.Join(append(notes, statusText(st)), "\n"), Details: ExecutionDetails{ExecutionStatus: st}}
}

func (e *Engine) join(ctx context.Context, x *execution, a codeModeArgs) tool.Outcome {
	wait, notes, bad := millisArg("wait_ms", int64(a.WaitMs), maxJoinWait)
	if bad != nil {
		return *bad
	}
	if wait == 0 {
		wait = defaultJoinWait
	}
	start := e.execs.now()
	res, ended, refusal := e.execs.join(ctx, x, wait)
	st := e.execs.status(x)
	if !ended {
		waited := fmt.Sprintf("after a %d ms wait", wait.Milliseconds())
		if ctx.Err() != nil {
			waited = fmt.Sprintf("when this call ended, %d ms into its wait", e.execs.now().Sub(start).Milliseconds())
		}
		text := strings.Join(append(notes, fmt.Sprintf("%s is still running %s; join again, check it, or cancel it", x.handle, waited)), "\n")
		return tool.Outcome{Text: text, Details: ExecutionDetails{ExecutionStatus: st}}
	}
	shown := *res
	shown.joined = true
	took := x.built
	if shown.Run != nil {
		took += shown.Run.Duration
	}
	notes = append(notes, fmt.Sprintf("joined %s: %s after %d ms", x.handle, st.State, st.ElapsedMs))
	return render(&shown, refusal, notes, took)
}

func (e *Engine) cancel(ctx context.Context, x *execution) tool.Outcome {
	ctx, stop := context.WithTimeout(ctx, cancelWait)
	defer stop()
	was := e.execs.status(x).State
	reaped := e.execs.teardown(ctx, x)
	st := e.execs.status(x)
	d := ExecutionDetails{ExecutionStatus: st}
	switch {
	case was != ExecutionRunning || st.State == ExecutionExited:
		return tool.Outcome{Text: fmt.Sprintf("%s had already %s; nothing to cancel; join it for its result", x.handle, st.State), Details: d}
	case !reaped:
		return tool.Outcome{Text: fmt.Sprintf("cancelling %s: its processes were still being reaped after %d ms; check it again", x.handle, cancelWait.Milliseconds()), Details: d}
	}
	return tool.Outcome{Text: fmt.Sprintf("cancelled %s: its program and its proc.run commands are ended and reaped (a job it started with cap/job runs on: job_kill ends it); join it for what it printed", x.handle), Details: d}
}

// Close tears every launched execution down (its program and its
// proc.run commands; a job a program started through cap/job is the job
// plane's to end) and refuses every later launch with CodeEngineClosed.
// It waits until they are reaped or ctx ends (then the error says how
// many were not). A foreground run is its caller's to end. Safe to call
// more than once.
func (e *Engine) Close(ctx context.Context) error { return e.execs.close(ctx) }

// inputsText counts inputs in words: "1 input", "3 inputs".
func inputsText(n int) string {
	if n == 1 {
		return "1 input"
	}
	return fmt.Sprintf("%d inputs", n)
}
