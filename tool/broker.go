package tool

import (
	"context"
	"errors"
	"reflect"

	"github.com/agentloom/loom/sandbox"
)

// Broker is what the tools ask of the jail that runs commands for them:
// clear one command, pool calls in their step's budget, say which layers
// the jail applies, record a security event, and guard a file a tool
// wrote against planted repository-controlled execution.
//
// *broker.Broker is the reference. A host may bring another jail; it
// keeps the contracts the sandbox vocabulary states.
type Broker interface {
	// Clear runs spec in the jail, or refuses it with an error holding a
	// *sandbox.Denial. A nil error comes with a non-nil Execution (made
	// by sandbox.NewExecution); the tools take one without as jail_failed.
	Clear(ctx context.Context, spec sandbox.CallSpec) (*sandbox.Execution, error)
	// Ledger is the budget every clearance is pooled in.
	Ledger() *sandbox.Ledger
	// Available reports the layers a command would get now.
	Available() sandbox.Enforcement
	// Audit records a security-relevant event; it never blocks.
	Audit(e sandbox.AuditEvent)
	// GuardToolWrite disarms git configuration, hooks and pointers that
	// a write to path beneath root made live, and lists what it did.
	GuardToolWrite(root, path string) ([]sandbox.Neutralisation, error)
}

// errNoExecution is a jail's Clear that returned neither an Execution
// nor an error: the tools fail closed on it (sandbox.DenialOf makes it
// jail_failed).
var errNoExecution = errors.New("the jail returned no execution and no error")

// jailOf is b, or nil when b holds a nil pointer (a host's nil
// *broker.Broker assigned to Call.Broker): such a Call runs no commands,
// as one whose Broker is nil.
func jailOf(b Broker) Broker {
	if b == nil {
		return nil
	}
	if v := reflect.ValueOf(b); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return b
}
