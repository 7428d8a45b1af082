package codemode

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// TestRedteamCloseCountsWhatWasNotReaped: when Close's deadline passes,
// its error counts the launched programs still not reaped, not every one
// that was running when it began; and a launch reserved before Close
// starts nothing after it.
func TestRedteamCloseCountsWhatWasNotReaped(t *testing.T) {
	t.Parallel()
	t2 := newExecutions(nil, nil)
	c := &tool.Call{Strand: "main", OpID: "op", StepID: "step"}
	quick, err := t2.reserve(c)
	if err != nil {
		t.Fatal(err)
	}
	stuck, err := t2.reserve(c)
	if err != nil {
		t.Fatal(err)
	}
	late, err := t2.reserve(c)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	if err := t2.start(quick, &Execution{}, func(ctx context.Context) (*RunResult, error) {
		<-ctx.Done()
		return &RunResult{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := t2.start(stuck, &Execution{}, func(context.Context) (*RunResult, error) {
		<-release // a run slow to be reaped
		return &RunResult{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-quick.done
		cancel()
	}()
	err = t2.close(ctx)
	if err == nil || !strings.Contains(err.Error(), "1 launched program") {
		t.Errorf("Close with one of two programs reaped: %v", err)
	}
	var ce *CapError
	ran := false
	if err := t2.start(late, &Execution{}, func(context.Context) (*RunResult, error) { ran = true; return nil, nil }); !errors.As(err, &ce) || ce.Code != CodeEngineClosed || ran {
		t.Errorf("a launch reserved before Close started after it: %v (ran %v)", err, ran)
	}
	if _, err := t2.lookup("main", late.handle); err == nil {
		t.Errorf("the launch that never started is still listed")
	}
}

// TestRedteamCancelAbortsTheStepWhereItRuns: a launching call that
// brings its own broker runs the program there, so a cancel aborts the
// execution's step in that broker's ledger (nothing more is admitted to
// it), not only in the Engine's.
func TestRedteamCancelAbortsTheStepWhereItRuns(t *testing.T) {
	t.Parallel()
	engines := broker.New(broker.Options{HelperPath: "/nonexistent", WarmHelperIdle: -1})
	calls := broker.New(broker.Options{HelperPath: "/nonexistent", WarmHelperIdle: -1})
	t.Cleanup(func() { engines.Close(); calls.Close() })
	tab := newExecutions(func(k sandbox.StepKey) { engines.Ledger().AbortStep(k) }, nil)
	x, err := tab.reserve(&tool.Call{Strand: "main", OpID: "op", StepID: "step", Broker: calls})
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.start(x, &Execution{}, func(ctx context.Context) (*RunResult, error) {
		<-ctx.Done()
		return &RunResult{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if !tab.teardown(context.Background(), x) {
		t.Fatal("not reaped")
	}
	ticket, err := calls.Ledger().Admit(x.key, sandbox.Budget{}, nil)
	if err == nil {
		calls.Ledger().Release(ticket)
	}
	if d := sandbox.DenialOf(err); d == nil || d.Code != sandbox.DenialStepAborted {
		t.Errorf("after the cancel, the step where the program ran still admits work: %v", err)
	}
}
