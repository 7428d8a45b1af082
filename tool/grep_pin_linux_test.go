package tool

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/internal/search"
	"github.com/agentloom/loom/internal/search/searchtest"
)

// TestGrepRipgrepRefusesARootThatChangedAfterResolution hands the
// ripgrep engine roots as a swap leaves them after resolution (a link at
// the root or at an ancestor, for a directory and for a file): each is
// refused as path_changed with nothing searched, by the harness (a link
// at the root, any link on a file's path) or by the check in ripgrep's
// jail (a directory reached through an ancestor link; the run then
// carries its enforcement report). A root with shell metacharacters in
// its name is searched. Control: the invocation that named the root as
// ripgrep's argument follows every one of those links to the needle.
func TestGrepRipgrepRefusesARootThatChangedAfterResolution(t *testing.T) {
	t.Parallel()
	searchtest.RequireRipgrep(t)
	c := grepCall(t, map[string]string{
		"real/sub/n.txt":            "needle\n",
		"real/f.txt":                "needle\n",
		"real/we ird $x;`id`/n.txt": "needle\n",
	}, true)
	defer c.Broker.(*broker.Broker).Close()
	ws := c.Workspace
	for link, target := range map[string]string{"l": "real", "lsub": "real/sub", "lf": "real/f.txt"} {
		if err := os.Symlink(filepath.Join(ws, target), filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	rg := ripgrepPath(c)
	o := search.Options{Pattern: "needle", IgnoreRoot: ws, Protected: protectedForms(c.Base.Protected)}
	for _, tt := range []struct {
		root     string
		changed  bool
		inJail   bool   // ripgrep's jail ran (refused there, or searched)
		wantFile string // the one file with a hit, for a search that runs
	}{
		{root: "l/sub", changed: true, inJail: true},
		{root: "lsub", changed: true},
		{root: "l/f.txt", changed: true},
		{root: "lf", changed: true},
		{root: "real/sub", inJail: true, wantFile: "real/sub/n.txt"},
		{root: "real/f.txt", inJail: true, wantFile: "real/f.txt"},
		{root: "real/we ird $x;`id`", inJail: true, wantFile: "real/we ird $x;`id`/n.txt"},
	} {
		root := filepath.Join(ws, tt.root)
		p, d := ripgrepPolicy(c, rg, root, o)
		if d != nil {
			t.Fatalf("%s: ripgrep cannot be jailed: %v", tt.root, d)
		}
		r := runRipgrep(context.Background(), c, rg, root, p, o)
		if (r.enf != nil) != tt.inJail {
			t.Errorf("%s: enforcement report %v, want one: %v", tt.root, r.enf != nil, tt.inJail)
		}
		if tt.changed {
			if !errors.Is(r.err, errPathChanged) || r.failCode() != CodePathChanged || len(r.res.Hits) != 0 {
				t.Errorf("%s: err %v (code %s), %d hits; want path_changed and nothing searched", tt.root, r.err, r.failCode(), len(r.res.Hits))
			}
			// Control: named as ripgrep's argument, the root is followed.
			if res := unpinnedRipgrep(t, c, rg, root, o); res.Matches != 1 {
				t.Errorf("%s: the unpinned invocation found %d matches, want the needle through the link", tt.root, res.Matches)
			}
			continue
		}
		want := filepath.Join(ws, tt.wantFile)
		if r.err != nil || r.res.Files != 1 || r.res.Hits[0].Path != want {
			t.Errorf("%s: err %v, result %+v; want one hit in %s", tt.root, r.err, r.res, want)
		}
	}
}
