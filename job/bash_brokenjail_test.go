package job

import (
	"context"
	"testing"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/sandbox"
)

// TestBashNoBrokerTypedNil: a Call whose Broker holds a nil
// *broker.Broker runs no commands, as a nil Broker: no_broker, no panic.
func TestBashNoBrokerTypedNil(t *testing.T) {
	c := bashCall(t, true)
	var none *broker.Broker
	c.Broker = none
	o, _ := runBashArgs(t, c, map[string]any{"command": "true"})
	if !o.IsError || o.Code != "no_broker" {
		t.Fatalf("%+v", o)
	}
}

// noExecutionJail is a host's own jail whose Clear returns neither an
// Execution nor an error, which its contract rules out.
type noExecutionJail struct{ ledger *sandbox.Ledger }

func (j noExecutionJail) Clear(context.Context, sandbox.CallSpec) (*sandbox.Execution, error) {
	return nil, nil
}
func (j noExecutionJail) Ledger() *sandbox.Ledger        { return j.ledger }
func (j noExecutionJail) Available() sandbox.Enforcement { return sandbox.Enforcement{} }
func (j noExecutionJail) Audit(sandbox.AuditEvent)       {}
func (j noExecutionJail) GuardToolWrite(string, string) ([]sandbox.Neutralisation, error) {
	return nil, nil
}

// TestBashOnAJailWithoutExecution: bash fails closed (jail_failed) on a
// jail that returned no Execution, rather than panicking.
func TestBashOnAJailWithoutExecution(t *testing.T) {
	c := bashCall(t, true)
	c.Broker = noExecutionJail{ledger: sandbox.NewLedger(nil)}
	o, _ := runBashArgs(t, c, map[string]any{"command": "true"})
	if !o.IsError || o.Code != "jail_failed" {
		t.Fatalf("%+v", o)
	}
}
