package gitguard

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
)

// gitAllowed is the allowlist of git config entries a config file a
// command created or changed may keep: every entry it does not name, or
// whose value it does not accept, is removed (neutraliseGitConfig), and
// so is anything git may add later. It holds what `git init`, `git
// clone` (bare, mirror, shallow, partial, --separate-git-dir,
// --recurse-submodules), `git submodule add` and `absorbgitdirs`, `git
// worktree add`, `git remote add`, `git sparse-checkout` and `cargo new`
// write (git 2.39, cargo 1.95; `npm init` and `go mod init` write no git
// config), plus a few settings an agent commonly sets. Each entry is
// inert: git reads it to decide what to do with data it already has,
// and no value of it names a program, a file to read, a place outside
// the repository to write, or another config to include.
//
// A name is "section.key" (no subsection) or "section.*.key" (any
// subsection, the empty one included), section and key in lower case as
// git compares them (an entry written otherwise would never match:
// TestAllowlistNamesAreLowerCase). include.* and includeif.*.*
// are never allowed: the included file could hold anything. Values are
// matched as git's own reader returns them (quotes and escapes undone);
// "boolean" means true, false, yes, no, on, off, 1, 0 (letter case as
// git ignores it), the empty value or the key alone.
var gitAllowed = map[string]func(gitConfigItem) bool{
	// Repository format (every init and clone): the version only selects
	// which extensions git honours, and every extension below changes no
	// program.
	"core.repositoryformatversion": gitOneOf("0", "1"),
	// Layout and file-system facts every init and clone writes (git init
	// probes the file system for filemode, symlinks, ignorecase and, on
	// macOS, precomposeunicode): how git reads the work tree it has.
	"core.bare":              gitBoolean,
	"core.filemode":          gitBoolean,
	"core.logallrefupdates":  gitBoolOr("always"), // whether reflogs are kept
	"core.ignorecase":        gitBoolean,
	"core.symlinks":          gitBoolean,
	"core.precomposeunicode": gitBoolean,
	// git sparse-checkout: which paths are checked out, read from
	// info/sparse-checkout (patterns, no program).
	"core.sparsecheckout":     gitBoolean,
	"core.sparsecheckoutcone": gitBoolean,
	"index.sparse":            gitBoolean,
	// Line-end conversion and path quoting git does itself.
	"core.autocrlf":  gitBoolOr("input"),
	"core.eol":       gitOneOf("lf", "crlf", "native"),
	"core.safecrlf":  gitBoolOr("warn"),
	"core.quotepath": gitBoolean,
	// Where the work tree is (git submodule add and absorbgitdirs write
	// it in the submodule's git directory): the host's git checks files
	// out there, so it is inert only where it names a real directory
	// beneath the writable root that is no git directory, lies in none
	// and holds no protected path (gitSweep.worktreeInert, judged again
	// in every acting pass); with nothing to judge it by it is removed.
	"core.worktree": nil,
	// The object hash (init --object-format) and whether config.worktree
	// is read (worktree add, sparse-checkout): that file is neutralised
	// by this same list.
	"extensions.objectformat":   gitOneOf("sha1", "sha256"),
	"extensions.worktreeconfig": gitBoolean,
	// Reference storage: git 2.39 does not know it and refuses the
	// repository; a later git reads references from another file.
	"extensions.refstorage": gitOneOf("files", "reftable"),
	// Partial clone (clone --filter): which remote lazily supplies
	// missing objects (a plain remote name: git fetch takes it as an
	// argument, and an unknown name as a URL; the remote's url is judged
	// below), and that objects are never pruned.
	"extensions.partialclone":    gitRemoteName,
	"extensions.preciousobjects": gitBoolean,
	// Identity and the first branch's name: text git records.
	"user.name":          gitText,
	"user.email":         gitText,
	"init.defaultbranch": gitText,
	// Signing off only: true would make the host sign, with its own key,
	// a commit it may not mean to.
	"commit.gpgsign": gitOneOf("false"),
	"tag.gpgsign":    gitOneOf("false"),
	// How pull, push and fetch combine and prune histories, and how
	// output looks; never an interactive rebase, which opens an editor.
	"pull.rebase":          gitBoolOr("merges"),
	"pull.ff":              gitBoolOr("only"),
	"push.default":         gitOneOf("nothing", "current", "upstream", "tracking", "simple", "matching"),
	"push.autosetupremote": gitBoolean,
	"fetch.prune":          gitBoolean,
	"merge.conflictstyle":  gitOneOf("merge", "diff3", "zdiff3"),
	"color.ui":             gitBoolOr("auto", "always", "never"),
	// A remote, as clone and remote add write it: where to fetch from
	// (judged by gitURL) and which references, into which.
	"remote.*.url":                gitURL,
	"remote.*.pushurl":            gitURL,
	"remote.*.fetch":              gitText,
	"remote.*.push":               gitText,
	"remote.*.mirror":             gitBoolean, // clone --mirror
	"remote.*.tagopt":             gitOneOf("--tags", "--no-tags"),
	"remote.*.prune":              gitBoolean,
	"remote.*.promisor":           gitBoolean, // clone --filter
	"remote.*.partialclonefilter": gitText,    // a filter spec git parses
	// A branch's upstream, as clone and branch --set-upstream-to write:
	// a plain remote name (git takes an unknown name as a URL).
	"branch.*.remote":      gitRemoteName,
	"branch.*.pushremote":  gitRemoteName,
	"branch.*.merge":       gitText,
	"branch.*.rebase":      gitBoolOr("merges"),
	"branch.*.description": gitText,
	// Submodules, as submodule add and clone --recurse-submodules write
	// them (submodule.active is a pathspec, "." there): which are active,
	// where they live, where they are fetched from (gitURL); update only
	// as a mode that runs nothing ("!cmd" runs cmd).
	"submodule.active":                   gitText,
	"submodule.recurse":                  gitBoolean,
	"submodule.*.url":                    gitURL,
	"submodule.*.path":                   gitText,
	"submodule.*.active":                 gitBoolean,
	"submodule.*.branch":                 gitText,
	"submodule.*.update":                 gitOneOf("checkout", "rebase", "merge", "none"),
	"submodule.*.ignore":                 gitOneOf("all", "dirty", "untracked", "none"),
	"submodule.*.fetchrecursesubmodules": gitBoolOr("on-demand"),
	"submodule.*.shallow":                gitBoolean,
}

// gitAllowedEntry reports whether a config entry may stay in a config a
// command wrote: its name is on gitAllowed and its value one the entry
// accepts. worktree judges a core.worktree value (nil: none is
// accepted).
func gitAllowedEntry(it gitConfigItem, worktree func(string) bool) bool {
	if it.section == "" {
		return false // a key before any header: no key git looks up
	}
	name := it.section + "." + it.key
	if it.hasSub {
		name = it.section + ".*." + it.key
	}
	ok, listed := gitAllowed[name]
	switch {
	case !listed:
		return false
	case name == "core.worktree":
		return worktree != nil && !it.boolean && worktree(it.value)
	}
	return ok(it)
}

// gitBoolean accepts the values git reads as a boolean.
func gitBoolean(it gitConfigItem) bool {
	if it.boolean {
		return true
	}
	switch strings.ToLower(it.value) {
	case "", "true", "false", "yes", "no", "on", "off", "1", "0":
		return true
	}
	return false
}

// gitBoolOr accepts a boolean or one of words.
func gitBoolOr(words ...string) func(gitConfigItem) bool {
	one := gitOneOf(words...)
	return func(it gitConfigItem) bool { return gitBoolean(it) || one(it) }
}

// gitOneOf accepts exactly one of words, given with "=".
func gitOneOf(words ...string) func(gitConfigItem) bool {
	return func(it gitConfigItem) bool {
		if it.boolean {
			return false
		}
		for _, w := range words {
			if it.value == w {
				return true
			}
		}
		return false
	}
}

// gitText accepts any value given with "=" (the key alone is no text:
// git refuses it).
func gitText(it gitConfigItem) bool { return !it.boolean }

// gitURL accepts a URL or path git fetches from with its own
// transports, in a form known to run nothing: a URL whose scheme is
// https, http, ssh, git or file; or, with no "://", an scp-like
// "host:path" or a local path. Refused: any other value holding "::"
// (git runs git-remote-<transport> for "<transport>::<address>",
// whatever the transport's first character; "ext::" runs any command
// where the host set protocol.ext.allow), any other scheme (git runs
// git-remote-<scheme> for it), and a value git would take for an option.
func gitURL(it gitConfigItem) bool {
	v := it.value
	if it.boolean || strings.HasPrefix(v, "-") {
		return false
	}
	if scheme, _, ok := strings.Cut(v, "://"); ok {
		// The address may hold "::" ("ssh://[::1]/x"): git reads a
		// helper only from the text before it.
		return slices.Contains(gitURLSchemes, scheme)
	}
	return !strings.Contains(v, "::")
}

// gitURLSchemes are the schemes gitURL keeps: git's own transports.
var gitURLSchemes = []string{"https", "http", "ssh", "git", "file"}

// gitRemoteName accepts a plain remote name, as clone, remote add and
// branch --set-upstream-to write it ("." is the repository itself):
// letters, digits, '-', '_' and '.', not starting with '-'. Anything
// else is refused: git passes the name to git fetch as an argument and
// takes a name no remote defines as a URL, which may name a remote
// helper.
func gitRemoteName(it gitConfigItem) bool {
	v := it.value
	if it.boolean || v == "" || v[0] == '-' {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !isAlpha(c) && (c < '0' || c > '9') && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// worktreeInert reports whether v, a core.worktree value in a config of
// the git directory gitDir (relative to the root), names a place the
// host's git may check files out into: resolved as git resolves it (a
// relative value from the git directory, each component on the host's
// file system), it stays beneath the writable root, every component
// that exists is a real directory (no link: one a later command swaps
// in is found by the pass that re-checks it), none is named .git and
// none is a git directory, and it holds no protected path but inside a
// .git (where git never writes a tracked file), nor lies in one. A
// missing component may be made later as a link: every acting pass
// checks the value again (gitSweep.config).
func (s *gitSweep) worktreeInert(gitDir, v string) bool {
	var stack []string
	var walk []string
	switch {
	case v == "":
		return false
	case strings.HasPrefix(v, "/"):
		// Absolute: the root's own path as the guard knows it, then a
		// walk beneath it.
		vc, rc := pathComps(v), pathComps(s.abs)
		if len(vc) < len(rc) {
			return false
		}
		for i, c := range rc {
			if vc[i] != c {
				return false
			}
		}
		walk = vc[len(rc):]
	default:
		if gitDir != "." {
			stack = strings.Split(gitDir, "/")
		}
		walk = pathComps(v)
	}
	absent := false
	for _, c := range walk {
		if c == ".." {
			if len(stack) == 0 || absent {
				return false // above the root, or ".." of nothing
			}
			stack = stack[:len(stack)-1]
			continue
		}
		stack = append(stack, c)
		if absent {
			continue
		}
		fi, err := s.lstat(strings.Join(stack, "/"))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			absent = true
		case err != nil || !fi.IsDir():
			return false // a link, a file, or unknown
		}
	}
	for i := 0; i <= len(stack); i++ {
		if i > 0 && strings.EqualFold(stack[i-1], ".git") {
			return false
		}
		if p := joinComps(stack[:i]); s.isGitDir(p) {
			return false
		}
	}
	w := joinComps(stack)
	for p := range s.skip {
		if p == w || strings.HasPrefix(w, p+"/") {
			return false
		}
		if rest, under := strings.CutPrefix(p, w+"/"); w == "." || under {
			if w == "." {
				rest = p
			}
			if !slices.ContainsFunc(strings.Split(rest, "/"), func(c string) bool { return strings.EqualFold(c, ".git") }) {
				return false
			}
		}
	}
	return true
}

// pathComps splits p into its components, dropping empty ones and ".".
func pathComps(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

func joinComps(c []string) string {
	if len(c) == 0 {
		return "."
	}
	return strings.Join(c, "/")
}
