package search

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloom/loom/internal/search/searchtest"
)

// goSourceTree returns the Go distribution's source tree (on every
// machine that builds this module), resolved.
func goSourceTree(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	root, err := filepath.EvalSymlinks(filepath.Join(strings.TrimSpace(string(out)), "src"))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// differentialPatterns are searched over the Go source tree by both
// engines: literals, a case-insensitive literal (one with k and s, whose
// case forms leave ASCII), classes, ".", anchors, alternation, non-ASCII
// literals, and patterns that meet the tree's invalid UTF-8 (its
// compress and bzip2 test data). Each finds fewer lines than
// MaxScanMatches, so both engines find all of them.
var differentialPatterns = []Options{
	{Pattern: "Deprecated:"},
	{Pattern: "deprecated", CaseInsensitive: true},
	{Pattern: "kelvin|sort\\.slice", CaseInsensitive: true},
	{Pattern: `[A-Z][a-z]+Error\b`},
	{Pattern: `\d{4}-\d{2}-\d{2}`},
	{Pattern: `func \(\w+ \*\w+\) Close`},
	{Pattern: `a.b.c.d`},
	{Pattern: `^func main\(\) \{$`},
	{Pattern: `^// Package`},
	{Pattern: `TODO|FIXME`},
	{Pattern: `\bnil, err\b`},
	{Pattern: "世界"},
	{Pattern: "é"},
	{Pattern: `\x{FFFD}`},
	{Pattern: `[^\x00-\x7F]{4}`},
}

// TestEnginesAgreeOnTheGoSourceTree holds the engines to each other on a
// real tree: for every differential pattern, the files and matching
// lines (path, number and text) are the same.
func TestEnginesAgreeOnTheGoSourceTree(t *testing.T) {
	searchtest.RequireRipgrep(t)
	root := goSourceTree(t)
	for _, o := range differentialPatterns {
		t.Run(fmt.Sprintf("%s/%v", o.Pattern, o.CaseInsensitive), func(t *testing.T) {
			g, r := goRun(t, root, o), rgRunAs(t, root, o, OperandDir)
			if g.Stopped || r.Stopped {
				t.Fatalf("the search stopped at MaxScanMatches (go %v, ripgrep %v): pick a pattern that finds fewer lines", g.Stopped, r.Stopped)
			}
			if g.Matches == 0 {
				t.Fatalf("no match in the Go source tree: the pattern tests nothing")
			}
			if diff := cmp.Diff(Render(r.Hits, 0, nil), Render(g.Hits, 0, nil)); diff != "" {
				t.Fatalf("engines differ (-ripgrep +go):\n%s", diff)
			}
			if g.Matches != r.Matches || g.Files != r.Files {
				t.Fatalf("counts differ: go %d lines in %d files, ripgrep %d in %d", g.Matches, g.Files, r.Matches, r.Files)
			}
		})
	}
}
