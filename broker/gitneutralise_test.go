package broker

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

func TestNeutraliseGitConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		removed []string
		// keep must still be present, as git reads the output.
		keep []string
		bad  bool // git refuses it, and so does the rewriter
	}{
		{name: "fresh clone: nothing removed", in: "[core]\n\trepositoryformatversion = 0\n\tbare = false\n[remote \"origin\"]\n\turl = https://x/y\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n",
			keep: []string{"core.bare", "remote.origin.url", "branch.main.remote"}},
		{name: "fsmonitor", in: "[core]\n\tbare = false\n\tfsmonitor = /ws/evil\n", removed: []string{"core.fsmonitor"}, keep: []string{"core.bare"}},
		{name: "boolean key", in: "[core]\n\tfsmonitor\n\tbare = false\n", removed: []string{"core.fsmonitor"}, keep: []string{"core.bare"}},
		{name: "entry on the header's line", in: "[core] fsmonitor = evil\n[user]name=x\n", removed: []string{"core.fsmonitor"}, keep: []string{"user.name"}},
		{name: "header without newline before key", in: "[core]fsmonitor=evil", removed: []string{"core.fsmonitor"}},
		{name: "mixed case", in: "[CoRe]\n\tFsMonitor = evil\n\tHOOKSPATH = x\n", removed: []string{"core.fsmonitor", "core.hookspath"}},
		{name: "continuation lines", in: "[core]\n\tfsmonitor = ev\\\nil \\\n  more\n\tbare = true\n", removed: []string{"core.fsmonitor"}, keep: []string{"core.bare"}},
		{name: "quoted value with comment chars", in: "[core]\n\tpager = \"less # not a comment ; \\\" \"  # comment\n\teditor = vi\n", removed: []string{"core.pager", "core.editor"}},
		{name: "CRLF", in: "[core]\r\n\tfsmonitor = evil\r\n\tbare = false\r\n", removed: []string{"core.fsmonitor"}, keep: []string{"core.bare"}},
		{name: "BOM", in: "\xef\xbb\xbf[core]\n\tsshCommand = evil\n", removed: []string{"core.sshcommand"}},
		{name: "no trailing newline", in: "[core]\n\tbare = false\n\taskPass = evil", removed: []string{"core.askpass"}, keep: []string{"core.bare"}},
		{name: "filters", in: "[filter \"lfs\"]\n\tclean = evil %f\n\tsmudge = evil\n\tprocess = evil\n\trequired\n", removed: []string{"filter.lfs.clean", "filter.lfs.smudge", "filter.lfs.process", "filter.lfs.required"}},
		{name: "diff drivers and external", in: "[diff]\n\texternal = evil\n\trenames = true\n[diff \"x\"]\n\ttextconv = evil\n\tcommand = evil\n\tbinary = true\n", removed: []string{"diff.external", "diff.x.textconv", "diff.x.command"}, keep: []string{"diff.renames", "diff.x.binary"}},
		{name: "pagers editors", in: "[pager]\n\tlog = evil\n[sequence]\n\teditor = evil\n", removed: []string{"pager.log", "sequence.editor"}},
		{name: "credential helpers", in: "[credential]\n\thelper = evil\n[credential \"https://x\"]\n\thelper = evil\n\tusername = u\n", removed: []string{"credential.helper", "credential.https://x.helper"}, keep: []string{"credential.https://x.username"}},
		{name: "gpg", in: "[gpg]\n\tprogram = evil\n[gpg \"ssh\"]\n\tprogram = evil\n\tdefaultKeyCommand = evil\n[log]\n\tshowSignature = true\n", removed: []string{"gpg.program", "gpg.ssh.program", "gpg.ssh.defaultkeycommand", "log.showsignature"}},
		{name: "remotes", in: "[remote \"o\"]\n\turl = /x\n\tuploadpack = evil\n\treceivepack = evil\n\tvcs = ext\n", removed: []string{"remote.o.uploadpack", "remote.o.receivepack", "remote.o.vcs"}, keep: []string{"remote.o.url"}},
		{name: "aliases and includes", in: "[alias]\n\tst = !evil\n\tco = checkout\n[include]\n\tpath = /ws/x\n[includeIf \"gitdir:/\"]\n\tpath = /ws/y\n", removed: []string{"alias.st", "alias.co", "include.path", "includeif.gitdir:/.path"}},
		{name: "old subsection syntax", in: "[filter.x]\n\tclean = evil\n[diff.Y]\n\ttextconv = evil\n", removed: []string{"filter.x.clean", "diff.y.textconv"}},
		{name: "subsection escapes", in: "[diff \"a\\\"]b\"]\n\ttextconv = evil\n", removed: []string{"diff.a\"]b.textconv"}},
		{name: "submodule update", in: "[submodule \"a\"]\n\tupdate = !evil\n\turl = x\n[submodule \"b\"]\n\tupdate = rebase\n", removed: []string{"submodule.a.update"}, keep: []string{"submodule.a.url", "submodule.b.update"}},
		{name: "merge driver, protocol, hook", in: "[merge \"m\"]\n\tdriver = evil\n\tname = m\n[protocol \"ext\"]\n\tallow = always\n[hook \"h\"]\n\tcommand = evil\n", removed: []string{"merge.m.driver", "protocol.ext.allow", "hook.h.command"}, keep: []string{"merge.m.name"}},
		{name: "comments kept", in: "# top\n[core] ; c\n\tfsmonitor = evil ; trailing\n; end\n", removed: []string{"core.fsmonitor"}},
		{name: "bad escape refused", in: "[core]\n\tfsmonitor = \\q\n", bad: true},
		{name: "unterminated quote refused", in: "[core]\n\tfsmonitor = \"evil\n", bad: true},
		{name: "unterminated header refused", in: "[core\n\tfsmonitor = evil\n", bad: true},
		{name: "key without = refused", in: "[core]\n\tfsmonitor evil\n", bad: true},
		{name: "key outside a section is no git key", in: "fsmonitor = evil\n[core]\n\tbare = 1\n", keep: []string{"fsmonitor", "core.bare"}},
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
			out, removed, err := neutraliseGitConfig(in)
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
			want := slices.DeleteFunc(slices.Clone(gitIn), func(n string) bool {
				return slices.Contains(tt.removed, strings.ToLower(n)) || slices.Contains(tt.removed, n)
			})
			if !slices.Equal(gitOut, want) {
				t.Errorf("git reads %q after the rewrite, want %q", gitOut, want)
			}
			for _, k := range tt.keep {
				if !slices.Contains(gitOut, k) {
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

// FuzzNeutraliseGitConfig: on any input the rewriter either refuses it
// or returns a config that parses, holds no exec-capable entry, keeps
// every other entry in order, and is a fixed point of the rewrite.
func FuzzNeutraliseGitConfig(f *testing.F) {
	for _, s := range []string{
		"[core]\n\tfsmonitor = evil\n", "[core]fsmonitor", "[a.b]\nc=d\\\ne", "[x \"y\\\"\"]\nk=\"v;#\"#c\r\n",
		"\xef\xbb\xbf[filter \"l\"]\nclean=x\n[alias]\ns=!x", "[core]\n\tbare = false\n\tpager = \\\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		before, perr := scanGitConfig(data)
		out, removed, err := neutraliseGitConfig(data)
		if err != nil {
			if perr == nil && !errors.Is(err, errGitConfigSyntax) {
				t.Fatalf("parsable input refused: %v", err)
			}
			return
		}
		after, err := scanGitConfig(out)
		if err != nil {
			t.Fatalf("output does not parse: %v\n%q", err, out)
		}
		var kept []string
		for _, it := range before {
			if !isGitExecEntry(it) {
				kept = append(kept, it.name()+"="+it.value)
			}
		}
		var got []string
		for _, it := range after {
			if isGitExecEntry(it) {
				t.Fatalf("exec entry %s survived: %q", it.name(), out)
			}
			got = append(got, it.name()+"="+it.value)
		}
		if !slices.Equal(got, kept) {
			t.Fatalf("kept %q, want %q", got, kept)
		}
		if len(removed)+len(kept) != len(before) {
			t.Fatalf("removed %d + kept %d != %d", len(removed), len(kept), len(before))
		}
		again, removed2, err := neutraliseGitConfig(out)
		if err != nil || len(removed2) != 0 || !bytes.Equal(again, out) {
			t.Fatalf("not a fixed point: %v %q", err, removed2)
		}
	})
}
