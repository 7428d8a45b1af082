package broker

import (
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentloom/loom/sandbox"
)

// TestDegradedRunIsAudited: a command run with a layer skipped reaches
// the audit hook with its report; a fully confined one does not (the
// control), and a panicking hook does not break the command.
func TestDegradedRunIsAudited(t *testing.T) {
	t.Parallel()
	abi := newTestBroker(t, Options{}).probed().landlockABI
	for _, tc := range []struct {
		name     string
		degraded bool
	}{{"degraded", true}, {"confined", false}} {
		var mu sync.Mutex
		var got []sandbox.AuditEvent
		opts := Options{Audit: func(e sandbox.AuditEvent) {
			mu.Lock()
			got = append(got, e)
			mu.Unlock()
			panic("a broken audit sink")
		}}
		b := newTestBroker(t, opts)
		if tc.degraded {
			b = withProbe(t, opts, probeResult{usernsErr: syscall.EPERM, landlockABI: abi})
		}
		r := run(t, b, testPolicy(t.TempDir()), 10*time.Second, "sh", "-c", "echo ran")
		b.Close()
		if r.stdout != "ran\n" {
			t.Fatalf("%s: the command did not run past the audit hook: %+v", tc.name, r.settled)
		}
		mu.Lock()
		n := 0
		for _, e := range got {
			if e.Kind == sandbox.AuditDegraded {
				n++
				if e.Enforcement == nil || !e.Enforcement.Degraded {
					t.Errorf("%s: degraded event without its report: %+v", tc.name, e)
				}
			}
		}
		mu.Unlock()
		if want := map[bool]int{true: 1, false: 0}[tc.degraded]; n != want || r.enf.Degraded != tc.degraded {
			t.Errorf("%s: %d degraded audit events (report degraded: %v), want %d", tc.name, n, r.enf.Degraded, want)
		}
	}
}
