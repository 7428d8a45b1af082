package tool

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/sandbox"
)

// TestRaiseIsAudited: every raise and every resuming answer reaches the
// broker's audit hook; a call without a broker raises without auditing.
func TestRaiseIsAudited(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var events []sandbox.AuditEvent
	b := broker.New(broker.Options{Audit: func(e sandbox.AuditEvent) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}})
	defer b.Close()
	grant := sandbox.Grant{Kind: sandbox.GrantNetwork}
	for _, tc := range []struct {
		name   string
		answer Escalation
		want   int
	}{
		{"settled", Escalation{}, 1},
		{"resumed", Escalation{Resume: true, Grants: []sandbox.Grant{grant}}, 2},
	} {
		events = nil
		c := &Call{Workspace: "/w", Broker: b, RaiseRefusal: func(context.Context, RaisedRefusal) Escalation { return tc.answer }}
		subject := &Subject{Kind: SubjectCommand, Text: "curl example.com"}
		c.Raise(context.Background(), RaisedRefusal{Tool: "bash", Denial: &sandbox.Denial{Code: sandbox.DenialRequirementsNotCovered, Wanted: []sandbox.Grant{grant}}, Subject: subject})
		if len(events) != tc.want {
			t.Fatalf("%s: %d audit events, want %d: %+v", tc.name, len(events), tc.want, events)
		}
		for _, e := range events {
			if e.Kind != sandbox.AuditEscalation || e.Workspace != "/w" || !strings.Contains(e.Detail, "bash") || !strings.Contains(e.Detail, "network") {
				t.Errorf("%s: event %+v does not name the tool, the workspace and the grant", tc.name, e)
			}
			if !strings.Contains(e.Detail, subject.Digest()) {
				t.Errorf("%s: event %+v does not name the digest of what runs", tc.name, e)
			}
		}
	}
	c := &Call{RaiseRefusal: func(context.Context, RaisedRefusal) Escalation { return Escalation{Resume: true} }}
	if !c.Raise(context.Background(), RaisedRefusal{Tool: "bash"}).Resume {
		t.Error("a call without a broker lost its escalation's answer")
	}
}
