package job

import (
	"fmt"
	"strings"
	"testing"
)

// TestPermissionRootsAreBounded: each of permissions' root lists holds at
// most maxPermissionRoots roots; one more is refused before any root is
// resolved, naming the bound, so the refusal stays bounded too.
func TestPermissionRootsAreBounded(t *testing.T) {
	t.Parallel()
	c := bashCall(t, false)
	roots := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s/r%d", c.Workspace, i)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		perm Permissions
		ok   bool
	}{
		{"readable at the bound", Permissions{ReadableRoots: roots(maxPermissionRoots)}, true},
		{"readable one past", Permissions{ReadableRoots: roots(maxPermissionRoots + 1)}, false},
		{"writable one past", Permissions{WritableRoots: roots(maxPermissionRoots + 1)}, false},
	} {
		_, err := bashPolicyFor(c, &tc.perm)
		switch {
		case tc.ok && err != nil && strings.Contains(err.Error(), "at most"):
			t.Errorf("%s: refused: %v", tc.name, err)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), fmt.Sprintf("at most %d", maxPermissionRoots))):
			t.Errorf("%s: %v, want the bound named", tc.name, err)
		}
	}
}
