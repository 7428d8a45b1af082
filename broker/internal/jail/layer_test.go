package jail

import (
	"testing"

	"github.com/agentloom/loom/sandbox"
)

// TestMissingRequired: the first required layer not applied is named,
// with its reason or "not applied"; namespaces counts as applied when the
// helper has them.
func TestMissingRequired(t *testing.T) {
	layers := []sandbox.Layer{
		{Name: sandbox.LayerMounts, Reason: "no mount namespace"},
		{Name: sandbox.LayerSeccomp, Applied: true},
	}
	for _, tc := range []struct {
		required   []string
		namespaces bool
		want       string
	}{
		{nil, false, ""},
		{[]string{sandbox.LayerSeccomp}, false, ""},
		{[]string{sandbox.LayerMounts}, true, "mounts: no mount namespace"},
		{[]string{sandbox.LayerSeccomp, sandbox.LayerLandlock}, true, "landlock: not applied"},
		{[]string{sandbox.LayerNamespaces}, true, ""},
		{[]string{sandbox.LayerNamespaces}, false, "namespaces: not applied"},
	} {
		got := ""
		if m := MissingRequired(tc.required, tc.namespaces, layers); m != nil {
			got = m.Layer + ": " + m.Reason
		}
		if got != tc.want {
			t.Errorf("MissingRequired(%v, %v) = %q, want %q", tc.required, tc.namespaces, got, tc.want)
		}
	}
}
