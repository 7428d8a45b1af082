package broker

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDefaultProtectedValidates: what DefaultProtected lists for each
// layout it covers is a valid protected set beside the workspace as a
// writable root, and a relative workspace yields one Validate refuses
// (failing closed). What it lists is gitguard's TestDefaultProtected.
func TestDefaultProtectedValidates(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"no repository":       nil,
		"ordinary repository": {"ws/.git/HEAD": "ref: refs/heads/main\n", "ws/.git/hooks/": "", "ws/.git/config": "[core]\n"},
		"linked worktree": {
			"main/.git/HEAD":                   "ref: refs/heads/main\n",
			"main/.git/config":                 "[core]\n",
			"main/.git/worktrees/wt/HEAD":      "ref: refs/heads/wt\n",
			"main/.git/worktrees/wt/commondir": "../..\n",
			"ws/.git":                          "gitdir: ../main/.git/worktrees/wt\n",
		},
		"submodules": {
			"ws/.git/HEAD":                           "ref: refs/heads/main\n",
			"ws/.git/modules/lib/HEAD":               "x\n",
			"ws/.git/modules/lib/modules/inner/HEAD": "x\n",
			"ws/.git/modules/vendor/dep/HEAD":        "x\n",
			"ws/.git/modules/vendor/dep/config":      "[core]\n\tworktree = ../../../../vendor/dep\n\thooksPath = .hooks\n",
		},
		"hooksPath and includes": {
			"ws/.git/HEAD":      "x\n",
			"ws/.git/config":    "[core]\n\thooksPath = .husky/_\n[include]\n\tpath = extra.cfg\n",
			"ws/.git/extra.cfg": "[core]\nhookspath=/abs/hooks2\n",
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			for rel, content := range files {
				p := filepath.Join(dir, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if rel[len(rel)-1] == '/' {
					continue
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ws := filepath.Join(dir, "ws")
			got := DefaultProtected(ws)
			if err := Validate(Policy{Protected: got, WritableRoots: []string{ws}}); err != nil {
				t.Errorf("protected set with the workspace writable is invalid: %v", err)
			}
		})
	}
	got := DefaultProtected("rel/ws")
	if err := Validate(Policy{Protected: got}); err == nil {
		t.Fatalf("relative workspace gave a valid protected set %v", got)
	}
}
