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
