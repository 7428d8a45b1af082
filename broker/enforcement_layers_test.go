package broker

import "testing"

func TestMissingLayer(t *testing.T) {
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
		if got := missingLayer(tc.required, tc.namespaces, layers); got != tc.want {
			t.Errorf("missingLayer(%v, %v) = %q, want %q", tc.required, tc.namespaces, got, tc.want)
		}
	}
}
