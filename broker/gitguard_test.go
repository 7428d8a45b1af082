package broker

import (
	"github.com/agentloom/loom/internal/gitguard"
	"github.com/agentloom/loom/sandbox"

	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
			if err := sandbox.Validate(sandbox.Policy{Protected: got, WritableRoots: []string{ws}}); err != nil {
				t.Errorf("protected set with the workspace writable is invalid: %v", err)
			}
		})
	}
	got := DefaultProtected("rel/ws")
	if err := sandbox.Validate(sandbox.Policy{Protected: got}); err == nil {
		t.Fatalf("relative workspace gave a valid protected set %v", got)
	}
}

// TestGitGuardLeavesUnguardedRoots: a root the policy lists as
// unguarded (a toolchain cache) is neither swept nor fenced: a config
// with an exec key and modules nested past the fence's depth stay as the
// command left them there, while the same plant in the guarded workspace
// beside it (the control) is neutralised.
func TestGitGuardLeavesUnguardedRoots(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, cache := filepath.Join(dir, "ws"), filepath.Join(dir, "cache")
	for _, d := range []string{ws, cache} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b := newTestBroker(t, Options{})
	p := sandbox.Policy{WritableRoots: []string{ws, cache}, Protected: DefaultProtected(ws), Unguarded: []string{cache}}
	h, d := b.guardGit(p)
	if d != nil {
		t.Fatal(d)
	}
	git := func(dir string, args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		cmd.Env = []string{"HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	for _, root := range []string{ws, cache} {
		git(root, "init", "-q", "lib")
		git(filepath.Join(root, "lib"), "config", "core.fsmonitor", "evil")
	}
	deep := filepath.Join(cache, "plant", ".git")
	for i := range gitguard.MaxModuleDepth + 2 {
		deep = filepath.Join(deep, "modules", fmt.Sprint("n", i))
	}
	if err := os.MkdirAll(filepath.Join(deep, "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(deep, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	var s sandbox.Settled
	settleGit(h, &s)
	if cfg, _ := os.ReadFile(filepath.Join(ws, "lib/.git/config")); strings.Contains(string(cfg), "fsmonitor") {
		t.Fatalf("control: the guarded workspace kept the plant: %+v", s.GitNeutralised)
	}
	if cfg, _ := os.ReadFile(filepath.Join(cache, "lib/.git/config")); !strings.Contains(string(cfg), "fsmonitor") {
		t.Errorf("the unguarded root was swept: %+v", s.GitNeutralised)
	}
	// The next command is not fenced by what the unguarded root holds.
	h2, d := b.guardGit(p)
	if d != nil {
		t.Fatalf("an unguarded root fenced the next command: %v", d)
	}
	h2.Abandon()
}
