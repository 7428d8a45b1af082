package broker

import (
	"errors"
	"strings"
	"testing"
)

func TestDenialRendering(t *testing.T) {
	codes := []DenialCode{
		DenialRequirementsNotCovered, DenialOutstandingCapReached, DenialStepAborted,
		DenialBudgetExpired, DenialInvalidPolicy, DenialUnconfinedRefused, DenialJailFailed,
		DenialLayerRequired, DenialHostBusy, DenialWorkspaceFenced, "novel_code",
	}
	seen := map[string]bool{}
	for _, c := range codes {
		d := &Denial{Code: c, Reason: "because"}
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
	d := &Denial{Code: DenialRequirementsNotCovered, Reason: "r", Wanted: []Grant{
		{Kind: GrantWritableRoot, Path: "/data"}, {Kind: GrantNetwork},
	}}
	for _, want := range []string{"writable_root /data", "network"} {
		if !strings.Contains(d.Explain(), want) || !strings.Contains(d.Error(), want) {
			t.Errorf("denial does not name wanted grant %q: %q / %q", want, d.Explain(), d.Error())
		}
	}
	var nilD *Denial
	if nilD.Error() == "" || nilD.Explain() != "" || nilD.Unwrap() != nil {
		t.Error("nil denial renders unexpectedly")
	}
}

func TestDenialErrorsIsAndAs(t *testing.T) {
	cause := &PolicyError{Code: PolicyRelativePath, Field: "protected[0]", Value: ".git"}
	d := NewDenial(DenialInvalidPolicy, "bad", cause)
	var err error = d
	if !errors.Is(err, &Denial{Code: DenialInvalidPolicy}) {
		t.Error("errors.Is by code failed")
	}
	if errors.Is(err, &Denial{Code: DenialJailFailed}) {
		t.Error("errors.Is matched another code")
	}
	var pe *PolicyError
	if !errors.As(err, &pe) || pe != cause {
		t.Error("errors.As did not reach the cause")
	}
}

// denialIn returns the *Denial err holds (found with errors.As), or nil
// when err is nil or holds none.
func denialIn(err error) *Denial {
	var d *Denial
	if errors.As(err, &d) {
		return d
	}
	return nil
}

// denialCode returns the Code of the *Denial err holds, or "" when err is
// nil or holds none (so a refusal of another kind never matches a code).
func denialCode(err error) DenialCode {
	if d := denialIn(err); d != nil {
		return d.Code
	}
	return ""
}

// TestRefusalsAreDenialsInErrors: every exported function that can
// refuse returns an error interface holding a *Denial, and a nil error
// when it does not refuse (never a nil *Denial in a non-nil interface).
func TestRefusalsAreDenialsInErrors(t *testing.T) {
	l := NewLedger(nil)
	key := StepKey{OpID: "op", StepID: "s"}
	tk, err := l.Admit(key, Budget{MaxOutstanding: 1}, nil)
	if err != nil || tk == nil {
		t.Fatalf("first admission: %v, %v", tk, err)
	}
	_, err = l.Admit(key, Budget{MaxOutstanding: 1}, nil)
	if denialCode(err) != DenialOutstandingCapReached {
		t.Fatalf("admission over the cap: %v, want %s", err, DenialOutstandingCapReached)
	}
	_, err = Compose(Policy{WritableRoots: []string{"/w"}}, Policy{WritableRoots: []string{"/w"}}, nil)
	if err != nil {
		t.Fatalf("covered requirements: err = %#v, want a nil interface", err)
	}
	_, err = Compose(Policy{}, Policy{WritableRoots: []string{"/w"}}, nil)
	if d := denialIn(err); d == nil || d.Code != DenialRequirementsNotCovered || len(d.Wanted) != 1 {
		t.Fatalf("uncovered requirements: %v, want a denial wanting one grant", err)
	}
	_, err = newTestBroker(t, Options{}).Clear(t.Context(), CallSpec{Policy: Policy{WritableRoots: []string{"relative"}}, Argv: []string{"true"}})
	var pe *PolicyError
	if denialCode(err) != DenialInvalidPolicy || !errors.As(err, &pe) || pe.Code != PolicyRelativePath {
		t.Fatalf("invalid policy: %v, want %s wrapping %s", err, DenialInvalidPolicy, PolicyRelativePath)
	}
}
