package gitguard

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// genGitConfig draws git config text the way a hostile command may
// write it: section headers of every form (plain, quoted subsections
// with escapes and odd bytes, empty subsections, the old "[a.b]" form),
// keys on the allowlist and off it in any letter case, keys before any
// header and on a header's line, boolean keys, values plain, quoted,
// escaped, commented and continued over lines, includes, comments,
// blank lines, CRLF and a byte order mark; now and then a byte git
// refuses.
func genGitConfig() *rapid.Generator[string] {
	sections := []string{"core", "remote", "branch", "submodule", "user", "extensions", "trailer", "tar",
		"include", "includeIf", "alias", "filter", "diff", "foo", "pull", "commit", "Core", "REMOTE"}
	keys := []string{"bare", "filemode", "worktree", "url", "pushurl", "fetch", "merge", "rebase", "name",
		"email", "path", "update", "active", "cmd", "command", "fsmonitor", "hooksPath", "objectformat",
		"worktreeConfig", "repositoryformatversion", "gpgsign", "clean", "textconv", "x-y", "k9", "URL"}
	values := []string{"", "true", "false", "yes", "Off", "1", "0", "2", "maybe", "merges", "interactive",
		"input", "always", "/ws/evil.sh", "ext::sh -c evil", "-oProxyCommand=x", "https://h/x", "../../../sub",
		"checkout", "!evil", "sha256", "refs/heads/*:refs/remotes/o/*", "false", "a b  c"}
	subs := []string{"", "o", "x", "tgz", "tar.gz", "a\"b", "a\\b", "a]b", "sp ace", "é", "gitdir:/"}
	eol := rapid.SampledFrom([]string{"\n", "\n", "\n", "\r\n"})
	header := rapid.Custom(func(t *rapid.T) string {
		sec := rapid.SampledFrom(sections).Draw(t, "section")
		switch rapid.IntRange(0, 4).Draw(t, "form") {
		case 0:
			return "[" + sec + "]"
		case 1:
			sub := rapid.SampledFrom(subs).Draw(t, "sub")
			q := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(sub)
			if rapid.Bool().Draw(t, "needless escape") {
				q = strings.Replace(q, "o", `\o`, 1) // git drops a backslash before any byte
			}
			return "[" + sec + rapid.SampledFrom([]string{" ", "  ", "\t"}).Draw(t, "blank") + `"` + q + `"]`
		case 2:
			return "[" + sec + "." + rapid.SampledFrom([]string{"o", "X", "a.b", ""}).Draw(t, "old") + "]"
		case 3:
			return "[." + sec + "]"
		default:
			return "[" + sec + " \"" + rapid.SampledFrom(subs).Draw(t, "unescaped") + "\"]" // may be refused
		}
	})
	value := rapid.Custom(func(t *rapid.T) string {
		v := rapid.SampledFrom(values).Draw(t, "value")
		switch rapid.IntRange(0, 6).Draw(t, "style") {
		case 0:
			return v
		case 1:
			return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
		case 2:
			return v + " ; comment"
		case 3:
			return v + " # \"not closed"
		case 4:
			h := len(v) / 2
			return v[:h] + "\\" + eol.Draw(t, "cont") + v[h:]
		case 5:
			return v + rapid.SampledFrom([]string{`\t`, `\n`, `\b`, `\\`, `\"`, `\x`}).Draw(t, "escape")
		default:
			return `"` + v + "  " // an unterminated quote
		}
	})
	var allowed []string
	for name := range gitAllowed {
		allowed = append(allowed, name)
	}
	slices.Sort(allowed)
	// listed is a header and an entry of a name on the allowlist (whose
	// value may or may not be one it accepts), in some letter case.
	listed := rapid.Custom(func(t *rapid.T) string {
		sec, key, _ := strings.Cut(rapid.SampledFrom(allowed).Draw(t, "allowed"), ".")
		h := "[" + sec + "]"
		if sub, k, ok := strings.Cut(key, "*."); ok && sub == "" {
			key = k
			sub := rapid.SampledFrom(subs[1:]).Draw(t, "sub")
			h = "[" + sec + ` "` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(sub) + `"]`
		}
		if rapid.Bool().Draw(t, "upper") {
			key = strings.ToUpper(key[:1]) + key[1:]
		}
		return h + eol.Draw(t, "eol") + "\t" + key + " = " + value.Draw(t, "v")
	})
	line := rapid.Custom(func(t *rapid.T) string {
		switch rapid.IntRange(0, 11).Draw(t, "line") {
		case 10, 11:
			return listed.Draw(t, "listed")
		case 0, 1:
			return header.Draw(t, "header")
		case 2:
			return rapid.SampledFrom([]string{"# c", "; c", "", "  \t", "\t# [core]"}).Draw(t, "comment")
		case 3:
			return "[include]" + eol.Draw(t, "eol") + "\tpath = " + rapid.SampledFrom([]string{"/ws/x", "x", "~/.y"}).Draw(t, "inc")
		case 4:
			return header.Draw(t, "header") + " " + rapid.SampledFrom(keys).Draw(t, "key") + " = " + value.Draw(t, "v")
		case 5:
			return "\t" + rapid.SampledFrom(keys).Draw(t, "key") // a boolean
		case 6:
			if rapid.IntRange(0, 9).Draw(t, "rare") == 0 {
				return rapid.SampledFrom([]string{"\x00", "k v", "[", "]", "=v", "-k = 1", "k_y = 1", "[a_b]"}).Draw(t, "junk")
			}
			fallthrough
		default:
			sp := rapid.SampledFrom([]string{"=", " = ", "\t=\t", "= "}).Draw(t, "eq")
			return "\t" + rapid.SampledFrom(keys).Draw(t, "key") + sp + value.Draw(t, "v")
		}
	})
	return rapid.Custom(func(t *rapid.T) string {
		var b strings.Builder
		if rapid.IntRange(0, 9).Draw(t, "bom") == 0 {
			b.WriteString("\xef\xbb\xbf")
		}
		n := rapid.IntRange(0, 14).Draw(t, "lines")
		for i := 0; i < n; i++ {
			b.WriteString(line.Draw(t, "line"))
			if i < n-1 || rapid.Bool().Draw(t, "last eol") {
				b.WriteString(eol.Draw(t, "eol"))
			}
		}
		return b.String()
	})
}

// TestNeutraliseGitConfigProperty: for any config text, the rewrite
// refuses exactly what the scanner refuses (a file the sweep then moves
// aside whole), and otherwise keeps exactly the allowed entries, in
// order, and nothing else (checkNeutralised).
func TestNeutraliseGitConfigProperty(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		data := genGitConfig().Draw(t, "config")
		checkNeutralised(t, []byte(data), oddWorktree)
	})
}

// gitEntries is what git itself reads from data: the entries `git
// config --file --list -z` prints (no includes followed), or ok false
// where git refuses the file.
func gitEntries(t *testing.T, data []byte) (out []gitConfigItem, ok bool) {
	names, ok := gitListZ(t, data)
	if !ok {
		return nil, false
	}
	for _, e := range names {
		name, value, hasValue := strings.Cut(e, "\n")
		it := gitConfigItem{value: value, boolean: !hasValue}
		first, last := strings.Index(name, "."), strings.LastIndex(name, ".")
		switch {
		case first < 0:
			it.key = name
		case first == last:
			it.section, it.key = name[:first], name[first+1:]
		default:
			it.section, it.subsection, it.hasSub, it.key = name[:first], name[first+1:last], true, name[last+1:]
		}
		out = append(out, it)
	}
	return out, true
}

// TestNeutraliseGitConfigAgreesWithGit: on a few hundred generated
// configs, git refuses exactly the ones the scanner refuses, reads the
// same entries with the same values, and reads nothing but allowed
// entries in the rewritten file.
func TestNeutraliseGitConfigAgreesWithGit(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on this host")
	}
	gen := genGitConfig()
	refused := 0
	for seed := 0; seed < 300; seed++ {
		data := []byte(gen.Example(seed))
		items, serr := scanGitConfig(data)
		gitIn, ok := gitEntries(t, data)
		if ok != (serr == nil) {
			t.Errorf("seed %d: git accepts %v, the scanner says %v: %q", seed, ok, serr, data)
			continue
		}
		if !ok {
			refused++
			if _, _, err := neutraliseGitConfig(data, nil); !errors.Is(err, errGitConfigSyntax) {
				t.Errorf("seed %d: refused by git, rewritten anyway (%v)", seed, err)
			}
			continue
		}
		var mine, theirs []string
		for _, it := range items {
			mine = append(mine, it.name()+"="+it.value)
		}
		for _, it := range gitIn {
			theirs = append(theirs, it.name()+"="+it.value)
		}
		if !slices.Equal(mine, theirs) {
			t.Errorf("seed %d: the scanner reads %q, git reads %q from %q", seed, mine, theirs, data)
			continue
		}
		out, _, err := neutraliseGitConfig(data, nil)
		if err != nil {
			t.Errorf("seed %d: %v", seed, err)
			continue
		}
		gitOut, ok := gitEntries(t, out)
		if !ok {
			t.Errorf("seed %d: git refuses the rewrite %q", seed, out)
			continue
		}
		for _, it := range gitOut {
			if !gitAllowedEntry(it, nil) {
				t.Errorf("seed %d: git reads %s=%q from the rewrite %q", seed, it.name(), it.value, out)
			}
		}
	}
	if refused == 0 || refused > 250 {
		t.Errorf("%d of 300 configs refused: the generator should make some of each", refused)
	}
}

// gitListZ is `git config --file --list -z` of data: "name\nvalue" per
// entry, "name" alone for a key without "=".
func gitListZ(t *testing.T, data []byte) ([]string, bool) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(f, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "config", "--file", f, "--list", "-z", "--no-includes")
	cmd.Env = []string{"HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		return nil, false
	}
	var entries []string
	for _, e := range strings.Split(string(out), "\x00") {
		if e != "" {
			entries = append(entries, e)
		}
	}
	return entries, true
}

// TestAllowlistNamesAreLowerCase: every allowlist entry is written as git
// compares names (section and key lower-cased), so none silently never
// matches.
func TestAllowlistNamesAreLowerCase(t *testing.T) {
	for name := range gitAllowed {
		if name != strings.ToLower(name) {
			t.Errorf("allowlist entry %q is not lower case", name)
		}
	}
}
