package gitguard

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// payloadRepo is a repository a command could have planted a payload
// in: ws is the repository's worktree (the workspace), evil a program
// in it that leaves marker (outside the workspace) when run.
type payloadRepo struct {
	t      *testing.T
	ws     string
	evil   string
	marker string
	home   string
}

func newPayloadRepo(t *testing.T) *payloadRepo {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &payloadRepo{t: t, ws: filepath.Join(dir, "ws"), marker: filepath.Join(dir, "marker"), home: filepath.Join(dir, "home")}
	os.MkdirAll(r.home, 0o755)
	os.MkdirAll(r.ws, 0o755)
	r.evil = filepath.Join(r.ws, "evil.sh")
	if err := os.WriteFile(r.evil, []byte("#!/bin/sh\necho ran >> "+r.marker+"\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.git(nil, "init", "-q")
	r.write("a.txt", "one\n")
	r.git(nil, "add", "a.txt")
	r.git(nil, "commit", "-q", "-m", "one")
	return r
}

func (r *payloadRepo) env(extra []string) []string {
	return append([]string{"HOME=" + r.home, "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin", "TERM=xterm",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}, extra...)
}

// git runs git in the worktree under env extra; it must succeed.
func (r *payloadRepo) git(extra []string, args ...string) string {
	r.t.Helper()
	out, err := r.run(extra, "", args...)
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return out
}

// run runs git (or, with a first argument "pty", git on a terminal
// through script(1), as a host's terminal does) and returns its output.
func (r *payloadRepo) run(extra []string, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var cmd *exec.Cmd
	if len(args) > 0 && args[0] == "pty" {
		cmd = exec.CommandContext(ctx, "script", "-qec", "git "+strings.Join(args[1:], " "), "/dev/null")
	} else {
		cmd = exec.CommandContext(ctx, "git", args...)
	}
	cmd.Dir = r.ws
	cmd.Env = r.env(extra)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (r *payloadRepo) write(rel, s string) {
	r.t.Helper()
	p := filepath.Join(r.ws, rel)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(s), 0o755); err != nil {
		r.t.Fatal(err)
	}
}

func (r *payloadRepo) config(kv ...string) {
	r.t.Helper()
	for i := 0; i+1 < len(kv); i += 2 {
		r.git(nil, "config", kv[i], kv[i+1])
	}
}

func (r *payloadRepo) ran() bool {
	_, err := os.Lstat(r.marker)
	return err == nil
}

// gitPayloads are the ways a repository's own files make git run a
// program, each with what makes plain git run it.
func gitPayloads() []struct {
	name    string
	named   bool // needs SafeEnvFor: keyed by a name the repository chose
	plant   func(r *payloadRepo)
	trigger [][]string
	stdin   string
} {
	type P = struct {
		name    string
		named   bool
		plant   func(r *payloadRepo)
		trigger [][]string
		stdin   string
	}
	status := [][]string{{"status"}}
	diff := [][]string{{"diff"}, {"log", "-p"}}
	dirty := func(r *payloadRepo) { r.write("a.txt", "two\n") }
	credential := [][]string{{"credential", "fill"}}
	return []P{
		{name: "fsmonitor", plant: func(r *payloadRepo) { r.config("core.fsmonitor", r.evil) }, trigger: status},
		{name: "fsmonitor_via_include", plant: func(r *payloadRepo) {
			r.write("inc.cfg", "[core]\n\tfsmonitor = "+r.evil+"\n")
			r.config("include.path", filepath.Join(r.ws, "inc.cfg"))
		}, trigger: status},
		{name: "fsmonitor_in_submodule_gitlink", plant: func(r *payloadRepo) {
			r.git(nil, "init", "-q", "lib")
			r.git(nil, "-C", "lib", "commit", "-q", "--allow-empty", "-m", "x")
			r.git(nil, "-C", "lib", "config", "core.fsmonitor", r.evil)
			r.git(nil, "add", "lib")
		}, trigger: status},
		{name: "hook", plant: func(r *payloadRepo) { r.write(".git/hooks/post-commit", "#!/bin/sh\nexec "+r.evil+"\n") },
			trigger: [][]string{{"commit", "-q", "--allow-empty", "-m", "x"}}},
		{name: "hooks_path", plant: func(r *payloadRepo) {
			r.write("hooks2/post-commit", "#!/bin/sh\nexec "+r.evil+"\n")
			r.config("core.hooksPath", "hooks2")
		}, trigger: [][]string{{"commit", "-q", "--allow-empty", "-m", "x"}}},
		{name: "filter_clean_gitattributes", named: true, plant: func(r *payloadRepo) {
			r.write(".gitattributes", "*.txt filter=x\n")
			r.config("filter.x.clean", r.evil)
			dirty(r)
		}, trigger: [][]string{{"diff"}, {"add", "a.txt"}}},
		{name: "filter_process_info_attributes", named: true, plant: func(r *payloadRepo) {
			r.write(".git/info/attributes", "*.txt filter=y\n")
			r.config("filter.y.process", r.evil)
			dirty(r)
		}, trigger: [][]string{{"diff"}}},
		{name: "filter_smudge", named: true, plant: func(r *payloadRepo) {
			r.write(".gitattributes", "*.txt filter=z\n")
			r.config("filter.z.smudge", r.evil)
			os.Remove(filepath.Join(r.ws, "a.txt"))
		}, trigger: [][]string{{"checkout", "--", "a.txt"}}},
		// No environment turns diff.external off: SafeEnv's documented
		// use adds --no-ext-diff (safeArgs).
		{name: "diff_external", plant: func(r *payloadRepo) { r.config("diff.external", r.evil); dirty(r) }, trigger: diff},
		{name: "diff_textconv", named: true, plant: func(r *payloadRepo) {
			r.write(".gitattributes", "*.txt diff=t\n")
			r.config("diff.t.textconv", r.evil)
			dirty(r)
		}, trigger: diff},
		{name: "diff_command", named: true, plant: func(r *payloadRepo) {
			r.write(".gitattributes", "*.txt diff=c\n")
			r.config("diff.c.command", r.evil)
			dirty(r)
		}, trigger: diff},
		{name: "core_pager", plant: func(r *payloadRepo) { r.config("core.pager", r.evil) }, trigger: [][]string{{"pty", "log"}}},
		{name: "pager_log", plant: func(r *payloadRepo) { r.config("pager.log", r.evil) }, trigger: [][]string{{"pty", "log"}}},
		{name: "core_editor", plant: func(r *payloadRepo) { r.config("core.editor", r.evil) },
			trigger: [][]string{{"commit", "--allow-empty"}}},
		{name: "sequence_editor", plant: func(r *payloadRepo) { r.config("sequence.editor", r.evil) },
			trigger: [][]string{{"rebase", "-i", "HEAD"}}},
		{name: "ssh_command", plant: func(r *payloadRepo) { r.config("core.sshCommand", r.evil) },
			trigger: [][]string{{"ls-remote", "ssh://127.0.0.1:9/x"}}},
		{name: "git_proxy", plant: func(r *payloadRepo) { r.config("core.gitProxy", r.evil) },
			trigger: [][]string{{"ls-remote", "git://127.0.0.1:9/x"}}},
		{name: "credential_helper", plant: func(r *payloadRepo) { r.config("credential.helper", "!"+r.evil) },
			trigger: credential, stdin: "protocol=https\nhost=example.invalid\n\n"},
		{name: "credential_helper_for_url", plant: func(r *payloadRepo) { r.config("credential.https://example.invalid.helper", "!"+r.evil) },
			trigger: credential, stdin: "protocol=https\nhost=example.invalid\n\n"},
		{name: "askpass", plant: func(r *payloadRepo) { r.config("core.askPass", r.evil) },
			trigger: credential, stdin: "protocol=https\nhost=example.invalid\n\n"},
		{name: "gpg_program_show_signature", plant: func(r *payloadRepo) {
			r.config("gpg.program", r.evil, "log.showSignature", "true")
			signedCommit(r)
		}, trigger: [][]string{{"log"}}},
		{name: "ext_transport", plant: func(r *payloadRepo) {
			r.config("protocol.ext.allow", "always", "remote.o.url", "ext::"+r.evil+" %S")
		}, trigger: [][]string{{"fetch", "o"}}},
		{name: "remote_uploadpack", plant: func(r *payloadRepo) {
			r.config("remote.u.url", r.ws, "remote.u.uploadpack", r.evil)
		}, trigger: [][]string{{"fetch", "u"}}},
		{name: "alias", named: true, plant: func(r *payloadRepo) { r.config("alias.st", "!"+r.evil) }, trigger: [][]string{{"st"}}},
		{name: "trailer_cmd", named: true, plant: func(r *payloadRepo) { r.config("trailer.x.cmd", r.evil) },
			trigger: [][]string{{"interpret-trailers", "--trailer", "x=1"}, {"commit", "-q", "--allow-empty", "-m", "x", "--trailer", "x=1"}}, stdin: "msg\n"},
		{name: "trailer_command", named: true, plant: func(r *payloadRepo) { r.config("trailer.y.command", r.evil) },
			trigger: [][]string{{"interpret-trailers"}, {"commit", "-q", "--allow-empty", "-m", "x", "--trailer", "z=1"}}, stdin: "msg\n"},
		{name: "tar_command_builtin_format", named: true, plant: func(r *payloadRepo) { r.config("tar.tgz.command", r.evil) },
			trigger: [][]string{{"archive", "--format=tgz", "HEAD"}}},
		{name: "tar_command_own_format", named: true, plant: func(r *payloadRepo) { r.config("tar.foo.command", r.evil) },
			trigger: [][]string{{"archive", "--format=foo", "HEAD"}}},
	}
}

// signedCommit makes HEAD a commit carrying a (bogus) PGP signature, so
// showing it runs the verifier.
func signedCommit(r *payloadRepo) {
	tree := strings.TrimSpace(r.git(nil, "rev-parse", "HEAD^{tree}"))
	head := strings.TrimSpace(r.git(nil, "rev-parse", "HEAD"))
	obj := "tree " + tree + "\nparent " + head + "\nauthor t <t@t> 1 +0000\ncommitter t <t@t> 1 +0000\n" +
		"gpgsig -----BEGIN PGP SIGNATURE-----\n \n AAAA\n -----END PGP SIGNATURE-----\n\nsigned\n"
	f := filepath.Join(r.home, "commit")
	os.WriteFile(f, []byte(obj), 0o644)
	id := strings.TrimSpace(r.git(nil, "hash-object", "-t", "commit", "-w", f))
	r.git(nil, "update-ref", "HEAD", id)
}

// TestSafeGitEnv plants every payload in a fresh repository: plain git
// runs it (the control), git under SafeEnvFor does not, and neither
// does git under SafeEnv for the payloads it covers without names.
func TestSafeGitEnv(t *testing.T) {
	t.Parallel()
	for _, p := range gitPayloads() {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			modes := []string{"plain", "for"}
			if !p.named {
				modes = append(modes, "fixed")
			}
			for _, mode := range modes {
				r := newPayloadRepo(t)
				p.plant(r)
				var env []string
				switch mode {
				case "for":
					var err error
					if env, err = SafeEnvFor(r.ws); err != nil {
						t.Fatal(err)
					}
				case "fixed":
					env = SafeEnv()
				}
				var outs []string
				for _, args := range p.trigger {
					if mode != "plain" {
						args = safeArgs(args)
					}
					out, _ := r.run(env, p.stdin, args...)
					outs = append(outs, out)
				}
				if ran := r.ran(); ran != (mode == "plain") {
					t.Errorf("%s: payload ran=%v\n%s", mode, ran, strings.Join(outs, "\n---\n"))
				}
			}
		})
	}
}

// safeArgs adds --no-ext-diff to the commands that show diffs, as
// SafeEnv's documentation asks.
func safeArgs(args []string) []string {
	for i, a := range args {
		switch a {
		case "diff", "log", "show":
			return append(append(append([]string(nil), args[:i+1]...), "--no-ext-diff"), args[i+1:]...)
		case "pty":
			continue
		}
	}
	return args
}

// TestSafeGitEnvKeepsGitWorking: the overrides leave ordinary use alone.
func TestSafeGitEnvKeepsGitWorking(t *testing.T) {
	t.Parallel()
	r := newPayloadRepo(t)
	env, err := SafeEnvFor(r.ws)
	if err != nil {
		t.Fatal(err)
	}
	r.write("a.txt", "two\n")
	if out := r.git(env, "diff"); !strings.Contains(out, "+two") {
		t.Errorf("diff: %q", out)
	}
	r.git(env, "commit", "-qam", "two")
	if out := r.git(env, "log", "--oneline"); !strings.Contains(out, "two") {
		t.Errorf("log: %q", out)
	}
}

// TestSafeGitEnvForNamesBound: a workspace naming MaxSafeNames
// aliases gets an override for each; one more is refused, not half
// covered.
func TestSafeGitEnvForNamesBound(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		n    int
		fail bool
	}{{"at", MaxSafeNames, false}, {"past", MaxSafeNames + 1, true}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newPayloadRepo(t)
			var b strings.Builder
			b.WriteString("[core]\n\tbare = false\n[alias]\n")
			for i := 0; i < tt.n; i++ {
				fmt.Fprintf(&b, "\ta%d = !true\n", i)
			}
			r.write(".git/config", b.String())
			env, err := SafeEnvFor(r.ws)
			if (err != nil) != tt.fail {
				t.Fatalf("err = %v, want failure %v", err, tt.fail)
			}
			if !tt.fail && !slices.Contains(env, fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(safeGitConfig)+tt.n)) {
				t.Errorf("not every alias overridden")
			}
		})
	}
}
