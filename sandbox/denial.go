package sandbox

import (
	"errors"
	"fmt"
	"strings"
)

// DenialCode is the stable, machine-readable reason a clearance was
// refused: a Denial's Code, a snake_case word no other code of the module
// uses. Programs switch on it; the strings never change meaning.
type DenialCode string

const (
	// DenialRequirementsNotCovered: the tool's requirements ask for a root
	// or network the base policy (plus this call's grants) does not give.
	// Denial.Wanted lists exactly the grants that would cover it.
	DenialRequirementsNotCovered DenialCode = "requirements_not_covered"
	// DenialOutstandingCapReached: the {operation, step} already has its
	// budget's maximum number of clearances in flight.
	DenialOutstandingCapReached DenialCode = "outstanding_cap_reached"
	// DenialStepAborted: the step (or its whole operation) was aborted;
	// nothing more is admitted under it.
	DenialStepAborted DenialCode = "step_aborted"
	// DenialBudgetExpired: the step's pooled wall deadline has passed.
	DenialBudgetExpired DenialCode = "budget_expired"
	// DenialInvalidPolicy: a policy or grant failed Validate; the wrapped
	// *PolicyError says which field and why.
	DenialInvalidPolicy DenialCode = "invalid_policy"
	// DenialUnconfinedRefused: no confinement layer is available and the
	// host did not accept an unconfined run.
	DenialUnconfinedRefused DenialCode = "unconfined_refused"
	// DenialJailFailed: the jail could not be set up for this command.
	DenialJailFailed DenialCode = "jail_failed"
	// DenialLayerRequired: a layer the host named in
	// broker.Options.RequiredLayers was not applied by the kernel, so the command
	// was not run.
	DenialLayerRequired DenialCode = "layer_required"
	// DenialHostBusy: the host-wide bound on live commands (or on the
	// jails' scratch memory) stayed full until the call's deadline.
	DenialHostBusy DenialCode = "host_busy"
	// DenialWorkspaceFenced: an earlier command left something in this
	// workspace the jail could not quarantine or neutralise; it runs
	// nothing more there until an operator clears it (the reason says how).
	DenialWorkspaceFenced DenialCode = "workspace_fenced"
)

// Denial is a refused clearance: a value, never a panic, that a host can
// switch on (Code), show a model (Explain) and, for
// DenialRequirementsNotCovered, hand to an operator (Wanted).
//
// Wanted, when non-empty, is exactly the set of grants that covers the
// shortfall: composing again with them added succeeds on that account.
type Denial struct {
	Code   DenialCode
	Reason string
	Wanted []Grant

	err error // the underlying cause, if any (e.g. a *PolicyError)
}

// NewDenial returns a denial with the given code and reason and, when
// cause is non-nil, wraps cause so errors.As can reach it.
func NewDenial(code DenialCode, reason string, cause error) *Denial {
	return &Denial{Code: code, Reason: reason, err: cause}
}

// Error renders "broker: <code>: <reason>" and, when Wanted is not empty,
// the grants that would cover it.
func (d *Denial) Error() string {
	if d == nil {
		return "broker: <nil denial>"
	}
	var b strings.Builder
	b.WriteString("broker: ")
	b.WriteString(string(d.Code))
	if d.Reason != "" {
		b.WriteString(": ")
		b.WriteString(d.Reason)
	}
	if len(d.Wanted) > 0 {
		b.WriteString(" (wanted: ")
		b.WriteString(grantList(d.Wanted))
		b.WriteString(")")
	}
	return b.String()
}

// ErrorCode returns the denial's Code as a string: the method set of
// package tool's CodedError, which reads every coded error of the module
// the same way. A nil *Denial has no code ("").
func (d *Denial) ErrorCode() string {
	if d == nil {
		return ""
	}
	return string(d.Code)
}

// Unwrap returns the denial's underlying cause, or nil.
func (d *Denial) Unwrap() error {
	if d == nil {
		return nil
	}
	return d.err
}

// Is reports whether target is a *Denial with the same Code, so
// errors.Is(err, &Denial{Code: DenialStepAborted}) works without string
// matching.
func (d *Denial) Is(target error) bool {
	t, ok := target.(*Denial)
	return ok && d != nil && t != nil && t.Code == d.Code
}

// Explain renders the model-facing sentence: what was refused and, when
// an operator approval could help, which grants would cover it.
func (d *Denial) Explain() string {
	if d == nil {
		return ""
	}
	var what string
	switch d.Code {
	case DenialRequirementsNotCovered:
		what = "Permission denied by the sandbox policy"
	case DenialOutstandingCapReached:
		what = "Too many commands are already running in this step"
	case DenialStepAborted:
		what = "This step was aborted; nothing more runs in it"
	case DenialBudgetExpired:
		what = "This step's time budget has run out"
	case DenialInvalidPolicy:
		what = "The sandbox policy is invalid"
	case DenialUnconfinedRefused:
		what = "No sandbox is available on this host and unconfined runs are not allowed"
	case DenialJailFailed:
		what = "The sandbox could not be set up for this command"
	case DenialLayerRequired:
		what = "This host requires a sandbox layer the kernel did not apply, so the command was not run"
	case DenialHostBusy:
		what = "Too many commands are running on this host; try again when one has finished"
	case DenialWorkspaceFenced:
		what = "Commands are stopped in this workspace until an operator clears it"
	default:
		what = "Refused by the broker (" + string(d.Code) + ")"
	}
	var b strings.Builder
	b.WriteString(what)
	if d.Reason != "" {
		b.WriteString(": ")
		b.WriteString(d.Reason)
	}
	b.WriteString(".")
	if len(d.Wanted) > 0 {
		b.WriteString(" An operator may approve: ")
		b.WriteString(grantList(d.Wanted))
		b.WriteString(".")
	}
	return b.String()
}

// String renders a grant as "<kind> <path>" for the root kinds and as the
// kind alone otherwise.
func (g Grant) String() string {
	if g.Path == "" {
		return string(g.Kind)
	}
	return fmt.Sprintf("%s %s", g.Kind, g.Path)
}

func grantList(gs []Grant) string {
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = g.String()
	}
	return strings.Join(parts, ", ")
}

// DenialOf returns the *Denial a refusal of Clear, Compose or
// Ledger.Admit holds (found with errors.As). It never returns nil for a
// non-nil err: an error that holds no denial, which those functions'
// contract rules out, is returned as a DenialJailFailed wrapping it, so a
// caller fails closed. For a nil err it returns nil.
func DenialOf(err error) *Denial {
	if err == nil {
		return nil
	}
	var d *Denial
	if errors.As(err, &d) {
		return d
	}
	return NewDenial(DenialJailFailed, err.Error(), err)
}
