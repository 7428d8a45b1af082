package codemode

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/tool"
)

// launchOn reserves and starts one execution of strand on tab whose run
// is run, failing the test on a refusal.
func launchOn(t *testing.T, tab *executions, strand string, site int, run func(ctx context.Context) (*RunResult, error)) *execution {
	t.Helper()
	x, err := tab.reserve((&tool.Call{Strand: strand}).At("op", fmt.Sprint("step-", site), 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.start(x, &Execution{}, run); err != nil {
		t.Fatal(err)
	}
	return x
}

// TestEndedExecutionsAreForgottenInTheOrderTheyEnded: a long run launched
// first and ending after maxEndedExecutions short ones is still joinable
// when it ends: the one forgotten is the one that ended first.
func TestEndedExecutionsAreForgottenInTheOrderTheyEnded(t *testing.T) {
	t.Parallel()
	tab := newExecutions(nil, nil)
	t.Cleanup(func() { tab.close(context.Background()) })
	quick := func(context.Context) (*RunResult, error) { return &RunResult{Stdout: "quick"}, nil }
	release := make(chan struct{})
	long := launchOn(t, tab, "a", 0, func(ctx context.Context) (*RunResult, error) {
		<-release
		return &RunResult{Stdout: "long"}, nil
	})
	var short []*execution
	for i := range maxEndedExecutions {
		x := launchOn(t, tab, "a", i+1, quick)
		<-x.done
		short = append(short, x)
	}
	close(release)
	<-long.done
	x, err := tab.lookup("a", long.handle)
	if err != nil {
		t.Fatalf("the execution that just ended was forgotten: %v", err)
	}
	res, ended, err := tab.join(context.Background(), x, 0)
	if err != nil || !ended || res.Run == nil || res.Run.Stdout != "long" {
		t.Fatalf("join of the long run: %+v %v %v", res, ended, err)
	}
	if _, err := tab.lookup("a", short[0].handle); codeOfErr(err) != CodeUnknownExecution {
		t.Errorf("the first to end is still kept: %v", err)
	}
	for _, s := range short[1:] {
		if _, err := tab.lookup("a", s.handle); err != nil {
			t.Errorf("%s, among the %d that ended last, was forgotten: %v", s.handle, maxEndedExecutions, err)
		}
	}
}

// TestLaunchedRunThatPanicsEnds: a panic inside a launched execution's
// run (a host bug) ends the execution with CodeToolPanicked, wakes its
// joiner and leaves the host running.
func TestLaunchedRunThatPanicsEnds(t *testing.T) {
	t.Parallel()
	tab := newExecutions(nil, nil)
	t.Cleanup(func() { tab.close(context.Background()) })
	x := launchOn(t, tab, "a", 0, func(context.Context) (*RunResult, error) { panic("host bug") })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, ended, err := tab.join(ctx, x, time.Minute)
	if !ended {
		t.Fatal("join: the execution did not end")
	}
	if code := stageCode(err); code != tool.CodeToolPanicked {
		t.Errorf("join's error %v has code %s, want %s", err, code, tool.CodeToolPanicked)
	}
}

// TestJoinEndedByItsCallSaysSo: a join whose call ends before its wait
// does says so and how long it waited, rather than claiming the whole
// wait_ms passed.
func TestJoinEndedByItsCallSaysSo(t *testing.T) {
	t.Parallel()
	tab := newExecutions(nil, nil)
	t.Cleanup(func() { tab.close(context.Background()) })
	x := launchOn(t, tab, "a", 0, func(ctx context.Context) (*RunResult, error) {
		<-ctx.Done()
		return &RunResult{Code: CodeRunCancelled}, nil
	})
	e := &Engine{execs: tab}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := e.join(ctx, x, codeModeArgs{WaitMs: 60000})
	if o.IsError || !strings.Contains(o.Text, "still running when this call ended") || strings.Contains(o.Text, "60000 ms") {
		t.Errorf("join cut short by its call: %s", o.Text)
	}
	o = e.join(context.Background(), x, codeModeArgs{WaitMs: 1})
	if !strings.Contains(o.Text, "still running after a 1 ms wait") {
		t.Errorf("join that waited its wait_ms: %s", o.Text)
	}
}

// TestMapKeepsTheChildWhenOnlyTheWaitFailed: a strand.map item whose
// child was spawned but whose wait failed reaches the program with its
// error and with the child it may still wait for or send to; an item
// whose spawn failed has no child.
func TestMapKeepsTheChildWhenOnlyTheWaitFailed(t *testing.T) {
	t.Parallel()
	bin := buildWithPrelude(t, mainWith([]string{"context", "errors", "fmt", "cap/strand"}, `res, err := strand.Map(context.Background(), []strand.Item{{"a", "A"}, {"b", "B"}}, strand.Options{}, 0)
	if err != nil {
		panic(err)
	}
	for _, r := range res {
		var e *strand.Error
		errors.As(r.Err, &e)
		fmt.Printf("%s child=%q code=%s\n", r.Item.Purpose, r.Child.Handle, e.Code)
	}`))
	route := func(_ context.Context, cap string, _ map[string]any) (any, error) {
		if cap != "strand.map" {
			return nil, &CapError{Code: codeUnknownCapability, Message: cap}
		}
		return map[string]any{"items": []any{
			map[string]any{"purpose": "a", "handle": "sub:main/a-0123456789abcdef#run-1", "strand": "sub:main/a-0123456789abcdef", "reconciled": false, "code": "wait_failed", "message": "the wait failed"},
			map[string]any{"purpose": "b", "code": "spawn_ceiling", "message": "no more"},
		}}, nil
	}
	out := runServed(t, bin, route)
	want := "a child=\"sub:main/a-0123456789abcdef#run-1\" code=wait_failed\nb child=\"\" code=spawn_ceiling\n"
	if out != want {
		t.Errorf("the program saw:\n%s\nwant:\n%s", out, want)
	}
}
