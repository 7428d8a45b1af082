package history

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// sqliteModules are the module paths of the SQLite driver and the C
// runtime it is translated onto: what a host that brings its own index
// must not link.
var sqliteModules = []string{"modernc.org/sqlite", "modernc.org/libc"}

// sqliteDeps answers the packages of sqliteModules among pkg's
// dependencies, as go list -deps reports them.
func sqliteDeps(t *testing.T, pkg string) []string {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goBin, "list", "-deps", pkg).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatalf("go list -deps %s listed nothing", pkg)
	}
	var found []string
	for _, d := range deps {
		for _, m := range sqliteModules {
			if d == m || strings.HasPrefix(d, m+"/") {
				found = append(found, d)
			}
		}
	}
	return found
}

// TestHistoryLinksNoSQLite holds the package split: a host that imports
// history for its tools and brings its own index links no SQLite driver.
// The control is the reference index's package, which must link it, so
// a check that can never find the driver fails here too.
func TestHistoryLinksNoSQLite(t *testing.T) {
	for _, tc := range []struct {
		pkg  string
		want bool
	}{
		{"github.com/agentloom/loom/history", false},
		{"github.com/agentloom/loom/history/sqlite", true},
		{"github.com/agentloom/loom/history/postgres", false},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			t.Parallel()
			found := sqliteDeps(t, tc.pkg)
			if got := len(found) > 0; got != tc.want {
				t.Errorf("%s links %d SQLite package(s) %q; want linked = %v", tc.pkg, len(found), found, tc.want)
			}
		})
	}
}
