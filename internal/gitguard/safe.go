package gitguard

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentloom/loom/internal/pinnedfs"
)

// safeGitConfig is what SafeEnv sets through GIT_CONFIG_COUNT: the
// command-line scope git reads last, so each entry overrides whatever a
// repository's config (or a file it includes) says. Single-valued keys
// get an inert value; list-valued ones (credential.helper) an empty one,
// which clears the list.
var safeGitConfig = [][2]string{
	{"core.fsmonitor", "false"},
	{"core.hooksPath", "/dev/null"},
	{"core.pager", "cat"},
	{"core.editor", "true"},
	{"sequence.editor", "true"},
	{"core.sshCommand", "ssh"},
	{"core.askPass", ""},
	{"core.alternateRefsCommand", ""},
	{"credential.helper", ""},
	{"gpg.program", "gpg"},
	{"gpg.openpgp.program", "gpg"},
	{"gpg.x509.program", "gpgsm"},
	{"gpg.ssh.program", "ssh-keygen"},
	{"gpg.ssh.defaultKeyCommand", ""},
	{"log.showSignature", "false"},
	{"protocol.ext.allow", "never"},
	// A local remote's uploadpack and receivepack run on this host, and
	// git takes the first value it reads (the repository's), so no later
	// value overrides them: local-path remotes are refused instead.
	{"protocol.file.allow", "never"},
	{"interactive.diffFilter", ""},
}

// safeGitVars are plain environment variables SafeEnv sets: each
// takes precedence over the config key of the same job, or turns a
// prompt off.
var safeGitVars = []string{
	"GIT_PAGER=cat",
	"GIT_EDITOR=true",
	"GIT_SEQUENCE_EDITOR=true",
	"GIT_ASKPASS=",
	"SSH_ASKPASS=",
	"GIT_TERMINAL_PROMPT=0",
	"GIT_PROXY_COMMAND=",
}

// SafeEnv is broker.SafeGitEnv (whose comment is the contract):
// environment entries under which the host's own git runs no program a
// repository's configuration names, safeGitConfig set through
// GIT_CONFIG_COUNT and safeGitVars.
func SafeEnv() []string {
	return safeGitEnv(safeGitConfig)
}

func safeGitEnv(cfg [][2]string) []string {
	out := append([]string(nil), safeGitVars...)
	out = append(out, fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(cfg)))
	for i, kv := range cfg {
		out = append(out, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	return out
}

// MaxSafeNames bounds how many repository-chosen names SafeEnvFor
// overrides; a workspace naming more is refused (an error), not half
// covered.
const MaxSafeNames = 1024

// SafeEnvFor is broker.SafeGitEnvFor (whose comment is the contract):
// SafeEnv plus an override disarming every repository-chosen name a git
// config beneath workspace defines an exec-capable key for (safeOverride),
// the configs found by a sweep that records nothing, read beneath the
// pinned root.
func SafeEnvFor(workspace string) ([]string, error) {
	abs, err := filepath.Abs(workspace)
	if err != nil {
		return nil, err
	}
	root, err := openDirRoot(abs)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	s := newGitSweep(root, abs)
	var configs []string
	s.onConfig = func(rel string) { configs = append(configs, rel) }
	s.begin(false)
	s.full()
	if len(s.failed) > 0 {
		return nil, fmt.Errorf("broker: sweep of %s: %s", abs, strings.Join(s.failed, "; "))
	}
	names := map[string]bool{}
	seen := map[string]bool{}
	for len(configs) > 0 {
		rel := configs[0]
		configs = configs[1:]
		if seen[rel] || len(seen) > MaxProtectedGitDirs*4 {
			continue
		}
		seen[rel] = true
		data, err := readRootFile(root, rel)
		if err != nil {
			continue
		}
		items, err := scanGitConfig(data)
		if err != nil {
			continue // git refuses the file too: it runs nothing from it
		}
		for _, it := range items {
			if (it.section == "include" || it.section == "includeif") && it.key == "path" {
				if inc, ok := includeTarget(abs, rel, it.value); ok {
					configs = append(configs, inc)
				}
				continue
			}
			for _, kv := range safeOverride(it) {
				names[kv[0]+"\x00"+kv[1]] = true
			}
		}
	}
	if len(names) > MaxSafeNames {
		return nil, fmt.Errorf("broker: %s names %d git drivers, remotes and aliases; the bound is %d", abs, len(names), MaxSafeNames)
	}
	var extra [][2]string
	for k := range names {
		key, value, _ := strings.Cut(k, "\x00")
		extra = append(extra, [2]string{key, value})
	}
	sort.Slice(extra, func(i, j int) bool { return extra[i][0] < extra[j][0] })
	return safeGitEnv(append(append([][2]string(nil), safeGitConfig...), extra...)), nil
}

// safeOverride returns the overrides that disarm an entry that runs a
// program under a name the repository chose, or none.
func safeOverride(it gitConfigItem) [][2]string {
	if it.section == "alias" {
		return [][2]string{{"alias." + it.key, ""}}
	}
	if !it.hasSub {
		return nil
	}
	pre := it.section + "." + it.subsection + "."
	switch it.section {
	case "filter":
		return [][2]string{{pre + "clean", ""}, {pre + "smudge", ""}, {pre + "process", ""}, {pre + "required", "false"}}
	case "diff":
		if it.key == "textconv" || it.key == "command" {
			return [][2]string{{pre + "textconv", ""}, {pre + "command", ""}}
		}
	case "merge":
		if it.key == "driver" {
			return [][2]string{{pre + "driver", "false"}}
		}
	case "submodule":
		if it.key == "update" && !gitAllowedEntry(it, nil) { // "!command"
			return [][2]string{{pre + "update", "checkout"}}
		}
	case "trailer":
		// git interpret-trailers (and commit --trailer) runs either;
		// an empty one runs nothing.
		if it.key == "cmd" || it.key == "command" {
			return [][2]string{{pre + "cmd", ""}, {pre + "command", ""}}
		}
	case "tar":
		// git archive pipes a tar through the format's command: gzip's
		// own for the formats git defines, cat (a plain tar) for others.
		if it.key == "command" {
			filter := "cat"
			if it.subsection == "tgz" || it.subsection == "tar.gz" {
				filter = "gzip -cn"
			}
			return [][2]string{{pre + "command", filter}}
		}
	}
	return nil
}

// readRootFile reads a config beneath root, non-blocking, regular only.
func readRootFile(root interface {
	OpenRoot(string) (*os.Root, error)
}, rel string) ([]byte, error) {
	dir, base := path.Split(rel)
	d, err := root.OpenRoot(dirName(path.Clean(dir)))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return pinnedfs.ReadRegular(d, base, MaxConfigBytes)
}

// includeTarget resolves an include.path value found in the config rel
// to a path beneath the workspace, when it lies there.
func includeTarget(abs, rel, v string) (string, bool) {
	var p string
	switch {
	case v == "" || strings.HasPrefix(v, "~"):
		return "", false // the host's home: not the command's
	case filepath.IsAbs(v):
		r, ok := relUnder(abs, v)
		if !ok {
			return "", false
		}
		p = r
	default:
		p = path.Join(path.Dir(rel), filepath.ToSlash(v))
	}
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", false
	}
	return p, true
}
