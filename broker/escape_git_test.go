//go:build linux

package broker

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentloom/loom/internal/gitguard/guardtest"
	"github.com/agentloom/loom/sandbox"
)

// gitEscapeCases attacks repository-controlled execution a command
// plants: each jailed script leaves git configuration behind, then the
// test runs the host's own plain git (unjailed, HOME a temp dir) the way
// a host or its user would, and the case escaped if that git ran the
// payload (which leaves a marker in $OUT, a directory the jail cannot
// write). The control runs the same script jailed on a broker whose git
// guard is off: the jail alone does not stop any of these.
func gitEscapeCases() []escapeCase {
	status := [][]string{{"status"}, {"diff"}, {"log", "-p"}}
	nested := func(cmds ...[]string) [][]string {
		var out [][]string
		for _, c := range cmds {
			out = append(out, append([]string{"-C", "lib"}, c...))
		}
		return out
	}
	lib := `git init -q lib && git -C lib commit -q --allow-empty -m x && `
	// planted is an armed repository made in the jail's own /tmp, which
	// the host never sees, to be copied into the workspace.
	planted := `(cd /tmp && git init -q s && git -C s commit -q --allow-empty -m x && git -C s config core.fsmonitor "$WS/evil.sh") && `
	return append([]escapeCase{
		gitCase("git_nested_fsmonitor_gitlink", hostRepo,
			lib+`git -C lib config core.fsmonitor "$WS/evil.sh" && git add lib`, status),
		gitCase("git_nested_hooks_path", hostRepo,
			lib+`mkdir lib/h && cp "$WS/evil.sh" lib/h/post-commit && git -C lib config core.hooksPath h`,
			nested([]string{"commit", "-q", "--allow-empty", "-m", "y"})),
		gitCase("git_nested_hook_file", hostRepo,
			lib+`cp "$WS/evil.sh" lib/.git/hooks/post-commit`,
			nested([]string{"commit", "-q", "--allow-empty", "-m", "y"})),
		gitCase("git_nested_filter_attributes", hostRepo,
			lib+`echo one > lib/a.txt && git -C lib add a.txt && git -C lib commit -qm a && echo '*.txt filter=x' > lib/.gitattributes && `+
				`git -C lib config filter.x.clean "$WS/evil.sh" && echo two > lib/a.txt`,
			nested([]string{"diff"}, []string{"status"})),
		gitCase("git_nested_info_attributes_textconv", hostRepo,
			lib+`echo one > lib/a.txt && git -C lib add a.txt && git -C lib commit -qm a && echo '*.txt diff=t' > lib/.git/info/attributes && `+
				`git -C lib config diff.t.textconv "$WS/evil.sh" && echo two > lib/a.txt`,
			nested([]string{"diff"}, []string{"log", "-p"})),
		gitCase("git_nested_diff_external", hostRepo,
			lib+`echo one > lib/a.txt && git -C lib add a.txt && git -C lib commit -qm a && git -C lib config diff.external "$WS/evil.sh" && echo two > lib/a.txt`,
			nested([]string{"diff"})),
		gitCase("git_nested_include_into_workspace", hostRepo,
			lib+`printf '[core]\n\tfsmonitor = %s\n' "$WS/evil.sh" > "$WS/inc.cfg" && git -C lib config include.path "$WS/inc.cfg" && git add lib`, status),
		gitCase("git_submodule_modules_config", hostRepo,
			`mkdir -p .git/modules && git init -q --separate-git-dir "$WS/.git/modules/x" x && git -C x commit -q --allow-empty -m x && `+
				`git -C x config core.fsmonitor "$WS/evil.sh" && git add x`, status),
		gitCase("git_dotgit_file_in_plain_workspace", nil,
			`git init -q --separate-git-dir "$WS/planted" "$WS" && git config core.fsmonitor "$WS/evil.sh"`, status),
		// As an unprivileged host the broker must make lib/.git writable
		// itself to rewrite the config in it (root would not notice).
		gitCase("git_nested_chmod_555", func(t *testing.T, e *escapeEnv) {
			hostRepo(t, e)
			t.Cleanup(func() { os.Chmod(filepath.Join(e.ws, "lib", ".git"), 0o755) })
		},
			lib+`git -C lib config core.fsmonitor "$WS/evil.sh" && git add lib && chmod 555 lib/.git`, status),
		// Unreadable to an unprivileged broker until it gives itself access.
		gitCase("git_nested_chmod_111", func(t *testing.T, e *escapeEnv) {
			hostRepo(t, e)
			t.Cleanup(func() { os.Chmod(filepath.Join(e.ws, "lib", ".git"), 0o755) })
		},
			lib+`git -C lib config core.fsmonitor "$WS/evil.sh" && git add lib && chmod 111 lib/.git`, status),
		// The red team's G1: a git directory hidden in the top-level
		// repository's object store, named by a pointer whose absolute
		// path leaves the root through /proc and comes back to it on the
		// host.
		gitCase("git_pointer_proc_root_into_object_store", hostRepo,
			planted+`cp -a /tmp/s/.git "$WS/.git/objects/ev" && mkdir sub && `+
				`echo "gitdir: /proc/self/root$WS/.git/objects/ev" > sub/.git && git add sub`, status),
		// G1's variant: a .git link through /proc to a git directory whose
		// HEAD is a link to its branch.
		gitCase("git_pointer_link_proc_root_head_link", hostRepo,
			planted+`mkdir sub && cp -a /tmp/s/.git sub/x && ref=$(git -C sub/x symbolic-ref HEAD) && rm sub/x/HEAD && ln -s "$ref" sub/x/HEAD && `+
				`ln -s "/proc/self/root$WS/sub/x" sub/.git && git add sub`, status),
		// /proc/self/cwd means the reading process's directory: the
		// host's git reads the pointer in the workspace and, recursing,
		// in sub, and a link in each leads it to the hidden directory.
		// The gitlink is added without the jail's git reading the pointer.
		gitCase("git_pointer_proc_cwd_into_object_store", hostRepo,
			planted+`cp -a /tmp/s/.git "$WS/.git/objects/ev" && mkdir sub && ln -s .git/objects/ev ev && ln -s ../.git/objects/ev sub/ev && `+
				`echo "gitdir: /proc/self/cwd/ev" > sub/.git && `+
				`git update-index --add --cacheinfo "160000,$(git -C /tmp/s rev-parse HEAD),sub"`, status),
		// G2: git stops reading a .git file at its first NUL.
		gitCase("git_pointer_nul_cut", hostRepo,
			planted+`cp -a /tmp/s/.git "$WS/.git/objects/ev" && mkdir sub && `+
				`printf 'gitdir: ../.git/objects/ev\0/../../../nothing\n' > sub/.git && git add sub`, status),
		// G2 with the NUL followed by more than the guard reads of a
		// pointer.
		gitCase("git_pointer_nul_padded", hostRepo,
			planted+`cp -a /tmp/s/.git "$WS/.git/objects/ev" && mkdir sub && `+
				`{ printf 'gitdir: ../.git/objects/ev\0'; head -c 5000 /dev/zero | tr '\0' a; echo; } > sub/.git && git add sub`, status),
		// The root itself as the git directory: a .git file saying
		// "gitdir: ." beside HEAD, objects, refs and an armed config.
		gitCase("git_root_as_git_dir", nil,
			`git init -q --bare "$WS" && git config -f "$WS/config" core.bare false && git config -f "$WS/config" core.fsmonitor "$WS/evil.sh" && `+
				`echo 'gitdir: .' > "$WS/.git"`, status),
		{
			name:   "git_global_hooks_path_into_workspace",
			serial: true, // sets the test process's GIT_CONFIG_GLOBAL, which the broker reads
			run: func(t *testing.T, b *Broker, e *escapeEnv, jailed bool) bool {
				hostRepo(t, e)
				global := filepath.Join(e.base, "global.gitconfig")
				e.write(t, global, "[core]\n\thooksPath = "+filepath.Join(e.ws, ".githooks")+"\n")
				t.Setenv("GIT_CONFIG_GLOBAL", global)
				return runGitEscape(t, b, e, jailed, `mkdir -p .githooks && cp "$WS/evil.sh" .githooks/post-commit`,
					[][]string{{"commit", "-q", "--allow-empty", "-m", "y"}}, global)
			},
		},
		{
			name: "git_commondir_from_background_job",
			run: func(t *testing.T, b *Broker, e *escapeEnv, jailed bool) bool {
				hostRepo(t, e)
				return runGitBackground(t, b, e, jailed,
					`mkdir -p evil && cp .git/config evil/config && printf '[core]\n\tfsmonitor = %s\n' "$WS/evil.sh" >> evil/config && `+
						`mkdir evil/objects evil/refs && echo "$WS/evil" > .git/commondir`, ".git/commondir")
			},
		},
		{
			name: "git_nested_fsmonitor_from_background_job",
			run: func(t *testing.T, b *Broker, e *escapeEnv, jailed bool) bool {
				hostRepo(t, e)
				return runGitBackground(t, b, e, jailed,
					lib+`git add lib && git -C lib config core.fsmonitor "$WS/evil.sh"`, "")
			},
		},
		{
			// Not code execution but the same class: a FIFO where git
			// reads a config hangs the host's next git.
			name: "git_nested_fifo_config_hangs_host",
			run: func(t *testing.T, b *Broker, e *escapeEnv, jailed bool) bool {
				hostRepo(t, e)
				br := b
				if !jailed {
					br = e.brokers.unguarded()
				}
				writeEvil(t, e)
				runIn(t, br, e, e.policy(), 30*time.Second, gitScriptEnv+lib+`git add lib && rm lib/.git/config && mkfifo lib/.git/config`)
				_, hung := hostGit(t, e, "", 3*time.Second, "status")
				return hung
			},
		},
	}, slices.Concat(gitAllowlistCases(), gitLaunderCases())...)
}

// gitLaunderCases are the red team's laundering: a first command
// commits, with git's plumbing alone, a git directory named evil whose
// config arms core.fsmonitor with the payload; the host checks that
// commit out (its own write, so the guard's baseline); a second command
// writes only a pointer to evil (see launderPointers), and the host's
// git meets it. In the last case the plant lies at the top of a
// repository the host made (lib), and the second command moves lib/.git
// away, so git run in lib takes lib itself for its git directory. The
// control runs the same on a broker whose guard takes a git directory
// the command did not write as it stands (trustTargets): the guard
// without the judgement that stops it.
func gitLaunderCases() []escapeCase {
	var out []escapeCase
	for _, p := range guardtest.LaunderPointers() {
		out = append(out, escapeCase{
			name: "git_launder_checkout_" + p.Name,
			run: func(t *testing.T, b *Broker, e *escapeEnv, jailed bool) bool {
				hostRepo(t, e)
				return runGitLaunder(t, b, e, jailed, ".", "evil", p)
			},
		})
	}
	return append(out, escapeCase{
		name: "git_launder_checkout_repository_top",
		run: func(t *testing.T, b *Broker, e *escapeEnv, jailed bool) bool {
			hostRepo(t, e)
			for _, args := range [][]string{{"init", "-q", "lib"}, {"-C", "lib", "commit", "-q", "--allow-empty", "-m", "lib"}} {
				if out, hung := hostGit(t, e, "", 20*time.Second, args...); hung || strings.Contains(out, "fatal") {
					t.Fatalf("git %v: %s", args, out)
				}
			}
			return runGitLaunder(t, b, e, jailed, "lib", "", guardtest.LaunderPointer{
				Name: "dotgit_moved", Script: `mv lib/.git lib/.git-old`, Host: []string{"-C", "lib", "status", "--short"},
			})
		},
	})
}

// runGitLaunder runs the plant commit in the repository repo (at at in
// its tree) and the pointer as two jailed commands (on b, or for the
// control on a broker trusting what a command's pointer names), the
// host's checkout of the plant between them, then the host's git; it
// reports whether the payload ran.
func runGitLaunder(t *testing.T, b *Broker, e *escapeEnv, jailed bool, repo, at string, p guardtest.LaunderPointer) bool {
	writeEvil(t, e)
	br := b
	if !jailed {
		br = e.brokers.trustingTargets()
	}
	var settled sandbox.Settled
	for i, script := range []string{`cd ` + repo + ` && ` + guardtest.LaunderScript(at, `"$WS/evil.sh"`), p.Script} {
		if i == 1 {
			if out, hung := hostGit(t, e, "", 20*time.Second, "-C", repo, "checkout", "-q", "agent"); hung || strings.Contains(out, "fatal") {
				t.Fatalf("the host's checkout of the plant: %s", out)
			}
		}
		r := runIn(t, br, e, e.policy(), 60*time.Second, gitScriptEnv+script)
		if r.settled.ExitCode != 0 {
			t.Fatalf("jailed=%v: command %d failed (exit %d): %s", jailed, i, r.settled.ExitCode, r.stderr)
		}
		settled = r.settled
	}
	out, _ := hostGit(t, e, "", 20*time.Second, p.Host...)
	if payloadRan(e) {
		t.Logf("jailed=%v: host git %v ran the payload (%s); settled %+v", jailed, p.Host, out, settled.GitNeutralised)
		return true
	}
	return false
}

// gitAllowlistCases plant, in a nested repository the command makes,
// the keys a denylist missed (trailer commands, an archive format's
// command, a work tree outside every root) in each file git reads
// configuration from there: the git directory's config, its
// config.worktree, and a submodule's config under modules/. After
// settlement the host's git, run plain and with SafeGitEnvFor, must
// not run the payload or check the committed file "pwned" out into
// $OUT. The control (the guard off) runs plain git on what the command
// left, which does.
func gitAllowlistCases() []escapeCase {
	lib := `git init -q lib && echo ran > lib/pwned && git -C lib add pwned && git -C lib commit -qm p && `
	places := []struct{ name, setup, config, dir string }{
		{"config", lib, `git -C lib config`, "lib"},
		{"config_worktree", lib + `git -C lib config extensions.worktreeConfig true && `, `git -C lib config --worktree`, "lib"},
		{"modules_config", lib + `mkdir -p lib/.git/modules && git init -q --separate-git-dir "$WS/lib/.git/modules/x" lib/x && echo ran > lib/x/pwned && ` +
			`git -C lib/x add pwned && git -C lib/x commit -qm p && `, `git -C lib/x config`, "lib/x"},
	}
	keys := []struct {
		name, plant string
		host        []string
	}{
		{"trailer_cmd", `{c} trailer.x.cmd "$WS/evil.sh" && {c} trailer.y.command "$WS/evil.sh"`,
			[]string{"commit", "-q", "--allow-empty", "-m", "y", "--trailer", "x=1"}},
		{"tar_command", `{c} tar.tgz.command "$WS/evil.sh"`, []string{"archive", "--format=tgz", "HEAD"}},
		{"core_worktree_outside", `{c} core.worktree "$OUT"`, []string{"reset", "-q", "--hard"}},
	}
	var out []escapeCase
	for _, p := range places {
		for _, k := range keys {
			script := p.setup + strings.ReplaceAll(k.plant, "{c}", p.config)
			host := append([]string{"-C", p.dir}, k.host...)
			out = append(out, escapeCase{
				name: "git_allowlist_" + k.name + "_in_" + p.name,
				run: func(t *testing.T, b *Broker, e *escapeEnv, jailed bool) bool {
					hostRepo(t, e)
					return runGitAfterSettle(t, b, e, jailed, script, host)
				},
			})
		}
	}
	return out
}

// runGitAfterSettle runs script jailed (on b, or with the guard off for
// the control), then the host's git command: in the control plain, in
// the jailed run under SafeGitEnvFor and plain. It reports whether the
// payload ran or the committed file reached $OUT.
func runGitAfterSettle(t *testing.T, b *Broker, e *escapeEnv, jailed bool, script string, host []string) bool {
	writeEvil(t, e)
	br := b
	if !jailed {
		br = e.brokers.unguarded()
	}
	r := runIn(t, br, e, e.policy(), 60*time.Second, gitScriptEnv+script)
	if r.settled.ExitCode != 0 {
		t.Fatalf("jailed=%v: the plant failed (exit %d): %s", jailed, r.settled.ExitCode, r.stderr)
	}
	var envs [][]string
	if jailed {
		safe, err := SafeGitEnvFor(e.ws)
		if err != nil {
			t.Fatalf("SafeGitEnvFor: %v", err)
		}
		envs = append(envs, safe)
	}
	for _, env := range append(envs, nil) {
		out, _ := hostGitWith(t, e, env, 20*time.Second, host...)
		if payloadRan(e) {
			t.Logf("jailed=%v: host git %v (SafeGitEnvFor: %v) ran the payload or wrote to $OUT (%s); settled %+v",
				jailed, host, env != nil, out, r.settled.GitNeutralised)
			return true
		}
	}
	return false
}

// gitScriptEnv gives a jailed script a git identity.
const gitScriptEnv = `export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@a GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@a; cd "$WS" && `

func gitCase(name string, setup func(t *testing.T, e *escapeEnv), script string, host [][]string) escapeCase {
	return escapeCase{
		name: name,
		run: func(t *testing.T, b *Broker, e *escapeEnv, jailed bool) bool {
			if setup != nil {
				setup(t, e)
			}
			return runGitEscape(t, b, e, jailed, script, host, "")
		},
	}
}

// hostRepo makes the workspace a repository with one commit, as a host
// hands a model its checkout.
func hostRepo(t *testing.T, e *escapeEnv) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q"}, {"commit", "-q", "--allow-empty", "-m", "base"}} {
		if out, hung := hostGit(t, e, "", 20*time.Second, args...); hung || strings.Contains(out, "fatal") {
			t.Fatalf("git %v: %s", args, out)
		}
	}
}

// writeEvil puts the payload in the workspace: run by the host, it
// leaves $OUT/pwned.
func writeEvil(t *testing.T, e *escapeEnv) {
	e.write(t, filepath.Join(e.ws, "evil.sh"), "#!/bin/sh\necho ran >> "+filepath.Join(e.out, "pwned")+"\nexit 0\n")
	os.Chmod(filepath.Join(e.ws, "evil.sh"), 0o755)
}

func payloadRan(e *escapeEnv) bool { return e.exists(e.out, "pwned") }

// runGitEscape runs script jailed (on b, or with the guard off for the
// control), then the host's git commands; it reports whether the
// payload ran on the host.
func runGitEscape(t *testing.T, b *Broker, e *escapeEnv, jailed bool, script string, host [][]string, global string) bool {
	writeEvil(t, e)
	br := b
	if !jailed {
		br = e.brokers.unguarded()
	}
	r := runIn(t, br, e, e.policy(), 60*time.Second, gitScriptEnv+script)
	if r.settled.ExitCode != 0 {
		t.Logf("jailed=%v script exit %d: %s", jailed, r.settled.ExitCode, r.stderr)
	}
	for _, args := range host {
		out, _ := hostGit(t, e, global, 20*time.Second, args...)
		if payloadRan(e) {
			t.Logf("jailed=%v: host git %v ran the payload (%s); settled %+v", jailed, args, out, r.settled.GitNeutralised)
			return true
		}
	}
	return false
}

// runGitBackground runs script as a long job that stays alive, waits
// (while it still runs) until the guard has acted on gone (when not
// empty) or briefly, then runs the host's git status while the job is
// still running: what a background job plants must not wait for its
// settlement to be neutralised.
func runGitBackground(t *testing.T, b *Broker, e *escapeEnv, jailed bool, script, gone string) bool {
	writeEvil(t, e)
	br := b
	if !jailed {
		br = e.brokers.unguarded()
	}
	ready := filepath.Join(e.ws, "planted-done")
	ex, d := br.Clear(context.Background(), sandbox.CallSpec{
		Key: sandbox.StepKey{OpID: "escape", StepID: t.Name()}, Argv: []string{"sh", "-c", gitScriptEnv + script + ` && touch "$WS/planted-done"; sleep 60`},
		Dir: e.ws, Env: e.vars(), Policy: e.policy(), Budget: sandbox.Budget{MaxOutstanding: 1}, Timeout: 90 * time.Second,
	})
	if d != nil {
		t.Fatal(d)
	}
	defer func() {
		ex.Cancel()
		collect(ex)
	}()
	waitFor(t, 20*time.Second, func() bool { return e.exists(ready) })
	if jailed && gone != "" {
		waitFor(t, 10*time.Second, func() bool { return !e.exists(e.ws, gone) })
	}
	if jailed && gone == "" {
		waitFor(t, 10*time.Second, func() bool {
			return !strings.Contains(e.read(filepath.Join(e.ws, "lib", ".git", "config")), "fsmonitor")
		})
	}
	select {
	case <-ex.Done():
		t.Fatal("the job settled before the host's git ran; the case tests nothing")
	default:
	}
	hostGit(t, e, "", 20*time.Second, "status")
	return payloadRan(e)
}

// waitFor polls cond (a file the jailed job or the guard changes: no
// event reaches the test for it) until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Logf("condition not met within %v", d)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hostGit runs the host's plain git in the workspace: no jail, no
// SafeGitEnv, a private HOME. It reports the output and whether git was
// still running at the timeout.
func hostGit(t *testing.T, e *escapeEnv, global string, timeout time.Duration, args ...string) (string, bool) {
	var env []string
	if global != "" {
		env = []string{"GIT_CONFIG_GLOBAL=" + global}
	}
	return hostGitWith(t, e, env, timeout, args...)
}

// hostGitWith is hostGit with env added to its environment.
func hostGitWith(t *testing.T, e *escapeEnv, env []string, timeout time.Duration, args ...string) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "user.name=h", "-c", "user.email=h@h"}, args...)...)
	cmd.Dir = e.ws
	cmd.Env = append([]string{"HOME=" + filepath.Join(e.base, "host-home"), "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin", "GIT_TERMINAL_PROMPT=0"}, env...)
	out, _ := cmd.CombinedOutput()
	return string(out), ctx.Err() != nil
}

// TestGitGuardKeepsJailedGitWorking: a command that runs git init, a
// clone of a local repository, git submodule add (file transport
// allowed for it), git worktree add and a clone recursing into the
// submodule, jailed, leaves nothing the guard neutralises, and the
// host's git works in every repository it made.
func TestGitGuardKeepsJailedGitWorking(t *testing.T) {
	t.Parallel()
	e := newEscapeEnv(t)
	b := newTestBroker(t, Options{})
	r := runIn(t, b, e, e.policy(), 60*time.Second, gitScriptEnv+
		`git init -q up && echo a > up/a && git -C up add a && git -C up commit -qm a && `+
		`git init -q fresh && git clone -q up clone && `+
		`git -C clone -c protocol.file.allow=always submodule add -q ../up sub && git -C clone commit -qm sub && `+
		`git -C clone worktree add -q ../wt && `+
		`git -c protocol.file.allow=always clone -q --recurse-submodules clone rec`)
	if r.settled.ExitCode != 0 {
		t.Fatalf("git in the jail failed (exit %d): %s", r.settled.ExitCode, r.stderr)
	}
	if len(r.settled.GitNeutralised) != 0 || len(r.settled.ProtectedCreated) != 0 {
		t.Errorf("the guard acted on what git wrote: %+v %+v", r.settled.GitNeutralised, r.settled.ProtectedCreated)
	}
	for _, f := range []string{"clone/sub/a", "wt/a", "rec/sub/a"} {
		if !e.exists(e.ws, f) {
			t.Errorf("%s was not checked out", f)
		}
	}
	for _, dir := range []string{"fresh", "clone", "clone/sub", "wt", "rec", "rec/sub"} {
		if out, hung := hostGit(t, e, "", 20*time.Second, "-C", dir, "status", "--short"); hung || strings.Contains(out, "fatal") {
			t.Errorf("host git status in %s: %s", dir, out)
		}
	}
}
