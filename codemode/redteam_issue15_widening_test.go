package codemode

import (
	"context"
	"testing"
	"time"

	"github.com/agentloom/loom/sandbox"
)

// TestRedteamLaunchThatNeverRanComposedNoGrant: a launched program whose
// run the broker refuses (its operation aborted before the run's
// clearance) never started, so its join must say the grants it carried
// were never reached, exactly as a foreground run of the same call says;
// it must not claim they were composed.
func TestRedteamLaunchThatNeverRanComposedNoGrant(t *testing.T) {
	t.Parallel()
	s := newSession(t, nil)
	s.withNotify(t, nil)
	s.call.Grants = []sandbox.Grant{{Kind: sandbox.GrantReadableRoot, Path: s.ws}}
	s.call.Broker.Ledger().AbortOperation(s.call.OpID)
	const src = "package main\n\nfunc main() {}\n"

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	x, err := s.eng.Execute(ctx, s.call, Request{Source: []byte(src)})
	if err == nil || x.Run != nil {
		t.Fatalf("control: the foreground run started (%v)", err)
	}
	if x.Widening.State != GrantsUnreached {
		t.Fatalf("control: the foreground run's grants are %s, want %s", x.Widening.State, GrantsUnreached)
	}

	// (The launch may already read as ended: the broker refuses the run
	// at once.)
	h := s.launchArgs(t, nil, map[string]any{"program": src})
	o := s.dispatch(t, map[string]any{"mode": "join", "handle": h})
	d, ok := o.Details.(Details)
	if !ok || !o.IsError {
		t.Fatalf("join: %T %s: %s", o.Details, o.Code, o.Text)
	}
	if d.Run != nil || d.Grants.State != GrantsUnreached {
		t.Errorf("a launch that never ran reports grants %s (run report %v), want %s:\n%s", d.Grants.State, d.Run != nil, GrantsUnreached, o.Text)
	}

	// The control: the same launch in an operation the broker runs
	// composes the grants it carried.
	grants := s.call.Grants
	s.call = s.call.At(s.call.OpID+"-running", "step", 0)
	s.call.Grants = grants
	// (Its binary is cached and it does nothing: the launch may already
	// read as exited.)
	o = s.dispatchAs(t, "main", map[string]any{"mode": "launch", "program": src})
	ld, ok := o.Details.(ExecutionDetails)
	if o.IsError || !ok || ld.Handle == "" {
		t.Fatalf("control: launch: %s: %s", o.Code, o.Text)
	}
	o = s.dispatch(t, map[string]any{"mode": "join", "handle": ld.Handle, "wait_ms": 60_000})
	if d, ok := o.Details.(Details); !ok || o.IsError || d.Run == nil || d.Grants.State != GrantsComposed {
		t.Errorf("control: a launch that ran: %T %s:\n%s", o.Details, o.Code, o.Text)
	}
}
