// Package guardtest holds the git guard's test fixtures that the broker's
// tests and the guard's own share: the laundering plant and the ways a
// command points the host's git at it, and the benchmarks' workspace.
package guardtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// LaunderScript builds, with git's plumbing alone (the work tree is
// never touched), a commit on the branch "agent" whose tree holds a git
// directory: HEAD, objects/, refs/ and a config whose core.fsmonitor is
// payload (a shell word, expanded by the script's shell), in the
// directory at of the tree, or at its top when at is "" (then the
// config names the directory above as its work tree, a value the
// allowlist keeps: git takes a git directory it finds by its files for
// a bare one, and runs status only in the work tree its config names).
// Run in the repository.
func LaunderScript(at, payload string) string {
	top, worktree := `"$e"`, ""
	if at == "" {
		worktree = `\tworktree = ..\n`
	}
	script := `h=$(printf 'ref: refs/heads/main\n' | git hash-object -w --stdin) && ` +
		`c=$(printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n` + worktree + `\tfsmonitor = "%s"\n' ` + payload + ` | git hash-object -w --stdin) && ` +
		`k=$(printf '' | git hash-object -w --stdin) && ` +
		`d=$(printf '100644 blob %s\t.keep\n' "$k" | git mktree) && ` +
		`e=$(printf '100644 blob %s\tHEAD\n100644 blob %s\tconfig\n040000 tree %s\tobjects\n040000 tree %s\trefs\n' "$h" "$c" "$d" "$d" | git mktree) && `
	if at != "" {
		script += `t=$(printf '040000 tree %s\t` + at + `\n' "$e" | git mktree) && `
		top = `"$t"`
	}
	return script + `git update-ref refs/heads/agent "$(git commit-tree -p HEAD -m plant ` + top + `)"`
}

// LaunderPointer is one way a command leads the host's git to a git
// directory: the command's script, and the host's git run that meets
// it.
type LaunderPointer struct {
	Name   string
	Script string
	Host   []string
}

// LaunderPointers are the ways a command leads the host's git to a git
// directory the host's own checkout wrote (evil), each one command's
// writes in the workspace, with the host's git run that meets it.
func LaunderPointers() []LaunderPointer {
	status := []string{"-C", "y", "status", "--short"}
	return []LaunderPointer{
		{"gitfile", `mkdir y && echo 'gitdir: ../evil' > y/.git`, status},
		{"git_link", `mkdir y && ln -s ../evil y/.git`, status},
		{"commondir", `mkdir -p y/.git && echo 'ref: refs/heads/main' > y/.git/HEAD && echo ../../evil > y/.git/commondir`, status},
		// git's submodule update takes a link modules/<name> for the
		// submodule's git directory and checks the submodule out there.
		{"modules_link", `mkdir -p .git/modules && ln -s ../../evil .git/modules/x && ` +
			`printf '[submodule "x"]\n\tpath = x\n\turl = ./nowhere\n' > .gitmodules && ` +
			`git update-index --add --cacheinfo "160000,$(git rev-parse HEAD),x"`,
			[]string{"submodule", "update", "--init"}},
	}
}

// BenchDirs is the size of the workspace the git guard's benchmarks run
// on: this many directories (100 top-level ones of 49 each, plus a
// repository and three nested ones).
const BenchDirs = 5000

// BenchWorkspace builds a repository of BenchDirs directories with three
// nested repositories.
func BenchWorkspace(b testing.TB) string {
	b.Helper()
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	for i := 0; i < 100; i++ {
		for j := 0; j < 49; j++ {
			if err := os.MkdirAll(filepath.Join(ws, fmt.Sprintf("d%03d", i), fmt.Sprintf("e%02d", j)), 0o755); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, r := range []string{".", "d001/lib", "d050/vendor/x", "d099/e48/y"} {
		cmd := exec.Command("git", "init", "-q", filepath.Join(ws, r))
		cmd.Env = []string{"HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin"}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git init: %v %s", err, out)
		}
	}
	return ws
}
