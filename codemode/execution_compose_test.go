package codemode

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// launchArgs launches with args (mode added) under s's call and esc, and
// returns the handle.
func (s *session) launchArgs(t *testing.T, esc *escalation, args map[string]any) string {
	t.Helper()
	args["mode"] = "launch"
	o, _ := s.dispatchCtx(t, context.Background(), esc, args)
	if o.IsError {
		t.Fatalf("launch: %s: %s", o.Code, o.Text)
	}
	d, ok := o.Details.(ExecutionDetails)
	if !ok || d.Handle == "" {
		t.Fatalf("launch answered %T:\n%s", o.Details, o.Text)
	}
	return d.Handle
}

// joined joins handle, waiting as long as join may.
func (s *session) joined(t *testing.T, handle string) string {
	t.Helper()
	o, _ := s.dispatchCtx(t, context.Background(), nil, map[string]any{"mode": "join", "handle": handle, "wait_ms": maxJoinWait.Milliseconds()})
	if o.IsError {
		t.Fatalf("join: %s: %s", o.Code, o.Text)
	}
	return o.Text
}

// TestLaunchComposesAsRunDoes: a launch goes through the stages run does
// before its start: its permissions are raised once and the approved
// grants act on the launched program's calls (the granted write lands,
// join says which grants composed), and an interaction with it cannot
// carry permissions or a seam. On a host serving both seams, a launch on
// the orchestration seam runs the fan-out there, and permissions declared
// for that seam, whose calls no grant acts on, are refused unasked.
func TestLaunchComposesAsRunDoes(t *testing.T) {
	t.Parallel()
	t.Run("permissions", func(t *testing.T) {
		t.Parallel()
		s := newSession(t, nil)
		granted := outsideDir(t, s, "granted")
		esc := &escalation{answer: approveAll}
		h := s.launchArgs(t, esc, map[string]any{"program": writeProgram(writeBoth("", granted, "a.txt")),
			"permissions": map[string]any{"writable_roots": []string{granted}}})
		if n := esc.raised.Load(); n != 1 {
			t.Errorf("the launch raised %d times, want once", n)
		}
		text := s.joined(t, h)
		for _, want := range []string{"fs: ok", "grants: writable_root " + granted} {
			if !strings.Contains(text, want) {
				t.Errorf("join lacks %q:\n%s", want, text)
			}
		}
		if _, err := os.Stat(filepath.Join(granted, "a.txt")); err != nil {
			t.Errorf("the launched program's granted write did not land: %v", err)
		}
		s.refusedAfterLaunch(t, h, "permissions", map[string]any{"writable_roots": []string{granted}})
	})
	t.Run("orchestration seam", func(t *testing.T) {
		t.Parallel()
		s, _ := newAgentSession(t, agent.Options{}, 0)
		h := s.launchArgs(t, nil, map[string]any{"program": RecipeFanOut, "seam": OrchestrationSeamName})
		s.refusedAfterLaunch(t, h, "seam", WorkspaceSeamName)
		// Permissions for a seam none of whose calls a grant acts on are
		// refused before anyone is asked.
		esc := &escalation{answer: approveAll}
		o, _ := s.dispatchCtx(t, context.Background(), esc, map[string]any{"program": RecipeFanOut, "seam": OrchestrationSeamName,
			"permissions": map[string]any{"network": "full"}})
		if !o.IsError || o.Code != tool.CodeInvalidArguments || esc.raised.Load() != 0 {
			t.Errorf("permissions on the orchestration seam: %s (raised %d): %s", o.Code, esc.raised.Load(), o.Text)
		}
		if text := s.joined(t, h); strings.Count(text, ": completed, result ") != 3 {
			t.Errorf("the launched fan-out did not report its three children:\n%s", text)
		}
	})
}

// refusedAfterLaunch checks that mode check of handle refuses key, which
// only a launch (or a run) takes.
func (s *session) refusedAfterLaunch(t *testing.T, handle, key string, value any) {
	t.Helper()
	o, _ := s.dispatchCtx(t, context.Background(), nil, map[string]any{"mode": "check", "handle": handle, key: value})
	if !o.IsError || !strings.Contains(o.Text, "fixed at launch") {
		t.Errorf("check with %s was not refused: %s", key, o.Text)
	}
}

// TestCheckWaitsForReadiness: check with wait_ms waits until the program
// is ready for input (or has ended) and no longer, so a host need not poll;
// check without it answers at once.
func TestCheckWaitsForReadiness(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	h := s.launchArgs(t, nil, map[string]any{"program": scriptProgram})
	check := func(waitMs int64) ExecutionStatus {
		t.Helper()
		o, _ := s.dispatchCtx(t, context.Background(), nil, map[string]any{"mode": "check", "handle": h, "wait_ms": waitMs})
		d, ok := o.Details.(ExecutionDetails)
		if o.IsError || !ok {
			t.Fatalf("check: %s: %s", o.Code, o.Text)
		}
		return d.ExecutionStatus
	}
	if st := check(0); st.Ready {
		t.Fatalf("ready before kv go was set: %+v", st)
	}
	if st := check(20); st.Ready || st.State != ExecutionRunning {
		t.Fatalf("a short wait came back ready: %+v", st)
	}
	go func() {
		if err := s.eng.kv.Set(s.call.Strand, "go", []byte("1")); err != nil {
			t.Error(err)
		}
	}()
	if st := check(maxJoinWait.Milliseconds()); !st.Ready {
		t.Fatalf("check's wait came back before readiness: %+v", st)
	}
	if o, _ := s.dispatchCtx(t, context.Background(), nil, map[string]any{"mode": "send", "handle": h, "input": "stop"}); o.IsError {
		t.Fatalf("send: %s", o.Text)
	}
	if text := s.joined(t, h); !strings.Contains(text, "ctl") {
		t.Errorf("join:\n%s", text)
	}
}

// TestExecutionStepsAreTheEnginesOwn: two Engines sharing a Broker (or an
// Engine made again after a restart) mint different broker steps for
// launches from the same call, so one's cancel or Close, which aborts its
// executions' steps, never aborts the other's. (Before, both minted
// <step>/execution-1: three parallel runs of TestLiveExecutionBound on the
// shared test broker aborted each other's programs.)
func TestExecutionStepsAreTheEnginesOwn(t *testing.T) {
	t.Parallel()
	c := &tool.Call{Strand: "main", OpID: "op", StepID: "step"}
	var keys []sandbox.StepKey
	for range 2 {
		tab := newExecutions(func(sandbox.StepKey) {}, nil)
		x, err := tab.reserve(c)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, x.key)
		tab.drop(x)
	}
	if keys[0] == keys[1] {
		t.Fatalf("two Engines minted one step for the same call: %v", keys[0])
	}
}
