package codemode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/codemode/internal/transport"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// Bounds of a run.
const (
	// defaultWithin is a run's wall deadline when within_ms is absent.
	defaultWithin = 60 * time.Second
	// maxWithin is the largest within_ms a run takes.
	maxWithin = 600 * time.Second
	// runAddressSpaceBytes is the program's address-space limit
	// (RLIMIT_AS). The Go runtime reserves virtual ranges well past what
	// it uses; GOMEMLIMIT below keeps the heap far under this.
	runAddressSpaceBytes = 4 << 30
	// runMemoryLimit is the GOMEMLIMIT a program runs with.
	runMemoryLimit = "1GiB"
	// maxRunProcs is the most GOMAXPROCS a program runs with: it gets
	// the host's CPU count up to this.
	maxRunProcs = 4
	// runProcesses bounds the processes (threads included) of the run
	// jail's user.
	runProcesses = 256
)

// runRequiredLayers are the layers a program never runs without: where
// the kernel cannot apply one, the run is refused
// (CodeRunJailUnavailable) rather than run less confined.
func runRequiredLayers() []string {
	return []string{sandbox.LayerNamespaces, sandbox.LayerEmptyRoot, sandbox.LayerNoNewPrivs,
		sandbox.LayerCapabilities, sandbox.LayerSeccomp, sandbox.LayerRlimits}
}

// RunResult is how one program's run ended.
type RunResult struct {
	// Stdout is what the program printed (its result), or the overflow
	// notice when it spilled past blob.OverflowThreshold (Overflow is
	// then set).
	Stdout   string
	Overflow *blob.Overflow
	// StdoutBytes counts every byte the program wrote to stdout.
	StdoutBytes int64
	// Exit is the program's exit status (-1 when a signal ended it).
	Exit int
	// Stderr is the program's stderr: its first 1 KiB (where a panic or
	// a fatal runtime error says what happened) and its last 2 KiB, with
	// how much was left out between.
	Stderr string
	// OutputLimited: the program's stdout and stderr together passed the
	// call's output bound (tool.Call.OutputBound) and it was stopped.
	OutputLimited bool
	// Code is how the run failed ("" when the program exited 0):
	// CodeRunFailed, CodeWallDeadline, CodeRunCancelled, CodeChannelFault
	// or tool.CodeSpillFailed.
	Code tool.Code
	// Fault says why the channel was ended, for CodeChannelFault.
	Fault string
	// Record is the execution's capability calls.
	Record CallRecord
	// Artifacts are what report.emit minted.
	Artifacts []Artifact
	// Enforcement is the run jail's report.
	Enforcement sandbox.Enforcement
	// Duration is the run's wall time by the host's clock.
	Duration time.Duration

	// lastFailure and lastStderr are the last proc.run command that
	// failed and its stderr tail, for the "last failing command:" line.
	lastFailure, lastStderr string
}

var (
	errWallDeadline = errors.New("the program's wall deadline passed")
	errFault        = errors.New("the program's channel faulted")
	// errNoExecution: the call's jail returned neither an Execution nor
	// an error; a run fails closed on it (jail_failed).
	errNoExecution = errors.New("the jail returned no execution and no error")
)

// runProgram runs bin in the run jail under c's step, serving its capability
// channel with h until it exits, its deadline passes, ctx ends or the
// channel faults; every path tears the process tree down.
func runProgram(ctx context.Context, c *tool.Call, bin *Binary, within time.Duration, h *seamHost) (*RunResult, error) {
	return runProgramArgs(ctx, c, bin, within, h, nil)
}

// runProgramArgs is runProgram with arguments after the program's name
// (a vetted program takes none; tests run probes with some).
func runProgramArgs(ctx context.Context, c *tool.Call, bin *Binary, within time.Duration, h *seamHost, args []string) (*RunResult, error) {
	hostEnd, guestEnd, err := transport.Pair()
	if err != nil {
		return nil, err
	}
	defer hostEnd.Close()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ctx, stop := context.WithTimeoutCause(ctx, within, errWallDeadline)
	defer stop()
	spec := runSpec(c, bin, within, guestEnd)
	spec.Argv = append(spec.Argv, args...)
	start := time.Now()
	x, err := c.Broker.Clear(ctx, spec)
	guestEnd.Close()
	if err == nil && x == nil {
		err = errNoExecution
	}
	if err != nil {
		return nil, runRefusal(err)
	}
	rec := newRecorder(time.Now)
	rec.summarize = h.summary
	ch := newChannel(ctx, hostEnd, h.route, rec)
	faulted := make(chan error, 1)
	go func() {
		if err := ch.serve(); err != nil {
			faulted <- err
			cancel(errFault)
			x.Cancel()
		}
		close(faulted)
	}()

	out := newProgramOutput(c)
	for o := range x.Output() {
		out.add(c, o)
	}
	st := x.Wait()
	res := &RunResult{Exit: st.ExitCode, Enforcement: x.Enforcement, Duration: time.Since(start), StdoutBytes: out.total, OutputLimited: st.OutputLimited}
	cause := context.Cause(ctx)
	ch.end(endCode(cause), endMessage(cause))
	hostEnd.Close()
	if fault := <-faulted; fault != nil {
		res.Code, res.Fault = CodeChannelFault, fault.Error()
	}
	res.Record = rec.finish()
	h.mu.Lock()
	res.Artifacts = append([]Artifact{}, h.artifacts...)
	h.mu.Unlock()
	res.Stderr = out.stderrText()
	body, overflow, err := out.finish()
	if err != nil {
		res.Code = tool.CodeSpillFailed
		body = fmt.Sprintf("the program's stdout (%d bytes) could not be stored: %v", out.total, err)
	}
	res.Stdout, res.Overflow = body, overflow
	if res.Code == "" {
		res.Code = settledCode(st, cause)
	}
	return res, nil
}

// runSpec is the program's clearance: its binary alone in an empty root,
// no network, no writable root, an environment of the Go runtime's
// bounds only, its channel at sandbox.ExtraFileFD, every layer of
// runRequiredLayers required.
func runSpec(c *tool.Call, bin *Binary, within time.Duration, channel *os.File) sandbox.CallSpec {
	env := map[string]string{"GOMAXPROCS": strconv.Itoa(min(maxRunProcs, runtime.NumCPU())), "GOMEMLIMIT": runMemoryLimit, "GOTRACEBACK": "single"}
	return sandbox.CallSpec{
		Key:       sandbox.StepKey{OpID: c.OpID, StepID: c.StepID},
		Argv:      []string{"program"},
		EmptyRoot: &sandbox.EmptyRoot{Program: bin.Path},
		Env:       env,
		Policy: sandbox.Policy{
			Network:  sandbox.NetworkOff,
			EnvAllow: []string{"GOMAXPROCS", "GOMEMLIMIT", "GOTRACEBACK"},
			Limits:   sandbox.Limits{MemoryBytes: runAddressSpaceBytes, Processes: runProcesses},
		},
		Budget:         sandbox.Budget{MaxOutstanding: 1 + maxProcsInFlight},
		Timeout:        within,
		MaxOutputBytes: c.OutputBound(),
		ExtraFile:      channel,
		RequiredLayers: runRequiredLayers(),
	}
}

// runRefusal renders a clearance the broker refused: a layer the run
// jail requires is CodeRunJailUnavailable naming it.
func runRefusal(err error) error {
	var m *sandbox.MissingLayer
	if errors.As(err, &m) {
		return &CapError{Code: CodeRunJailUnavailable, Message: fmt.Sprintf("the program was not run: the kernel cannot apply the run jail's %s layer (%s), and code mode never runs a program less confined", m.Layer, m.Reason)}
	}
	if d := sandbox.DenialOf(err); d != nil {
		return &CapError{Code: tool.Code(d.Code), Message: "the program was not run: " + d.Explain()}
	}
	return &CapError{Code: CodeRunFailed, Message: "the program was not run: " + err.Error()}
}

func endCode(cause error) tool.Code {
	switch {
	case errors.Is(cause, errWallDeadline):
		return CodeWallDeadline
	case errors.Is(cause, errFault):
		return CodeChannelFault
	case cause != nil:
		return CodeRunCancelled
	}
	return codeExecutionEnding
}

func endMessage(cause error) string {
	if cause == nil {
		return "the program exited"
	}
	return cause.Error()
}

// settledCode is the failure code of a run that ended as st, or "".
func settledCode(st sandbox.Settled, cause error) tool.Code {
	switch {
	case errors.Is(cause, errWallDeadline) || st.TimedOut:
		return CodeWallDeadline
	case cause != nil || st.Cancelled:
		return CodeRunCancelled
	case st.Failed != "" || st.ExitCode != 0:
		return CodeRunFailed
	}
	return ""
}
