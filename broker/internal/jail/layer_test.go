package jail

import "testing"

// TestMissingRequired: the first required layer not applied is named,
// with its reason or "not applied"; namespaces counts as applied when the
// helper has them.
func TestMissingRequired(t *testing.T) {
	layers := []Layer{
		{Name: LayerMounts, Reason: "no mount namespace"},
		{Name: LayerSeccomp, Applied: true},
	}
	for _, tc := range []struct {
		required   []string
		namespaces bool
		want       string
	}{
		{nil, false, ""},
		{[]string{LayerSeccomp}, false, ""},
		{[]string{LayerMounts}, true, "mounts: no mount namespace"},
		{[]string{LayerSeccomp, LayerLandlock}, true, "landlock: not applied"},
		{[]string{LayerNamespaces}, true, ""},
		{[]string{LayerNamespaces}, false, "namespaces: not applied"},
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
