package tool

import (
	"context"
	"errors"
	"reflect"

	"github.com/agentloom/loom/internal/gitguard"
	"github.com/agentloom/loom/sandbox"
)

// Broker is the jail the tools run commands in. It clears one command,
// pools calls in their step's budget, says which layers it applies,
// records security events, and guards a file a tool wrote against
// planted repository-controlled execution.
//
// *broker.Broker is the reference. A host may bring another jail (a
// remote sandbox, say) for the tools that take a Call: the file tools,
// grep and foreground bash. The job plane, the language servers, stdio
// MCP servers and code mode take a *broker.Broker of their own.
//
// A jail keeps these duties:
//   - Clear validates spec.Policy (sandbox.Validate), admits the call on
//     Ledger() under spec.Key and spec.Budget and releases it when the
//     command settles, and passes the command only the environment
//     Policy.EnvAllow names.
//   - Every error Clear returns holds a *sandbox.Denial; a nil error
//     comes with a non-nil Execution.
//   - The command's whole tree is killed at spec.Timeout, the policy's
//     WallMs, the step's deadline and ctx's end, and at its output bound
//     (Settled.OutputLimited).
//   - The Execution is built with sandbox.NewExecution, fed through its
//     Feed, and settled exactly once, after the last output is sent.
//   - Enforcement names only layers the kernel applied; a call whose
//     spec.RequiredLayers are missing is refused DenialLayerRequired.
//   - Audit never blocks.
//   - GuardToolWrite disarms what a write made live; a jail without a
//     guard of its own delegates to GuardWriteAlone.
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

// GuardWriteAlone is the git guard for a write to path beneath root with
// no memory of earlier passes: what a file tool does when its call has
// no broker. The written file and every git directory holding it are
// checked: a git config loses the entries off the allowlist of inert
// keys, and a hook, pointer or config that git could run is moved aside.
// A failure is a *sandbox.Denial (DenialWorkspaceFenced) naming what
// could not be made safe; the host must not run git there until it is
// repaired.
func GuardWriteAlone(root, path string) ([]sandbox.Neutralisation, error) {
	done, err := gitguard.ToolWriteAlone(root, path)
	if err != nil {
		return done, gitguard.Refusal(err)
	}
	return done, nil
}

// guardToolWrite asks b to guard a write to path beneath root, or guards
// it alone without a broker.
func guardToolWrite(b Broker, root, path string) ([]sandbox.Neutralisation, error) {
	if b = jailOf(b); b != nil {
		return b.GuardToolWrite(root, path)
	}
	return GuardWriteAlone(root, path)
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
