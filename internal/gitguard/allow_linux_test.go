//go:build linux

package gitguard

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentloom/loom/sandbox"
)

// TestGitWorktreeInert: a core.worktree value is kept only where it
// names a real directory beneath the root that is no git directory,
// lies in none and holds no protected path but inside a .git.
func TestGitWorktreeInert(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, outside := filepath.Join(dir, "ws"), filepath.Join(dir, "outside")
	for _, d := range []string{".git/modules/sub", "sub", "lib/.git", "bare/objects", "plain/in", "guarded/x", "holder/p"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(ws, "bare/HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "afile"), nil, 0o644)
	os.Symlink("sub", filepath.Join(ws, "inlink"))
	os.Symlink(outside, filepath.Join(ws, "outlink"))
	root, err := openDirRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	s := newGitSweep(root, ws)
	s.skip["guarded"] = true
	s.skip["holder/p/secret"] = true
	s.skip["plain/in/.git/config"] = true
	tests := []struct {
		gitDir, value string
		want          bool
	}{
		{".git/modules/sub", "../../../sub", true}, // what git submodule add writes
		{".git/modules/sub", "../../../missing", true},
		{".git/modules/sub", "../../../missing/deeper", true},
		{".git/modules/sub", ws + "/sub", true},
		{".git/modules/sub", ws + "//sub/", true},
		{"lib/.git", "../../plain", true}, // holds a protected path only inside a .git
		{"lib/.git", "../../plain/in", true},
		{"lib/.git", "..", true},
		{"lib/.git", "../..", false}, // the root holds protected paths outside any .git
		{".git/modules/sub", "", false},
		{".git/modules/sub", outside, false},
		{".git/modules/sub", "/", false},
		{".git/modules/sub", dir, false},
		{".git/modules/sub", ws + "/../outside", false},
		{".git/modules/sub", "../../../../outside", false},
		{".git/modules/sub", "../../../inlink", false},
		{".git/modules/sub", "../../../outlink", false},
		{".git/modules/sub", "../../../outlink/x", false},
		{".git/modules/sub", "../../../afile", false},
		{".git/modules/sub", "../../hooks", false},
		{".git/modules/sub", ".", false},
		{".git/modules/sub", "../../../lib/.git", false},
		{".git/modules/sub", "../../../lib/.GIT/x", false},
		{".git/modules/sub", "../../../bare", false},
		{".git/modules/sub", "../../../bare/objects", false},
		{".git/modules/sub", "../../../missing/../sub", false},
		{".git/modules/sub", "../../../guarded", false},
		{".git/modules/sub", "../../../guarded/x", false},
		{".git/modules/sub", "../../../holder", false},
	}
	for _, tt := range tests {
		if got := s.worktreeInert(tt.gitDir, tt.value); got != tt.want {
			t.Errorf("worktreeInert(%q, %q) = %v, want %v", tt.gitDir, tt.value, got, tt.want)
		}
	}
}

// TestGitGuardKeepsWhatToolsWrite: what git init, clone (plain, bare,
// mirror, shallow, sha256, separate git directory, recursing into
// submodules), submodule add and absorbgitdirs, worktree add,
// sparse-checkout, remote add and branch --set-upstream-to write, and
// what cargo new writes where cargo runs, is all on the allowlist:
// nothing is neutralised, now or at the next command.
func TestGitGuardKeepsWhatToolsWrite(t *testing.T) {
	t.Parallel()
	w := newGuardWorld(t)
	w.git(w.ws, "init", "-q", "up")
	up := filepath.Join(w.ws, "up")
	w.write("up/a.txt", "a\n")
	w.git(up, "add", "a.txt")
	w.git(up, "commit", "-q", "-m", "a")
	steps := [][]string{
		{".", "init", "-q", "plain"},
		{".", "init", "-q", "--object-format=sha256", "s256"},
		{".", "init", "-q", "--bare", "bare.git"},
		{".", "init", "-q", "--separate-git-dir", filepath.Join(w.ws, "sep.git"), "sepwt"},
		{".", "clone", "-q", "up", "clone"},
		{".", "clone", "-q", "--bare", "up", "cloneb.git"},
		{".", "clone", "-q", "--mirror", "up", "clonem.git"},
		{".", "clone", "-q", "--depth", "1", "file://" + up, "shallow"},
		{".", "clone", "-q", "--separate-git-dir", filepath.Join(w.ws, "sepc.git"), "up", "sepcwt"},
		{"up", "-c", "protocol.file.allow=always", "submodule", "add", "-q", "../clone", "sub"},
		{"up", "commit", "-q", "-m", "sub"},
		{".", "-c", "protocol.file.allow=always", "clone", "-q", "--recurse-submodules", "up", "rec"},
		{"clone", "-c", "protocol.file.allow=always", "submodule", "add", "-q", "../up", "inner"},
		{"clone", "submodule", "absorbgitdirs"},
		{"clone", "worktree", "add", "-q", "../wt"},
		{"clone", "config", "extensions.worktreeConfig", "true"},
		{"clone", "worktree", "add", "-q", "../wt2"},
		{"wt2", "sparse-checkout", "set", "--cone", "a"},
		{"plain", "remote", "add", "-t", "main", "o", "https://example.invalid/x"},
		{"plain", "config", "user.email", "a@a"},
		{"plain", "config", "pull.rebase", "false"},
		{"shallow", "branch", "-q", "--set-upstream-to", "origin/main"},
	}
	s, d := w.command(func() {
		for _, st := range steps {
			w.git(filepath.Join(w.ws, st[0]), st[1:]...)
		}
		cargoNew(t, filepath.Join(w.ws, "krate"))
	})
	if d != nil {
		t.Fatal(d)
	}
	if len(s.GitNeutralised) != 0 || len(s.ProtectedCreated) != 0 {
		t.Errorf("what git wrote was neutralised: %+v %+v", s.GitNeutralised, s.ProtectedCreated)
	}
	for _, wt := range []string{"clone", "up/sub", "rec/sub", "clone/inner", "wt", "wt2", "sepwt", "sepcwt"} {
		w.git(filepath.Join(w.ws, wt), "status", "--short")
	}
	if s, d = w.command(nil); d != nil || len(s.GitNeutralised) != 0 {
		t.Errorf("next command: %v %+v", d, s.GitNeutralised)
	}
}

// cargoNew runs cargo new in dir, where cargo can run (it writes its own
// git config through libgit2); it does nothing elsewhere.
func cargoNew(t *testing.T, dir string) {
	if _, err := exec.LookPath("cargo"); err != nil {
		t.Log("no cargo: cargo new not covered")
		return
	}
	cmd := exec.Command("cargo", "new", "-q", "--vcs", "git", dir)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("cargo new does not run here: %v %s", err, out)
		return
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "config")); err != nil {
		t.Errorf("cargo new made no repository: %v", err)
	}
}

// TestGitGuardRemovesUnlistedKeysEverywhere: in every file git reads
// configuration from inside a repository (a git directory's config and
// config.worktree, a linked worktree's config.worktree, a submodule's
// under modules/, a bare repository's, the common directory a
// commondir names), entries off the allowlist are removed and named,
// and allowed ones stay.
func TestGitGuardRemovesUnlistedKeysEverywhere(t *testing.T) {
	t.Parallel()
	w := newGuardWorld(t)
	plant := "[trailer \"x\"]\n\tcmd = evil\n[tar \"tgz\"]\n\tcommand = evil\n[core]\n\tbare = false\n\tworktree = /\n[foo \"bar\"]\n\tcommand = evil\n[user]\n\tname = a\n"
	removed := []string{"trailer.x.cmd", "tar.tgz.command", "core.worktree", "foo.bar.command"}
	files := []string{
		"lib/.git/config", "lib/.git/config.worktree",
		"lib/.git/worktrees/w/config.worktree",
		"lib/.git/modules/x/config", "lib/.git/modules/x/config.worktree",
		"lib/.git/modules/a/b/config", // a module name with a slash
		"bare/config",
		"common/config",
	}
	s, d := w.command(func() {
		w.git(w.ws, "init", "-q", "lib")
		w.write("lib/.git/worktrees/w/HEAD", "ref: refs/heads/main\n")
		w.write("lib/.git/worktrees/w/commondir", "../..\n")
		for _, m := range []string{"x", "a/b"} {
			w.write("lib/.git/modules/"+m+"/HEAD", "ref: refs/heads/main\n")
			os.MkdirAll(filepath.Join(w.ws, "lib/.git/modules", m, "objects"), 0o755)
		}
		w.write("bare/HEAD", "ref: refs/heads/main\n")
		os.MkdirAll(filepath.Join(w.ws, "bare/objects"), 0o755)
		w.write("linked/.git/HEAD", "ref: refs/heads/main\n")
		w.write("linked/.git/commondir", "../../common\n")
		w.write("common/HEAD", "ref: refs/heads/main\n")
		os.MkdirAll(filepath.Join(w.ws, "common/objects"), 0o755)
		for _, f := range files {
			w.write(f, plant)
		}
	})
	if d != nil {
		t.Fatal(d)
	}
	for _, f := range files {
		cfg := w.read(f)
		for _, k := range []string{"cmd", "command", "worktree"} {
			if strings.Contains(cfg, k) {
				t.Errorf("%s kept %s:\n%s", f, k, cfg)
			}
		}
		if !strings.Contains(cfg, "name = a") || !strings.Contains(cfg, "bare = false") {
			t.Errorf("%s lost an allowed entry:\n%s", f, cfg)
		}
		i := slices.IndexFunc(s.GitNeutralised, func(n sandbox.Neutralisation) bool { return n.Path == filepath.Join(w.ws, f) })
		if i < 0 {
			t.Errorf("%s not reported: %+v", f, s.GitNeutralised)
		} else if got := s.GitNeutralised[i].Removed; !slices.Equal(got, removed) {
			t.Errorf("%s: removed %q, want %q", f, got, removed)
		}
	}
}

// TestGitGuardRejudgesWorktree: a submodule's core.worktree is kept
// while it names the submodule's directory; a later command that swaps
// that directory for a link out of the root (without touching the
// config) has it removed, so the host's git checks nothing out there.
// Control: the same layout unguarded, where the host's git writes the
// committed file through the link.
func TestGitGuardRejudgesWorktree(t *testing.T) {
	t.Parallel()
	layout := func(w *guardWorld) {
		w.git(w.ws, "init", "-q", "up")
		w.write("up/pwned", "ran\n")
		w.git(filepath.Join(w.ws, "up"), "add", "pwned")
		w.git(filepath.Join(w.ws, "up"), "commit", "-q", "-m", "a")
		w.git(w.ws, "init", "-q", "top")
		w.git(filepath.Join(w.ws, "top"), "-c", "protocol.file.allow=always", "submodule", "add", "-q", "../up", "sub")
	}
	swap := func(w *guardWorld, outside string) {
		os.RemoveAll(filepath.Join(w.ws, "top/sub"))
		if err := os.Symlink(outside, filepath.Join(w.ws, "top/sub")); err != nil {
			t.Fatal(err)
		}
	}
	hostReset := func(w *guardWorld) {
		cmd := exec.Command("git", "-C", filepath.Join(w.ws, "top/.git/modules/sub"), "reset", "-q", "--hard")
		cmd.Env = hostGitEnv(t)
		cmd.Run() // fails where core.worktree is gone: no work tree
	}
	run := func(guarded bool) (wrote bool, s settled) {
		w := newGuardWorld(t)
		outside := filepath.Join(filepath.Dir(w.ws), "outside")
		os.MkdirAll(outside, 0o755)
		if guarded {
			s1, d := w.command(func() { layout(w) })
			if d != nil || len(s1.GitNeutralised) != 0 {
				t.Fatalf("submodule add: %v %+v", d, s1.GitNeutralised)
			}
			var d2 *Error
			if s, d2 = w.command(func() { swap(w, outside) }); d2 != nil {
				t.Fatal(d2)
			}
		} else {
			layout(w)
			swap(w, outside)
		}
		hostReset(w)
		_, err := os.Lstat(filepath.Join(outside, "pwned"))
		return err == nil, s
	}
	if !(func() bool { wrote, _ := run(false); return wrote })() {
		t.Error("control: unguarded, the host's git did not write through the link; the case shows nothing")
	}
	wrote, s := run(true)
	if wrote {
		t.Error("guarded: the host's git wrote outside the root")
	}
	if len(s.GitNeutralised) != 1 || !slices.Equal(s.GitNeutralised[0].Removed, []string{"core.worktree"}) {
		t.Errorf("GitNeutralised = %+v, want core.worktree removed from the submodule's config", s.GitNeutralised)
	}
}

// TestGitGuardConfigSizeBound: a config a command wrote of exactly
// MaxConfigBytes is read and loses what the allowlist does not keep;
// one byte more and it is moved aside whole, unread.
func TestGitGuardConfigSizeBound(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		size  int
		aside bool
	}{{"at", MaxConfigBytes, false}, {"past", MaxConfigBytes + 1, true}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newGuardWorld(t)
			head := "[core]\n\tbare = false\n[trailer \"x\"]\n\tcmd = evil\n#"
			cfg := head + strings.Repeat("c", tt.size-len(head)-1) + "\n"
			s, d := w.command(func() {
				w.git(w.ws, "init", "-q", "lib")
				// Renamed into place whole: written in place, the guard's
				// live pass could meet it half written, under the bound,
				// and rewrite it before settlement judges its size.
				w.write("lib/.git/config.new", cfg)
				if err := os.Rename(filepath.Join(w.ws, "lib/.git/config.new"), filepath.Join(w.ws, "lib/.git/config")); err != nil {
					t.Fatal(err)
				}
			})
			if d != nil {
				t.Fatal(d)
			}
			if len(s.GitNeutralised) != 1 {
				t.Fatalf("GitNeutralised = %+v", s.GitNeutralised)
			}
			n := s.GitNeutralised[0]
			if got := n.MovedTo != ""; got != tt.aside {
				t.Errorf("moved aside = %v, want %v (%+v)", got, tt.aside, n)
			}
			if !tt.aside && (!slices.Equal(n.Removed, []string{"trailer.x.cmd"}) || strings.Contains(w.read("lib/.git/config"), "cmd")) {
				t.Errorf("at the bound: %+v", n)
			}
		})
	}
}
