package gitguard

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitList is what git itself reads from a config file: the dotted names
// `git config --file --list` prints, in order.
func gitList(t *testing.T, data []byte) ([]string, bool) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(f, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "config", "--file", f, "--list", "--name-only", "-z", "--no-includes")
	cmd.Env = []string{"HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		return nil, false
	}
	var names []string
	for _, n := range strings.Split(string(out), "\x00") {
		if n != "" {
			names = append(names, n)
		}
	}
	return names, true
}

// anyWorktree accepts every core.worktree value, as a sweep does for
// one naming an inert directory (gitSweep.worktreeInert, tested on
// files by TestGitWorktreeInert).
func anyWorktree(string) bool { return true }

func TestNeutraliseGitConfig(t *testing.T) {
	t.Parallel()
	const initConfig = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n"
	tests := []struct {
		name    string
		in      string
		removed []string
		// keep must still be present, as git reads the output.
		keep []string
		bad  bool // git refuses it, and so does the rewriter
	}{
		// What tools write: kept whole (each read from the tool's own
		// output, see allow.go).
		{name: "git init", in: initConfig, keep: []string{"core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates"}},
		{name: "cargo new", in: "[core]\n\tbare = false\n\trepositoryformatversion = 0\n\tfilemode = true\n\tlogallrefupdates = true\n", keep: []string{"core.bare"}},
		{name: "git init sha256", in: "[core]\n\trepositoryformatversion = 1\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n[extensions]\n\tobjectformat = sha256\n", keep: []string{"extensions.objectformat"}},
		{name: "fresh clone", in: initConfig + "[remote \"origin\"]\n\turl = https://x/y\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n",
			keep: []string{"core.bare", "remote.origin.url", "branch.main.remote", "branch.main.merge"}},
		{name: "clone mirror", in: "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n[remote \"origin\"]\n\turl = /tmp/up\n\tfetch = +refs/*:refs/*\n\tmirror = true\n", keep: []string{"remote.origin.mirror"}},
		{name: "partial clone", in: "[core]\n\trepositoryformatversion = 1\n[remote \"origin\"]\n\turl = file:///tmp/up\n\tpromisor = true\n\tpartialclonefilter = blob:none\n[extensions]\n\tpartialclone = origin\n", keep: []string{"remote.origin.promisor", "extensions.partialclone"}},
		{name: "clone recurse submodules", in: initConfig + "[submodule]\n\tactive = .\n[submodule \"csub\"]\n\turl = /tmp/cl\n\tactive = true\n", keep: []string{"submodule.active", "submodule.csub.url"}},
		{name: "submodule git directory", in: initConfig + "\tworktree = ../../../sub\n[submodule \"sub\"]\n\tpath = sub\n\turl = ../up\n", keep: []string{"core.worktree", "submodule.sub.path"}},
		{name: "sparse checkout", in: initConfig + "[extensions]\n\tworktreeConfig = true\n[core]\n\tsparseCheckout = true\n\tsparseCheckoutCone = true\n", keep: []string{"extensions.worktreeconfig", "core.sparsecheckout"}},
		{name: "an agent's settings", in: "[user]\n\tname = A\n\temail = a@a\n[pull]\n\trebase = false\n[commit]\n\tgpgsign = false\n[core]\n\tautocrlf = input\n", keep: []string{"user.name", "pull.rebase", "commit.gpgsign"}},
		// The attacker pass's findings, and a key git may learn later.
		{name: "trailer commands", in: "[trailer \"x\"]\n\tcmd = evil\n\tcommand = evil\n\twhere = end\n", removed: []string{"trailer.x.cmd", "trailer.x.command", "trailer.x.where"}},
		{name: "tar command", in: "[tar \"tar.gz\"]\n\tcommand = evil\n[tar.foo]\n\tcommand = evil\n", removed: []string{"tar.tar.gz.command", "tar.foo.command"}},
		{name: "core.worktree is judged by the sweep", in: "[core]\n\tworktree = /\n", keep: []string{"core.worktree"}},
		{name: "future key", in: "[foo \"bar\"]\n\tcommand = evil\n[core]\n\tbare = false\n", removed: []string{"foo.bar.command"}, keep: []string{"core.bare"}},
		// Values: only the inert ones of a listed key.
		{name: "not a boolean", in: "[core]\n\tbare = maybe\n\tfilemode = yes\n\tsymlinks\n", removed: []string{"core.bare"}, keep: []string{"core.filemode", "core.symlinks"}},
		{name: "interactive rebase", in: "[pull]\n\trebase = interactive\n[branch \"m\"]\n\trebase = i\n\tremote = o\n", removed: []string{"pull.rebase", "branch.m.rebase"}, keep: []string{"branch.m.remote"}},
		{name: "signing on", in: "[commit]\n\tgpgsign = true\n[user]\n\tsigningkey = k\n", removed: []string{"commit.gpgsign", "user.signingkey"}},
		{name: "remote helper urls", in: "[remote \"a\"]\n\turl = ext::sh -c evil\n\tpushurl = fd::3\n[remote \"b\"]\n\turl = -oProxyCommand=evil\n[remote \"c\"]\n\turl = ssh://[::1]/x\n\turl = git@h:x\n\turl = C:/x\n",
			removed: []string{"remote.a.url", "remote.a.pushurl", "remote.b.url"}, keep: []string{"remote.c.url"}},
		{name: "submodule url helper", in: "[submodule \"s\"]\n\turl = ext::evil\n\tpath = s\n", removed: []string{"submodule.s.url"}, keep: []string{"submodule.s.path"}},
		{name: "text key alone", in: "[user]\n\tname\n", removed: []string{"user.name"}},
		{name: "empty subsection is another key", in: "[core \"\"]\n\tbare = false\n[core.]\n\tbare = false\n[.core]\n\tbare = false\n", removed: []string{"core..bare", "core..bare", ".core.bare"}},
		{name: "subsection where none belongs", in: "[core \"x\"]\n\tbare = false\n[remote]\n\turl = /x\n", removed: []string{"core.x.bare", "remote.url"}},
		// Every exec-capable key the denylist named goes too.
		{name: "fsmonitor", in: "[core]\n\tbare = false\n\tfsmonitor = /ws/evil\n", removed: []string{"core.fsmonitor"}, keep: []string{"core.bare"}},
		{name: "boolean key", in: "[core]\n\tfsmonitor\n\tbare = false\n", removed: []string{"core.fsmonitor"}, keep: []string{"core.bare"}},
		{name: "entry on the header's line", in: "[core] fsmonitor = evil\n[user]name=x\n", removed: []string{"core.fsmonitor"}, keep: []string{"user.name"}},
		{name: "header without newline before key", in: "[core]fsmonitor=evil", removed: []string{"core.fsmonitor"}},
		{name: "mixed case", in: "[CoRe]\n\tFsMonitor = evil\n\tHOOKSPATH = x\n\tBare = TRUE\n", removed: []string{"core.fsmonitor", "core.hookspath"}, keep: []string{"core.bare"}},
		{name: "continuation lines", in: "[core]\n\tfsmonitor = ev\\\nil \\\n  more\n\tbare = true\n", removed: []string{"core.fsmonitor"}, keep: []string{"core.bare"}},
		{name: "quoted value with comment chars", in: "[core]\n\tpager = \"less # not a comment ; \\\" \"  # comment\n\teditor = vi\n", removed: []string{"core.pager", "core.editor"}},
		{name: "CRLF", in: "[core]\r\n\tfsmonitor = evil\r\n\tbare = false\r\n", removed: []string{"core.fsmonitor"}, keep: []string{"core.bare"}},
		{name: "BOM", in: "\xef\xbb\xbf[core]\n\tsshCommand = evil\n", removed: []string{"core.sshcommand"}},
		{name: "no trailing newline", in: "[core]\n\tbare = false\n\taskPass = evil", removed: []string{"core.askpass"}, keep: []string{"core.bare"}},
		{name: "filters", in: "[filter \"lfs\"]\n\tclean = evil %f\n\tsmudge = evil\n\tprocess = evil\n\trequired\n", removed: []string{"filter.lfs.clean", "filter.lfs.smudge", "filter.lfs.process", "filter.lfs.required"}},
		{name: "diff drivers and external", in: "[diff]\n\texternal = evil\n\trenames = true\n[diff \"x\"]\n\ttextconv = evil\n\tcommand = evil\n", removed: []string{"diff.external", "diff.renames", "diff.x.textconv", "diff.x.command"}},
		{name: "pagers editors", in: "[pager]\n\tlog = evil\n[sequence]\n\teditor = evil\n", removed: []string{"pager.log", "sequence.editor"}},
		{name: "credential helpers", in: "[credential]\n\thelper = evil\n[credential \"https://x\"]\n\thelper = evil\n", removed: []string{"credential.helper", "credential.https://x.helper"}},
		{name: "gpg", in: "[gpg]\n\tprogram = evil\n[gpg \"ssh\"]\n\tprogram = evil\n[log]\n\tshowSignature = true\n", removed: []string{"gpg.program", "gpg.ssh.program", "log.showsignature"}},
		{name: "remotes", in: "[remote \"o\"]\n\turl = /x\n\tuploadpack = evil\n\treceivepack = evil\n\tvcs = ext\n", removed: []string{"remote.o.uploadpack", "remote.o.receivepack", "remote.o.vcs"}, keep: []string{"remote.o.url"}},
		{name: "aliases and includes", in: "[alias]\n\tst = !evil\n\tco = checkout\n[include]\n\tpath = /ws/x\n[includeIf \"gitdir:/\"]\n\tpath = /ws/y\n", removed: []string{"alias.st", "alias.co", "include.path", "includeif.gitdir:/.path"}},
		{name: "old subsection syntax", in: "[filter.x]\n\tclean = evil\n[remote.O]\n\turl = /x\n", removed: []string{"filter.x.clean"}, keep: []string{"remote.o.url"}},
		{name: "subsection escapes", in: "[diff \"a\\\"]b\"]\n\ttextconv = evil\n[remote \"a\\\"]b\"]\n\turl = /x\n", removed: []string{"diff.a\"]b.textconv"}, keep: []string{"remote.a\"]b.url"}},
		{name: "submodule update", in: "[submodule \"a\"]\n\tupdate = !evil\n\turl = x\n[submodule \"b\"]\n\tupdate = rebase\n", removed: []string{"submodule.a.update"}, keep: []string{"submodule.a.url", "submodule.b.update"}},
		{name: "merge driver, protocol, hook", in: "[merge \"m\"]\n\tdriver = evil\n[protocol \"ext\"]\n\tallow = always\n[hook \"h\"]\n\tcommand = evil\n", removed: []string{"merge.m.driver", "protocol.ext.allow", "hook.h.command"}},
		{name: "comments kept", in: "# top\n[core] ; c\n\tfsmonitor = evil ; trailing\n; end\n", removed: []string{"core.fsmonitor"}},
		{name: "bad escape refused", in: "[core]\n\tfsmonitor = \\q\n", bad: true},
		{name: "unterminated quote refused", in: "[core]\n\tfsmonitor = \"evil\n", bad: true},
		{name: "unterminated header refused", in: "[core\n\tfsmonitor = evil\n", bad: true},
		{name: "key without = refused", in: "[core]\n\tfsmonitor evil\n", bad: true},
		{name: "key outside a section", in: "fsmonitor = evil\n[core]\n\tbare = 1\n", removed: []string{"fsmonitor"}, keep: []string{"core.bare"}},
		{name: "unquoted subsection refused", in: "[diff x]\n\ttextconv = evil\n", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := []byte(tt.in)
			gitIn, gitOK := gitList(t, in)
			if gitOK == tt.bad {
				t.Fatalf("git accepts the input: %v; the case says bad=%v", gitOK, tt.bad)
			}
			out, removed, err := neutraliseGitConfig(in, anyWorktree)
			if tt.bad {
				if !errors.Is(err, errGitConfigSyntax) {
					t.Fatalf("err = %v, want errGitConfigSyntax", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(removed, tt.removed) {
				t.Errorf("removed %q, want %q", removed, tt.removed)
			}
			if len(tt.removed) == 0 && !bytes.Equal(out, in) {
				t.Errorf("nothing to remove, but the file changed: %q", out)
			}
			gitOut, ok := gitList(t, out)
			if !ok {
				t.Fatalf("git refuses the rewritten config %q", out)
			}
			// What git reads afterwards is what it read before, minus
			// exactly the removed entries.
			want := slices.Clone(gitIn)
			for _, r := range tt.removed {
				i := slices.IndexFunc(want, func(n string) bool { return strings.ToLower(n) == strings.ToLower(r) })
				if i < 0 {
					t.Fatalf("git never read %s", r)
				}
				want = slices.Delete(want, i, i+1)
			}
			if !slices.Equal(gitOut, want) {
				t.Errorf("git reads %q after the rewrite, want %q", gitOut, want)
			}
			for _, k := range tt.keep {
				if !slices.ContainsFunc(gitOut, func(n string) bool { return strings.ToLower(n) == k }) {
					t.Errorf("lost %s", k)
				}
			}
			items, err := scanGitConfig(in)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, it := range items {
				names = append(names, it.name())
			}
			if !slices.Equal(names, gitIn) {
				t.Errorf("scanner reads %q, git reads %q", names, gitIn)
			}
		})
	}
}

// denylistBefore is the guard's predicate before the allowlist, kept as
// the control of TestNeutraliseGitConfigAllowlistControl: entries it
// does not name survive.
func denylistBefore(it gitConfigItem) bool {
	sections := map[string]bool{
		"alias": true, "browser": true, "difftool": true, "filter": true, "gpg": true,
		"guitool": true, "hook": true, "instaweb": true, "man": true, "mergetool": true,
		"pager": true, "protocol": true, "sendemail": true, "trace2": true, "web": true,
	}
	keys := map[string]bool{
		"core.fsmonitor": true, "core.hookspath": true, "core.pager": true, "core.editor": true,
		"core.sshcommand": true, "core.askpass": true, "core.gitproxy": true,
		"core.alternaterefscommand": true, "sequence.editor": true, "diff.external": true,
		"diff.*.textconv": true, "diff.*.command": true, "merge.*.driver": true,
		"credential.helper": true, "credential.*.helper": true, "remote.*.uploadpack": true,
		"remote.*.receivepack": true, "remote.*.vcs": true, "include.path": true,
		"includeif.*.path": true, "uploadpack.packobjectshook": true,
		"interactive.difffilter": true, "commit.template": true, "log.showsignature": true,
	}
	if sections[it.section] {
		return true
	}
	if it.subsection == "" {
		return keys[it.section+"."+it.key]
	}
	if it.section == "submodule" && it.key == "update" {
		return it.boolean || !map[string]bool{"checkout": true, "rebase": true, "merge": true, "none": true}[it.value]
	}
	return keys[it.section+".*."+it.key]
}

// TestNeutraliseGitConfigAllowlistControl: the keys the attacker pass
// found (and one git may learn later) are removed by the allowlist; the
// denylist it replaced kept every one of them (the control).
func TestNeutraliseGitConfigAllowlistControl(t *testing.T) {
	t.Parallel()
	in := []byte("[trailer \"x\"]\n\tcmd = evil\n\tcommand = evil\n[tar \"tgz\"]\n\tcommand = evil\n[core]\n\tworktree = /elsewhere\n[foo \"bar\"]\n\tcommand = evil\n")
	want := []string{"trailer.x.cmd", "trailer.x.command", "tar.tgz.command", "core.worktree", "foo.bar.command"}
	_, removed, err := neutraliseGitConfig(in, func(string) bool { return false })
	if err != nil || !slices.Equal(removed, want) {
		t.Errorf("allowlist removed %q (%v), want %q", removed, err, want)
	}
	items, err := scanGitConfig(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if denylistBefore(it) {
			t.Errorf("control: the denylist named %s; the case shows nothing", it.name())
		}
	}
}

// FuzzNeutraliseGitConfig: on any input the rewriter either refuses it
// (exactly when the scanner does) or returns a config that parses,
// holds only allowed entries, keeps every allowed entry in order, and
// is a fixed point of the rewrite.
func FuzzNeutraliseGitConfig(f *testing.F) {
	for _, s := range []string{
		"[core]\n\tfsmonitor = evil\n", "[core]fsmonitor", "[a.b]\nc=d\\\ne", "[x \"y\\\"\"]\nk=\"v;#\"#c\r\n",
		"\xef\xbb\xbf[filter \"l\"]\nclean=x\n[alias]\ns=!x", "[core]\n\tbare = false\n\tpager = \\\n",
		"[trailer \"x\"]\n\tcmd = e\n[tar.tgz]\ncommand=e\n[core]\n\tworktree = ../a\n\tworktree = /b\n[core \"\"]\nbare\n[.core]\nbare=1\n",
		"[remote \"o\"]\n\turl = ext::sh\n\turl = /x\n[submodule \"s\"]\n\tupdate = !e\n\tpath = s\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkNeutralised(t, data, oddWorktree)
	})
}

// oddWorktree accepts core.worktree values of odd length: a stand-in
// for the sweep's judgement that keeps some and removes others.
func oddWorktree(v string) bool { return len(v)%2 == 1 }

// checkNeutralised holds neutraliseGitConfig's contract on data.
func checkNeutralised(t interface {
	Fatalf(string, ...any)
}, data []byte, worktree func(string) bool) {
	before, perr := scanGitConfig(data)
	out, removed, err := neutraliseGitConfig(data, worktree)
	if (perr != nil) != (err != nil) {
		t.Fatalf("scanner says %v, rewriter says %v", perr, err)
	}
	if err != nil {
		if !errors.Is(err, errGitConfigSyntax) {
			t.Fatalf("refused, but not as a syntax error: %v", err)
		}
		return
	}
	after, err := scanGitConfig(out)
	if err != nil {
		t.Fatalf("output does not parse: %v\n%q", err, out)
	}
	var kept []string
	for _, it := range before {
		if gitAllowedEntry(it, worktree) {
			kept = append(kept, it.name()+"="+it.value)
		}
	}
	var got []string
	for _, it := range after {
		if !gitAllowedEntry(it, worktree) {
			t.Fatalf("entry %s survived: %q", it.name(), out)
		}
		got = append(got, it.name()+"="+it.value)
	}
	if !slices.Equal(got, kept) {
		t.Fatalf("kept %q, want %q", got, kept)
	}
	if len(removed)+len(kept) != len(before) {
		t.Fatalf("removed %d + kept %d != %d", len(removed), len(kept), len(before))
	}
	again, removed2, err := neutraliseGitConfig(out, worktree)
	if err != nil || len(removed2) != 0 || !bytes.Equal(again, out) {
		t.Fatalf("not a fixed point: %v %q", err, removed2)
	}
}
