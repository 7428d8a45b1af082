package codemode

import (
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// expandPaths undoes groupedPaths: "a a/{b,c}" is a, a/b and a/c.
func expandPaths(s string) []string {
	var out []string
	for _, w := range strings.Fields(s) {
		root, braced, ok := strings.Cut(w, "/{")
		if !ok {
			out = append(out, w)
			continue
		}
		for _, rest := range strings.Split(strings.TrimSuffix(braced, "}"), ",") {
			out = append(out, root+"/"+rest)
		}
	}
	return out
}

// TestGroupedPathsLosesNothing: the description's compact standard
// package list spells out every path exactly once, in order, for the real
// allowlist and for any sorted list of paths.
func TestGroupedPathsLosesNothing(t *testing.T) {
	t.Parallel()
	std := StdPackages()
	got := groupedPaths(std)
	if back := expandPaths(got); !slices.Equal(back, std) {
		t.Fatalf("groupedPaths(StdPackages()) = %s\nexpands to %v", got, back)
	}
	if len(got) >= len(strings.Join(std, " ")) {
		t.Errorf("grouping saved nothing: %d bytes", len(got))
	}
	rapid.Check(t, func(t *rapid.T) {
		seg := rapid.StringMatching(`[a-c]{1,2}`)
		paths := rapid.SliceOfNDistinct(rapid.Custom(func(t *rapid.T) string {
			parts := rapid.SliceOfN(seg, 1, 3).Draw(t, "parts")
			return strings.Join(parts, "/")
		}), 0, 12, rapid.ID[string]).Draw(t, "paths")
		slices.Sort(paths)
		if back := expandPaths(groupedPaths(paths)); !slices.Equal(back, paths) && !(len(back) == 0 && len(paths) == 0) {
			t.Fatalf("groupedPaths(%v) = %q expands to %v", paths, groupedPaths(paths), back)
		}
	})
}
