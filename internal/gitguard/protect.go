package gitguard

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/agentloom/loom/internal/pinnedfs"
)

const (
	// MaxSubmoduleDepth bounds how deep Protected descends into
	// .git/modules (nested submodules and module names with slashes).
	MaxSubmoduleDepth = 8
	// MaxProtectedGitDirs bounds how many git directories Protected
	// inspects for one workspace (the worktree's, the common one, and
	// every submodule's).
	MaxProtectedGitDirs = 256
	// MaxConfigBytes bounds one git config file the broker reads
	// (Protected looking for core.hooksPath and includes, the git
	// guard neutralising one); a larger file is not read.
	MaxConfigBytes = 1 << 20
	// MaxIncludeDepth bounds how deeply included git config files are
	// followed.
	MaxIncludeDepth = 4
)

// Protected is broker.DefaultProtected (whose comment is the contract):
// the paths of workspace a jailed command must not change, so nothing it
// runs can plant code the host's own git later runs. Every file it reads
// is opened beneath its pinned parent, non-blocking, regular files only,
// within a size bound; its walk follows no link and is bounded by
// MaxProtectedWalkDirs and MaxProtectedDirEntries.
func Protected(workspace string) []string {
	return scanProtected(workspace).out
}

// scanProtected is Protected, returning the scan (tests read its
// counters).
func scanProtected(workspace string) *gitScan {
	ws := filepath.Clean(workspace)
	g := &gitScan{ws: ws, seen: map[string]bool{}}
	dotgit := filepath.Join(ws, ".git")
	g.out = append(g.out, filepath.Join(dotgit, "hooks"), filepath.Join(dotgit, "config"))
	if !filepath.IsAbs(ws) {
		return g // fail closed: Validate refuses these
	}
	defer func() {
		slices.Sort(g.out)
		g.out = slices.Clip(slices.Compact(g.out))
	}()
	g.add(filepath.Join(dotgit, "hooks")) // their resolved forms, if symlinks
	g.add(filepath.Join(dotgit, "config"))

	for _, cfg := range hostGitConfigs() {
		g.config(cfg, ws, 0)
	}

	// The workspace is the host's; beneath it nothing is followed.
	wsf, err := os.OpenFile(dirName(ws), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return g
	}
	defer wsf.Close()
	g.wsf = wsf
	fi, err := os.Lstat(dotgit)
	switch {
	case err != nil:
	case fi.Mode()&fs.ModeSymlink != 0:
		// git takes a .git link to a directory as the git directory:
		// what it names is protected, never walked.
		if real, err := filepath.EvalSymlinks(dotgit); err == nil {
			if rfi, err := os.Stat(real); err == nil && rfi.IsDir() {
				g.gitDir(real, 0, nil)
			}
		}
	case fi.IsDir():
		d := g.child(wsf, ws, ".git")
		g.gitDir(dotgit, 0, d)
		if d != nil {
			d.Close()
		}
	case fi.Mode().IsRegular():
		// The pointer file itself: rewritten, it would aim the host's git
		// at a directory (and hooks) of the command's choosing.
		g.add(dotgit)
		if gd, ok := readGitdirFile(dotgit); ok {
			g.gitDirAt(gd)
			if cd, ok := readCommondir(gd); ok {
				g.gitDirAt(cd)
			}
		}
	}
	return g
}

// Bounds on Protected's walk.
const (
	// MaxProtectedWalkDirs bounds how many directories Protected
	// opens while walking modules directories for submodules' git
	// directories; past it the rest is not walked.
	MaxProtectedWalkDirs = 4096
	// MaxProtectedDirEntries bounds how many entries of one modules
	// directory Protected reads.
	MaxProtectedDirEntries = 4096
)

type gitScan struct {
	ws   string
	wsf  *os.File // the workspace, opened; nil when it cannot be
	out  []string
	seen map[string]bool
	dirs int
	// walked counts the directories opened walking modules.
	walked int
}

func (g *gitScan) add(p string) {
	if !filepath.IsAbs(p) {
		return
	}
	p = filepath.Clean(p)
	g.out = append(g.out, p)
	if real, err := filepath.EvalSymlinks(p); err == nil && real != p {
		g.out = append(g.out, real)
	}
}

// gitDirAt checks a git directory a pointer file names: walked when it
// lies beneath the workspace and is reached there without a link, else
// only its own entries are protected.
func (g *gitScan) gitDirAt(dir string) {
	d := g.openBeneath(dir)
	g.gitDir(dir, 0, d)
	if d != nil {
		d.Close()
	}
}

// openBeneath opens dir, when it lies beneath the workspace, one
// component at a time from the workspace without following any link;
// nil when it is elsewhere or a component is a link or no directory.
func (g *gitScan) openBeneath(dir string) *os.File {
	rel, err := filepath.Rel(g.ws, filepath.Clean(dir))
	if g.wsf == nil || err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil
	}
	cur, at := g.wsf, g.ws
	for _, name := range strings.Split(rel, string(filepath.Separator)) {
		next := g.child(cur, at, name)
		if cur != g.wsf {
			cur.Close()
		}
		if next == nil {
			return nil
		}
		cur, at = next, filepath.Join(at, name)
	}
	return cur
}

// child opens the directory name in parent (whose path is at) without
// following a link; nil when it is not a directory. Where the platform
// cannot open relative to a descriptor, it checks with lstat first.
func (g *gitScan) child(parent *os.File, at, name string) *os.File {
	f, err := openChildDir(parent, name)
	if errors.Is(err, errNoChildOpen) {
		p := filepath.Join(at, name)
		if fi, lerr := os.Lstat(p); lerr != nil || !fi.IsDir() {
			return nil
		}
		f, err = os.OpenFile(dirName(p), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	}
	if err != nil {
		return nil
	}
	return f
}

// gitDir protects one git directory's hooks and configs and, when it is
// open as f (beneath the workspace, reached without a link), descends
// into its submodules.
func (g *gitScan) gitDir(dir string, depth int, f *os.File) {
	dir = filepath.Clean(dir)
	if g.seen[dir] || g.dirs >= MaxProtectedGitDirs {
		return
	}
	g.seen[dir] = true
	g.dirs++
	g.add(filepath.Join(dir, "hooks"))
	// A planted commondir re-aims git at another directory's hooks and
	// config, even in an ordinary repository.
	g.add(filepath.Join(dir, "commondir"))
	// Hooks run in the git directory's worktree: core.worktree (a
	// submodule's points back into the superproject), else the workspace.
	worktree := g.ws
	for _, kv := range readGitConfig(filepath.Join(dir, "config")) {
		if kv.section == "core" && kv.key == "worktree" {
			if wt := expandGitPath(kv.value, dir); wt != "" {
				worktree = wt
			}
		}
	}
	for _, name := range []string{"config", "config.worktree"} {
		cfg := filepath.Join(dir, name)
		g.add(cfg)
		g.config(cfg, worktree, 0)
	}
	if f == nil {
		return
	}
	if m := g.child(f, dir, "modules"); m != nil {
		g.modules(m, filepath.Join(dir, "modules"), depth)
		m.Close()
	}
}

// modules walks <gitdir>/modules, open as f: a directory holding a
// HEAD is a submodule's git directory; any other directory is
// part of a module name containing slashes. Links are never followed:
// an entry that is one is not a directory here.
func (g *gitScan) modules(f *os.File, dir string, depth int) {
	if depth >= MaxSubmoduleDepth {
		return
	}
	entries, _ := f.ReadDir(MaxProtectedDirEntries)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if g.walked >= MaxProtectedWalkDirs {
			return
		}
		g.walked++
		sub := filepath.Join(dir, e.Name())
		c := g.child(f, dir, e.Name())
		if c == nil {
			continue
		}
		if hasHead(c) {
			g.gitDir(sub, depth+1, c)
		} else {
			g.modules(c, sub, depth+1)
		}
		c.Close()
	}
}

// hasHead reports whether the directory open as d holds a HEAD git
// takes as one (a regular file or a link, see isHeadMode; looked at, not
// followed), leaving d's listing at its start.
func hasHead(d *os.File) bool {
	defer d.Seek(0, io.SeekStart)
	for {
		entries, err := d.ReadDir(256)
		for _, e := range entries {
			if e.Name() == "HEAD" {
				return isHeadMode(e.Type())
			}
		}
		if err != nil || len(entries) == 0 {
			return false
		}
	}
}

// config protects what a git config file points at: core.hooksPath
// (relative to worktree, where hooks run) and included files
// (relative to the including file), following includes to
// MaxIncludeDepth.
func (g *gitScan) config(file, worktree string, depth int) {
	if depth > MaxIncludeDepth {
		return
	}
	for _, kv := range readGitConfig(file) {
		var p string
		switch {
		case kv.section == "core" && kv.key == "hookspath":
			p = expandGitPath(kv.value, worktree)
			if p != "" {
				g.add(p)
			}
		case (kv.section == "include" || kv.section == "includeif") && kv.key == "path":
			p = expandGitPath(kv.value, filepath.Dir(file))
			if p != "" {
				g.add(p)
				g.config(p, worktree, depth+1)
			}
		}
	}
}

func expandGitPath(v, relTo string) string {
	switch {
	case v == "":
		return ""
	case strings.HasPrefix(v, "~/"):
		home, err := os.UserHomeDir()
		if err != nil || !filepath.IsAbs(home) {
			return ""
		}
		return filepath.Join(home, v[2:])
	case filepath.IsAbs(v):
		return filepath.Clean(v)
	default:
		return filepath.Join(relTo, v)
	}
}

type gitConfigEntry struct{ section, key, value string }

// readGitConfig reads the section, key and value of each "key = value"
// line of a git config file (first MaxConfigBytes). It understands
// sections ("[core]", `[includeIf "gitdir:x"]`, "[a.b]"), comments,
// quoted values and case-insensitive names: enough to find hooksPath and
// includes, not a full git config parser.
func readGitConfig(file string) []gitConfigEntry {
	b, err := readPinned(file, MaxConfigBytes)
	if err != nil {
		return nil
	}
	return parseGitConfig(bytes.NewReader(b))
}

// hostGitConfigs lists the host's global and system git config files
// the host's own git reads, in git's order of precedence.
func hostGitConfigs() []string {
	var out []string
	if os.Getenv("GIT_CONFIG_NOSYSTEM") == "" {
		if p := os.Getenv("GIT_CONFIG_SYSTEM"); p != "" {
			out = append(out, p)
		} else {
			out = append(out, "/etc/gitconfig")
		}
	}
	if p := os.Getenv("GIT_CONFIG_GLOBAL"); p != "" {
		return append(out, p)
	}
	xdg := os.Getenv("XDG_CONFIG_HOME")
	home, _ := os.UserHomeDir()
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	if xdg != "" {
		out = append(out, filepath.Join(xdg, "git", "config"))
	}
	if home != "" {
		out = append(out, filepath.Join(home, ".gitconfig"))
	}
	return out
}

// readPinned reads the regular file at path, opened beneath its parent
// directory (pinned by descriptor) without blocking: a FIFO, device,
// socket or directory there is an error, never a wait, and so is a file
// over limit bytes.
func readPinned(path string, limit int64) ([]byte, error) {
	dir, base := filepath.Split(filepath.Clean(path))
	r, err := openDirRoot(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return pinnedfs.ReadRegular(r, base, limit)
}

// openDirRoot pins the directory dir. os.OpenRoot alone opens whatever
// is there, and opening a FIFO blocks; a trailing "/." makes the kernel
// refuse anything but a directory during lookup, before any open.
func openDirRoot(dir string) (*os.Root, error) {
	return os.OpenRoot(strings.TrimSuffix(dir, string(filepath.Separator)) + string(filepath.Separator) + ".")
}

// readDirPinned lists a directory opened as a directory (O_DIRECTORY
// refuses a FIFO without opening it, so nothing blocks).
func readDirPinned(dir string) ([]os.DirEntry, error) {
	r, err := openDirRoot(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	f, err := r.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

func parseGitConfig(r io.Reader) []gitConfigEntry {
	var out []gitConfigEntry
	section := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxConfigBytes)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			head := strings.TrimSpace(line[1:end])
			if i := strings.IndexAny(head, " \t\"."); i >= 0 {
				head = head[:i]
			}
			section = strings.ToLower(head)
			line = strings.TrimSpace(line[end+1:])
			if line == "" {
				continue
			}
		}
		key, value, _ := strings.Cut(line, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		out = append(out, gitConfigEntry{section: section, key: key, value: gitConfigValue(value)})
	}
	return out
}

// gitConfigValue unquotes a value and strips a trailing comment.
func gitConfigValue(v string) string {
	v = strings.TrimSpace(v)
	var b strings.Builder
	quoted := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			quoted = !quoted
		case c == '\\' && i+1 < len(v):
			i++
			switch v[i] {
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			default:
				b.WriteByte(v[i])
			}
		case !quoted && (c == '#' || c == ';'):
			return strings.TrimSpace(b.String())
		default:
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}

// readGitdirFile reads a ".git" file of the form "gitdir: <path>"; a
// relative path is relative to the file's directory.
func readGitdirFile(file string) (string, bool) {
	b, err := readSmall(file)
	if err != nil {
		return "", false
	}
	p, ok := parseGitfile(b) // as git reads it, so the bind holds what git uses
	if !ok {
		return "", false
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(file), p)
	}
	return filepath.Clean(p), true
}

// readCommondir reads <gitdir>/commondir (relative to gitdir when not
// absolute), as git reads it.
func readCommondir(gitdir string) (string, bool) {
	b, err := readSmall(filepath.Join(gitdir, "commondir"))
	if err != nil {
		return "", false
	}
	p, ok := parseCommondir(b)
	if !ok {
		return "", false
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(gitdir, p)
	}
	return filepath.Clean(p), true
}

// maxPointerFileBytes bounds a .git or commondir pointer file.
const maxPointerFileBytes = 4096

func readSmall(file string) ([]byte, error) {
	return readPinned(file, maxPointerFileBytes)
}
