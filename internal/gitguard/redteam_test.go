//go:build linux

package gitguard

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentloom/loom/internal/gitguard/guardtest"
)

// Red team, git guard allowlist (today).

// TestRedteamTodayGitPartialCloneNameIsAnOption: every key of this plant
// is on the allowlist (core.repositoryformatversion = 1,
// extensions.partialclone as gitText, a local remote.origin.url), yet
// the host's plain `git status` in the workspace runs the command's
// shell command. git's lazy fetch of a missing object (promisor-remote.c
// fetch_objects) runs `git fetch <extensions.partialclone> ...` with the
// value as its own argv element, so "--upload-pack=<cmd>" becomes an
// option, and the default remote's local transport runs <cmd> through
// the shell. The plant is a submodule-shaped git directory the root's
// status recurses into (a gitlink in the index, a .git file, a git
// directory under .git/modules: nothing protected is touched), whose
// HEAD names a commit that does not exist.
//
// Controls: the same plant with core.fsmonitor instead is neutralised
// (the guard acts on this git directory), and with the guard off both
// plants run (the probe sees execution).
func TestRedteamTodayGitPartialCloneNameIsAnOption(t *testing.T) {
	t.Parallel()
	const missing = "1234567890123456789012345678901234567890"
	for _, tc := range []struct {
		name    string
		payload func(mark string) string
		off     bool
		wantRun bool
	}{
		{"control-fsmonitor-guarded", fsmonitorPayload, false, false},
		{"control-fsmonitor-off", fsmonitorPayload, true, true},
		{"control-partialclone-off", partialclonePayload, true, true},
		{"finding-partialclone-guarded", partialclonePayload, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newGuardWorld(t)
			w.f.Test.Off = tc.off
			mark := filepath.Join(t.TempDir(), "PWNED")
			w.git(w.ws, "init", "-q")
			w.git(w.ws, "commit", "-q", "--allow-empty", "-m", "host")
			if _, d := w.command(nil); d != nil {
				t.Fatal(d)
			}
			s, d := w.command(func() {
				w.write(".git/modules/sub/HEAD", "ref: refs/heads/main\n")
				w.write(".git/modules/sub/refs/heads/main", missing+"\n")
				w.write(".git/modules/sub/objects/info/.keep", "")
				w.write(".git/modules/sub/config", tc.payload(mark)+
					"[remote \"origin\"]\n\turl = "+filepath.Join(w.ws, "sub")+"\n")
				w.write("sub/.git", "gitdir: ../.git/modules/sub\n")
				w.git(w.ws, "update-index", "--add", "--cacheinfo", "160000,"+missing+",sub")
			})
			if d != nil {
				t.Fatal(d)
			}
			t.Logf("neutralised: %+v\nconfig after settle:\n%s", s.GitNeutralised, w.read(".git/modules/sub/config"))
			if got := hostGitRuns(t, w.ws, mark); got != tc.wantRun {
				t.Errorf("guard off=%v: host's plain git status ran the payload: %v, want %v", tc.off, got, tc.wantRun)
			}
		})
	}
}

func fsmonitorPayload(mark string) string {
	return "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch " + mark + "; false\"\n"
}

func partialclonePayload(mark string) string {
	return "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tpartialclone = \"--upload-pack=touch " + mark + ";:\"\n"
}

// TestRedteamTodayGitRootObjectsAsFile: git's is_git_directory asks only
// access(objects, X_OK), which an executable regular file passes; the
// guard's isGitDir wants objects to be a directory or a link. A workspace
// that is no repository, given HEAD, refs/, an executable file named
// objects, a config with core.fsmonitor and a ".git" file naming the
// root, is a repository to the host's git but not to the guard: the
// pointer is followed to the root, the root is judged no git directory,
// its config is left as the project's own file, and the host's plain
// `git status` runs fsmonitor. Control: the same plant with objects a
// directory is neutralised (TestGitGuardRootAsGitDir is that case), and
// with the guard off the file plant runs.
func TestRedteamTodayGitRootObjectsAsFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		objectsDir bool
		off        bool
		wantRun    bool
	}{
		{"control-objectsdir-guarded", true, false, false},
		{"control-objectsfile-off", false, true, true},
		{"finding-objectsfile-guarded", false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newGuardWorld(t)
			w.f.Test.Off = tc.off
			mark := filepath.Join(t.TempDir(), "PWNED")
			if _, d := w.command(nil); d != nil {
				t.Fatal(d)
			}
			if _, d := w.command(func() {
				w.write("HEAD", "ref: refs/heads/main\n")
				if tc.objectsDir {
					w.write("objects/.keep", "")
				} else {
					w.write("objects", "") // mode 0755: access(X_OK) passes
				}
				w.write("refs/heads/.keep", "")
				w.write("config", "[core]\n\tbare = false\n\tfsmonitor = \"touch "+mark+"; false\"\n")
				w.write(".git", "gitdir: .\n")
			}); d != nil {
				t.Fatal(d)
			}
			if fi, err := os.Lstat(filepath.Join(w.ws, "objects")); err == nil {
				t.Logf("objects mode %v; config after settle:\n%s", fi.Mode(), w.read("config"))
			}
			if got := hostGitRuns(t, w.ws, mark); got != tc.wantRun {
				t.Errorf("guard off=%v: host's plain git status ran the payload: %v, want %v", tc.off, got, tc.wantRun)
			}
		})
	}
}

// TestRedteamTodayGitWorktreeVerticalTab: git's config reader takes only
// space, tab, CR and LF as blanks (sane_ctype: \v and \f are control
// bytes, not GIT_SPACE); the guard's isCSpace takes \v and \f too, so a
// trailing \v is dropped from the value the guard judges and kept in the
// one git uses. core.worktree = "../../../sub\v" is judged as
// "../../../sub" (a real directory beneath the root: inert), while the
// host's git checks files out into "sub\v", a link the command made to a
// directory outside every root. Control: unguarded, the same plant makes
// the host's `git reset --hard` write outside (the probe sees the write);
// the plant without the \v (the link at sub itself) is what
// TestGitGuardRejudgesWorktree shows removed.
func TestRedteamTodayGitWorktreeVerticalTab(t *testing.T) {
	t.Parallel()
	layout := func(w *guardWorld) {
		w.git(w.ws, "init", "-q", "up")
		w.write("up/pwned", "ran\n")
		w.git(filepath.Join(w.ws, "up"), "add", "pwned")
		w.git(filepath.Join(w.ws, "up"), "commit", "-q", "-m", "a")
		w.git(w.ws, "init", "-q", "top")
		w.git(filepath.Join(w.ws, "top"), "-c", "protocol.file.allow=always", "submodule", "add", "-q", "../up", "sub")
	}
	plant := func(w *guardWorld, outside string) {
		cfg := filepath.Join(w.ws, "top/.git/modules/sub/config")
		data, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		const line = "worktree = ../../../sub\n"
		if !strings.Contains(string(data), line) {
			t.Fatalf("submodule config lacks %q:\n%s", line, data)
		}
		data = []byte(strings.Replace(string(data), line, "worktree = ../../../sub\v\n", 1))
		if err := os.WriteFile(cfg, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(w.ws, "top/sub\v")); err != nil {
			t.Fatal(err)
		}
	}
	hostReset := func(w *guardWorld) {
		cmd := exec.Command("git", "-C", filepath.Join(w.ws, "top/.git/modules/sub"), "reset", "-q", "--hard")
		cmd.Env = hostGitEnv(t)
		cmd.Run()
	}
	run := func(guarded bool) (wrote bool, s settled) {
		w := newGuardWorld(t)
		outside := filepath.Join(filepath.Dir(w.ws), "outside")
		os.MkdirAll(outside, 0o755)
		if guarded {
			if _, d := w.command(func() { layout(w) }); d != nil {
				t.Fatal(d)
			}
			var d *Error
			if s, d = w.command(func() { plant(w, outside) }); d != nil {
				t.Fatal(d)
			}
		} else {
			layout(w)
			plant(w, outside)
		}
		hostReset(w)
		_, err := os.Lstat(filepath.Join(outside, "pwned"))
		return err == nil, s
	}
	if wrote, _ := run(false); !wrote {
		t.Fatal("control: unguarded, the host's git did not write through sub\\v; the probe shows nothing")
	}
	if wrote, s := run(true); wrote {
		t.Errorf("guarded: the host's git reset wrote outside the root through core.worktree=\"../../../sub\\v\" (neutralised: %+v)", s.GitNeutralised)
	}
}

// TestRedteamTodayGitHelperURLLeadingDigit: git's is_urlschemechar
// accepts a digit as a scheme's first character ("[A-Za-z0-9][A-Za-z0-9+.-]*",
// transport.c), so "9x::addr" runs git-remote-9x; the guard's
// isHelperURL wants a letter first and keeps the URL. Control: git runs
// the helper (a script on PATH here), and "x9::addr" is refused.
func TestRedteamTodayGitHelperURLLeadingDigit(t *testing.T) {
	dir := t.TempDir()
	mark := filepath.Join(dir, "HELPER")
	if err := os.WriteFile(filepath.Join(dir, "git-remote-9x"), []byte("#!/bin/sh\ntouch "+mark+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "ls-remote", "9x::addr")
	cmd.Env = append(hostGitEnv(t), "PATH="+dir+":/usr/bin:/bin")
	cmd.Run()
	if _, err := os.Stat(mark); err != nil {
		t.Fatal("control: git did not take 9x::addr for a remote helper")
	}
	url := func(v string) gitConfigItem {
		return gitConfigItem{section: "remote", subsection: "o", hasSub: true, key: "url", value: v}
	}
	if gitAllowedEntry(url("x9::addr"), nil) {
		t.Fatal("control: x9::addr kept")
	}
	for _, v := range []string{"9x::addr", "0::addr"} {
		if gitAllowedEntry(url(v), nil) {
			t.Errorf("remote.o.url = %q kept, though git runs git-remote-%s for it", v, strings.Split(v, "::")[0])
		}
	}
}

// TestRedteamTodayGitRemoteNameCarriesAURL: git takes a remote name that
// names no configured remote as its URL (remote.c: add_url_alias), so
// branch.<b>.remote, branch.<b>.pushremote and extensions.partialclone,
// kept as any text, carry the helper URLs gitURL refuses in
// remote.<r>.url. Control: the same value in remote.o.url is removed,
// and git fetch on a branch whose remote is "ext::..." runs it where the
// host allowed ext (the case gitURL's comment names).
func TestRedteamTodayGitRemoteNameCarriesAURL(t *testing.T) {
	dir := t.TempDir()
	mark := filepath.Join(dir, "EXT")
	helper := "ext::sh -c touch% " + mark
	env := hostGitEnv(t)
	repo := filepath.Join(dir, "r")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", repo},
		{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "a"},
		{"-C", repo, "config", "branch.main.remote", helper},
	} {
		c := exec.Command("git", args...)
		c.Env = env
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	cmd := exec.Command("git", "-C", repo, "-c", "protocol.ext.allow=always", "fetch")
	cmd.Env = env
	cmd.Run()
	if _, err := os.Stat(mark); err != nil {
		t.Fatal("control: git fetch did not run the branch's remote name as an ext:: URL")
	}
	q := strconv.Quote(helper)
	cfg := "[remote \"o\"]\n\turl = " + q + "\n[branch \"main\"]\n\tremote = " + q + "\n\tpushremote = " + q +
		"\n[core]\n\trepositoryformatversion = 1\n[extensions]\n\tpartialclone = " + q + "\n"
	_, removed, err := neutraliseGitConfig([]byte(cfg), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(removed, "remote.o.url") {
		t.Fatalf("control: remote.o.url kept (removed %v)", removed)
	}
	for _, name := range []string{"branch.main.remote", "branch.main.pushremote", "extensions.partialclone"} {
		if !slices.Contains(removed, name) {
			t.Errorf("%s = %s kept: git takes it for the URL, a remote helper", name, q)
		}
	}
}

// TestRedteamTodayGitCheckoutLaundersAPlant: a command commits (with
// hash-object, mktree, commit-tree: the work tree untouched) a git
// directory named evil whose config arms core.fsmonitor; the host checks
// that commit out, so the guard records evil as the host's baseline; a
// later command writes only a pointer to it, and the host's git there
// runs the payload. The guard judges what a command's pointer names,
// whoever wrote it, and moves the pointer aside. Controls: the same
// with trustTargets (the guard taking the host-written target as it
// stands) and with the guard off run the payload. The same holds when
// the pointer comes first and the host's checkout arms its target after
// (judged again by the next command's settlement).
func TestRedteamTodayGitCheckoutLaundersAPlant(t *testing.T) {
	t.Parallel()
	for _, p := range guardtest.LaunderPointers() {
		for _, order := range []string{"checkout-then-pointer", "pointer-then-checkout"} {
			for _, mode := range []struct {
				name       string
				off, trust bool
				wantRun    bool
			}{
				{"control-guard-off", true, false, true},
				{"control-trust-targets", false, true, true},
				{"finding-guarded", false, false, false},
			} {
				t.Run(p.Name+"/"+order+"/"+mode.name, func(t *testing.T) {
					t.Parallel()
					w := newGuardWorld(t)
					w.f.Test.Off, w.f.Test.TrustTargets = mode.off, mode.trust
					mark := filepath.Join(t.TempDir(), "PWNED")
					w.git(w.ws, "init", "-q")
					w.git(w.ws, "commit", "-q", "--allow-empty", "-m", "host")
					if _, d := w.command(nil); d != nil {
						t.Fatal(d)
					}
					if _, d := w.command(func() { w.sh(guardtest.LaunderScript("evil", "'touch "+mark+"; false'")) }); d != nil {
						t.Fatal(d)
					}
					checkout := func() { w.git(w.ws, "checkout", "-q", "agent") }
					var s settled
					var d *Error
					if order == "checkout-then-pointer" {
						checkout()
						s, d = w.command(func() { w.sh(p.Script) })
					} else {
						if _, d = w.command(func() { w.sh(p.Script) }); d != nil {
							t.Fatal(d)
						}
						checkout()
						s, d = w.command(nil)
					}
					if d != nil {
						t.Fatal(d)
					}
					got := hostGitRunsWith(t, w.ws, mark, p.Host...)
					if got != mode.wantRun {
						t.Errorf("host's git %v ran the payload: %v, want %v (neutralised %+v)", p.Host, got, mode.wantRun, s.GitNeutralised)
					}
					if !mode.off && !mode.trust {
						if !strings.Contains(w.read("evil/config"), "fsmonitor") {
							t.Error("the host's checked-out evil/config was rewritten; the pointer should have been moved instead")
						}
						if why := w.f.Fenced(w.ws); why != "" {
							t.Errorf("fenced where moving aside sufficed: %s", why)
						}
					}
				})
			}
		}
	}
}

// TestRedteamTodayGitCheckoutLaundersARepositoryTop: the laundering
// without a pointer. A command commits, in a repository the host made
// (lib), a tree whose top holds HEAD, objects/, refs/ and an armed
// config; the host checks it out, so lib is a git directory by its
// files, shadowed only by lib/.git (git run in lib opens lib/.git
// first). A later command removes or spoils lib/.git, and the host's git
// in lib takes lib itself for its git directory and runs the payload.
// The guard acts on lib's control files once a command takes the shadow
// away. Controls: with trustTargets and with the guard off, the payload
// runs.
func TestRedteamTodayGitCheckoutLaundersARepositoryTop(t *testing.T) {
	t.Parallel()
	for _, unshadow := range []struct{ name, script string }{
		{"dotgit_moved", `mv lib/.git lib/.git-old`},
		{"head_removed", `rm lib/.git/HEAD`},
		{"dotgit_replaced_by_a_fifo", `mv lib/.git lib/.git-old && mkfifo lib/.git`},
	} {
		for _, mode := range []struct {
			name       string
			off, trust bool
			wantRun    bool
		}{
			{"control-guard-off", true, false, true},
			{"control-trust-targets", false, true, true},
			{"finding-guarded", false, false, false},
		} {
			t.Run(unshadow.name+"/"+mode.name, func(t *testing.T) {
				t.Parallel()
				w := newGuardWorld(t)
				w.f.Test.Off, w.f.Test.TrustTargets = mode.off, mode.trust
				mark := filepath.Join(t.TempDir(), "PWNED")
				w.git(w.ws, "init", "-q")
				w.git(w.ws, "commit", "-q", "--allow-empty", "-m", "host")
				w.git(w.ws, "init", "-q", "lib")
				w.git(filepath.Join(w.ws, "lib"), "commit", "-q", "--allow-empty", "-m", "lib")
				if _, d := w.command(nil); d != nil {
					t.Fatal(d)
				}
				if _, d := w.command(func() { w.sh("cd lib && " + guardtest.LaunderScript("", "'touch "+mark+"; false'")) }); d != nil {
					t.Fatal(d)
				}
				w.git(filepath.Join(w.ws, "lib"), "checkout", "-q", "agent")
				s, d := w.command(func() { w.sh(unshadow.script) })
				if d != nil {
					t.Fatal(d)
				}
				if got := hostGitRunsWith(t, w.ws, mark, "-C", "lib", "status", "--short"); got != mode.wantRun {
					t.Errorf("host's git status in lib ran the payload: %v, want %v (neutralised %+v)", got, mode.wantRun, s.GitNeutralised)
				}
				if !mode.off && !mode.trust {
					if why := w.f.Fenced(w.ws); why != "" {
						t.Errorf("fenced where neutralising sufficed: %s", why)
					}
				}
			})
		}
	}
}

// sh runs script with sh in the workspace, as a command would.
func (w *guardWorld) sh(script string) {
	w.t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = w.ws
	cmd.Env = append(hostGitEnv(w.t), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@a", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@a")
	if out, err := cmd.CombinedOutput(); err != nil {
		w.t.Fatalf("sh %q: %v\n%s", script, err, out)
	}
}

// hostGitRunsWith runs the host's plain git with args in the workspace
// and reports whether a planted payload touched mark.
func hostGitRunsWith(t *testing.T, ws, mark string, args ...string) bool {
	t.Helper()
	os.Remove(mark)
	cmd := exec.Command("git", append([]string{"-C", ws}, args...)...)
	cmd.Env = hostGitEnv(t)
	cmd.Run()
	_, err := os.Stat(mark)
	return err == nil
}
