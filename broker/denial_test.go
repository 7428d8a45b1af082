package broker

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentloom/loom/sandbox"
)

func TestDenialRendering(t *testing.T) {
	codes := []sandbox.DenialCode{
		sandbox.DenialRequirementsNotCovered, sandbox.DenialOutstandingCapReached, sandbox.DenialStepAborted,
		sandbox.DenialBudgetExpired, sandbox.DenialInvalidPolicy, sandbox.DenialUnconfinedRefused, sandbox.DenialJailFailed,
		sandbox.DenialLayerRequired, sandbox.DenialHostBusy, sandbox.DenialWorkspaceFenced, "novel_code",
	}
	seen := map[string]bool{}
	for _, c := range codes {
		d := &sandbox.Denial{Code: c, Reason: "because"}
		if !strings.Contains(d.Error(), string(c)) || !strings.Contains(d.Error(), "because") {
			t.Errorf("Error() %q lacks code or reason", d.Error())
		}
		s := d.Explain()
		if !strings.Contains(s, "because") || !strings.HasSuffix(s, ".") {
			t.Errorf("Explain() %q lacks the reason or is not a sentence", s)
		}
		if seen[s] {
			t.Errorf("two codes explain alike: %q", s)
		}
		seen[s] = true
	}
	d := &sandbox.Denial{Code: sandbox.DenialRequirementsNotCovered, Reason: "r", Wanted: []sandbox.Grant{
		{Kind: sandbox.GrantWritableRoot, Path: "/data"}, {Kind: sandbox.GrantNetwork},
	}}
	for _, want := range []string{"writable_root /data", "network"} {
		if !strings.Contains(d.Explain(), want) || !strings.Contains(d.Error(), want) {
			t.Errorf("denial does not name wanted grant %q: %q / %q", want, d.Explain(), d.Error())
		}
	}
	var nilD *sandbox.Denial
	if nilD.Error() == "" || nilD.Explain() != "" || nilD.Unwrap() != nil {
		t.Error("nil denial renders unexpectedly")
	}
}

func TestDenialErrorsIsAndAs(t *testing.T) {
	cause := &sandbox.PolicyError{Code: sandbox.PolicyRelativePath, Field: "protected[0]", Value: ".git"}
	d := sandbox.NewDenial(sandbox.DenialInvalidPolicy, "bad", cause)
	var err error = d
	if !errors.Is(err, &sandbox.Denial{Code: sandbox.DenialInvalidPolicy}) {
		t.Error("errors.Is by code failed")
	}
	if errors.Is(err, &sandbox.Denial{Code: sandbox.DenialJailFailed}) {
		t.Error("errors.Is matched another code")
	}
	var pe *sandbox.PolicyError
	if !errors.As(err, &pe) || pe != cause {
		t.Error("errors.As did not reach the cause")
	}
}

// denialIn returns the *Denial err holds (found with errors.As), or nil
// when err is nil or holds none.
func denialIn(err error) *sandbox.Denial {
	var d *sandbox.Denial
	if errors.As(err, &d) {
		return d
	}
	return nil
}

// denialCode returns the Code of the *Denial err holds, or "" when err is
// nil or holds none (so a refusal of another kind never matches a code).
func denialCode(err error) sandbox.DenialCode {
	if d := denialIn(err); d != nil {
		return d.Code
	}
	return ""
}

// TestRefusalsAreDenialsInErrors: every exported function that can
// refuse returns an error interface holding a *Denial, and a nil error
// when it does not refuse (never a nil *Denial in a non-nil interface).
func TestRefusalsAreDenialsInErrors(t *testing.T) {
	l := sandbox.NewLedger(nil)
	key := sandbox.StepKey{OpID: "op", StepID: "s"}
	tk, err := l.Admit(key, sandbox.Budget{MaxOutstanding: 1}, nil)
	if err != nil || tk == nil {
		t.Fatalf("first admission: %v, %v", tk, err)
	}
	_, err = l.Admit(key, sandbox.Budget{MaxOutstanding: 1}, nil)
	if denialCode(err) != sandbox.DenialOutstandingCapReached {
		t.Fatalf("admission over the cap: %v, want %s", err, sandbox.DenialOutstandingCapReached)
	}
	_, err = sandbox.Compose(sandbox.Policy{WritableRoots: []string{"/w"}}, sandbox.Policy{WritableRoots: []string{"/w"}}, nil)
	if err != nil {
		t.Fatalf("covered requirements: err = %#v, want a nil interface", err)
	}
	_, err = sandbox.Compose(sandbox.Policy{}, sandbox.Policy{WritableRoots: []string{"/w"}}, nil)
	if d := denialIn(err); d == nil || d.Code != sandbox.DenialRequirementsNotCovered || len(d.Wanted) != 1 {
		t.Fatalf("uncovered requirements: %v, want a denial wanting one grant", err)
	}
	_, err = newTestBroker(t, Options{}).Clear(t.Context(), sandbox.CallSpec{Policy: sandbox.Policy{WritableRoots: []string{"relative"}}, Argv: []string{"true"}})
	var pe *sandbox.PolicyError
	if denialCode(err) != sandbox.DenialInvalidPolicy || !errors.As(err, &pe) || pe.Code != sandbox.PolicyRelativePath {
		t.Fatalf("invalid policy: %v, want %s wrapping %s", err, sandbox.DenialInvalidPolicy, sandbox.PolicyRelativePath)
	}
}
