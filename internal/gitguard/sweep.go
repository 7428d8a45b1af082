package gitguard

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/agentloom/loom/internal/pinnedfs"
	"github.com/agentloom/loom/sandbox"
)

// Bounds on one sweep of a writable root for git control files.
const (
	// MaxSweepDirs bounds how many directories one full sweep of a
	// writable root visits; a root with more cannot be vouched for, so its
	// workspace is fenced rather than half-checked.
	MaxSweepDirs = 1 << 18
	// MaxModuleDepth bounds how deep a sweep descends into a git
	// directory's modules/ and worktrees/ (module names with slashes,
	// nested submodules). A tree deeper than that cannot be vouched for:
	// the sweep fails there, so the workspace is fenced rather than a git
	// directory below the bound left unchecked.
	MaxModuleDepth = 64
)

// gitFingerprint identifies one version of a file or directory entry: a
// rewrite, a rename over it, a chmod or a new hard link changes it (its
// change time moves, or its inode does).
type gitFingerprint struct {
	dev, ino    uint64
	ctime, size int64
	mode        fs.FileMode
}

// gitSweep checks git control files beneath one writable root. Every
// access is relative to the pinned root (os.Root: no link or ".." leads
// out of it), non-blocking and, for reads, regular files only.
type gitSweep struct {
	root *os.Root
	abs  string
	// known holds the fingerprint of every control file seen, by path
	// relative to the root; a file whose fingerprint is unchanged was not
	// written since and is left alone.
	known map[string]gitFingerprint
	// gitdirs are the git directories found so far (relative).
	gitdirs map[string]bool
	// skip holds paths the sweep never acts on: protected paths (held
	// read-only in the jail, so any change is the host's) and absent
	// protected ones (moved aside whole by quarantineCreated).
	skip map[string]bool
	// onDir, when set, is told of every directory the sweep opens (the
	// watcher adds its watch there).
	onDir func(rel string, f *os.File)
	// onConfig, when set, is told of every git config file the sweep
	// finds, changed or not (SafeEnvFor collects them).
	onConfig func(rel string)
	// tainted holds control-file paths a tool wrote on a model's behalf
	// (see Fences.ToolWrite), with the version it left: while that version
	// is there, every pass that meets the file acts on it, so no pass
	// can take it for the host's baseline.
	tainted map[string]gitFingerprint
	// tool is the tool write the current pass checks, nil in other
	// passes; forced are the git directories that write made or changed,
	// every control file of which the pass acts on whatever its
	// fingerprint says.
	tool   *gitToolWrite
	forced []string

	// cur is the git directory being checked, pinned, so the lookups
	// beneath it resolve from it rather than from the root.
	cur *pinnedDir
	// pointers holds every pointer found (relative) with where it led
	// when last followed (see pointer.go); each pass that re-checks
	// the known git directories follows them all again.
	pointers map[string]gitAim
	// through holds, per pointer, the directories beneath the root its
	// resolution last passed (all watched): a change in one of them is
	// what can re-aim it.
	through map[string][]string
	// canon is the root's own path resolved, as components from "/"
	// (nil when it cannot be resolved: every pointer is then uncertain),
	// once per pass that meets a pointer (canonDone).
	canon     []string
	canonDone bool
	// worktrees holds, per config (relative), the core.worktree values
	// it held when last read: each acting pass judges them again.
	worktrees map[string][]string
	// owned holds the pointers a command (or a tool, for the model)
	// made or re-aimed, with the version it left: while that version is
	// there, every acting pass judges again the git directory it names
	// (see armedTarget), which the host's own later checkout may have
	// armed. A version the host writes is no longer the command's.
	owned map[string]gitFingerprint

	// shadows holds the directories whose .git keeps git run there from
	// taking the directory itself for its git directory (see shadow).
	shadows map[string]bool

	// test holds switches only tests set (see Fences.Test).
	test struct{ trustTargets bool }

	// per pass
	act     bool // neutralise; false only records fingerprints
	visited map[string]bool
	ptrSeen map[string]bool
	dirs    int
	done    []sandbox.Neutralisation
	failed  []string
}

type pinnedDir struct {
	rel  string
	root *os.Root
}

// base returns the pinned directory to resolve rel from (the current git
// directory when rel lies beneath it, else the root) and rel relative to
// it.
func (s *gitSweep) base(rel string) (*os.Root, string) {
	if c := s.cur; c != nil {
		if rel == c.rel {
			return c.root, "."
		}
		if strings.HasPrefix(rel, c.rel+"/") {
			return c.root, rel[len(c.rel)+1:]
		}
	}
	return s.root, rel
}

func (s *gitSweep) lstat(rel string) (fs.FileInfo, error) {
	r, name := s.base(rel)
	return r.Lstat(name)
}

func newGitSweep(root *os.Root, abs string) *gitSweep {
	return &gitSweep{root: root, abs: abs, known: map[string]gitFingerprint{},
		gitdirs: map[string]bool{}, skip: map[string]bool{}, tainted: map[string]gitFingerprint{},
		pointers: map[string]gitAim{}, through: map[string][]string{},
		worktrees: map[string][]string{}, owned: map[string]gitFingerprint{}, shadows: map[string]bool{}}
}

// begin starts a pass: act says whether changes are neutralised or only
// recorded.
func (s *gitSweep) begin(act bool) {
	s.act, s.visited, s.ptrSeen, s.dirs, s.done, s.failed = act, map[string]bool{}, map[string]bool{}, 0, nil, nil
	s.canon, s.canonDone = nil, false
}

// full walks the whole root.
func (s *gitSweep) full() {
	s.walk(".", 0)
}

// dirty checks what a change in directory rel can have made: rel or its
// parent become a git directory, or a .git entry in rel (or rel, a .git
// directory, no longer one git uses: see shadow).
func (s *gitSweep) dirty(rel string) {
	for _, d := range []string{rel, path.Dir(rel)} {
		if s.isGitDir(d) {
			s.gitDir(d, 0)
		}
	}
	s.dotGit(rel)
	if path.Base(rel) == ".git" {
		s.shadow(path.Dir(rel), true)
	}
}

// knownDirs re-checks every git directory found so far (cheap: a few
// lstats each), which catches writes through a hard link elsewhere.
func (s *gitSweep) knownDirs() {
	for d := range s.gitdirs {
		if fi, err := s.lstat(d); err != nil || !fi.IsDir() {
			// Gone, or no directory now (a .git directory replaced by a
			// pointer file, which its parent's pass checks as one).
			delete(s.gitdirs, d)
			continue
		}
		s.gitDir(d, 0)
	}
}

// walk visits rel and every directory beneath it but what lies in a
// directory named .git (whose control files gitDir checks, and whose
// other contents no path git tracks can reach). A git directory by any
// other name is walked on: git may not take it for one (the sweep's test
// is wider than git's), and a repository it tracks can lie anywhere in
// it.
func (s *gitSweep) walk(rel string, depth int) {
	s.walkIn(nil, rel, depth)
}

// errNoChildOpen: the platform cannot open a directory relative to its
// parent's descriptor; the sweep opens it from the root instead.
var errNoChildOpen = errors.New("no openat on this platform")

// maxGitSweepFdDepth is how deep the sweep keeps each directory on the
// path open to open the next one relative to it (one openat per
// directory); deeper ones are opened from the root, component by
// component, so the descriptors held stay bounded.
const maxGitSweepFdDepth = 64

// walkIn is walk with rel's parent directory open as parent (nil: open
// rel from the root).
func (s *gitSweep) walkIn(parent *os.File, rel string, depth int) {
	if s.dirs >= MaxSweepDirs {
		if s.dirs == MaxSweepDirs {
			s.fail(rel, fmt.Errorf("more than %d directories beneath %s: too many to sweep", MaxSweepDirs, s.abs))
			s.dirs++
		}
		return
	}
	s.dirs++
	if inGitStore(rel) {
		return
	}
	var f *os.File
	var err error
	if parent != nil {
		f, err = openChildDir(parent, path.Base(rel))
	}
	if parent == nil || errors.Is(err, errNoChildOpen) || errors.Is(err, fs.ErrPermission) {
		var d *os.Root
		var restore func()
		d, restore, err = openDirAccessible(s.root, rel)
		if err == nil {
			defer restore()
			f, err = d.OpenFile(".", os.O_RDONLY|syscall.O_NONBLOCK, 0)
			d.Close()
		}
	}
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			s.fail(rel, err) // a directory the broker cannot read may hide a repository
		}
		return
	}
	defer f.Close()
	if s.onDir != nil {
		s.onDir(rel, f)
	}
	entries, err := f.ReadDir(-1)
	if err != nil {
		return
	}
	if s.isGitDirEntries(rel, entries) {
		s.gitDir(rel, 0)
		if path.Base(rel) == ".git" {
			return
		}
	}
	s.shadow(rel, slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return e.Name() == ".git" }))
	next := f
	if depth >= maxGitSweepFdDepth {
		next = nil
	}
	for _, e := range entries {
		name := e.Name()
		child := path.Join(rel, name)
		switch {
		case name == ".git" && !e.IsDir():
			s.pointer(child)
		case e.IsDir():
			s.walkIn(next, child, depth+1)
		}
	}
}

// inGitStore reports whether rel lies in a .git directory's object,
// ref or log store, which holds nothing git runs and which the sweep
// neither walks nor watches.
func inGitStore(rel string) bool {
	parts := strings.Split(rel, "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == ".git" {
			switch parts[i+1] {
			case "objects", "refs", "logs", "lfs":
				return true
			}
		}
	}
	return false
}

// readDir lists a directory opened beneath the root as a directory (a
// FIFO there is refused without blocking) and tells onDir about it.
func (s *gitSweep) readDir(rel string) ([]fs.DirEntry, bool) {
	r, name := s.base(rel)
	f, err := r.OpenFile(dirName(name), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if s.onDir != nil {
		s.onDir(rel, f)
	}
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, false
	}
	return entries, true
}

// dirName makes an open of rel refuse anything but a directory during
// lookup: "x/." resolves only when x is one.
func dirName(rel string) string {
	if rel == "." {
		return "."
	}
	return rel + "/."
}

// isHeadMode reports whether a HEAD of this type can make its directory
// a git directory to git: anything but a directory (git takes a link to
// refs/... as a symbolic ref, and opens and reads anything else).
func isHeadMode(m fs.FileMode) bool {
	return !m.IsDir()
}

// isObjectsMode reports whether an objects entry of this type can make
// its directory a git directory: any type. git asks only
// access(objects, X_OK), which a directory, a link and an executable
// file all pass; the guard takes every present entry, never narrower.
func isObjectsMode(fs.FileMode) bool {
	return true
}

// isGitDir reports whether rel is a directory git could take as a git
// directory: one named .git, or one holding a HEAD (see isHeadMode) and
// objects (see isObjectsMode) or a commondir (a bare repository, a
// submodule's, a linked worktree's). It is wider than git's own test,
// never narrower.
func (s *gitSweep) isGitDir(rel string) bool {
	if path.Base(rel) == ".git" {
		fi, err := s.lstat(rel)
		return err == nil && fi.IsDir()
	}
	fi, err := s.lstat(path.Join(rel, "HEAD"))
	if err != nil || !isHeadMode(fi.Mode()) {
		return false
	}
	if fi, err := s.lstat(path.Join(rel, "objects")); err == nil && isObjectsMode(fi.Mode()) {
		return true
	}
	_, err = s.lstat(path.Join(rel, "commondir"))
	return err == nil
}

func (s *gitSweep) isGitDirEntries(rel string, entries []fs.DirEntry) bool {
	if path.Base(rel) == ".git" {
		return true
	}
	var head, objects, commondir bool
	for _, e := range entries {
		switch e.Name() {
		case "HEAD":
			head = isHeadMode(e.Type())
		case "objects":
			objects = isObjectsMode(e.Type())
		case "commondir":
			commondir = true
		}
	}
	return head && (objects || commondir)
}

// dotGit checks rel/.git: a git directory, or a "gitdir:" pointer file;
// and whether it still keeps git from taking rel itself for one (see
// shadow).
func (s *gitSweep) dotGit(rel string) {
	p := path.Join(rel, ".git")
	fi, err := s.lstat(p)
	switch {
	case err != nil:
	case fi.IsDir():
		s.gitDir(p, 0)
	default:
		s.pointer(p)
	}
	s.shadow(rel, err == nil)
}

// shadow records whether rel/.git keeps git run in rel from taking rel
// itself for its git directory (see shadowedBy; present says whether
// rel/.git exists at all), and, when a command just took that away
// from a directory git may take for one (see isGitDir) that is no
// repository of the host's own (see hostGitDir), acts on its control
// files as the command's: whoever wrote them, the command made git use
// them. So a git directory a host's checkout wrote at the top of a
// repository's work tree does not arm the host's git once a command
// removes or spoils the .git beside it.
func (s *gitSweep) shadow(rel string, present bool) {
	now := present && s.shadowedBy(rel)
	was := s.shadows[rel]
	if now {
		s.shadows[rel] = true
	} else {
		delete(s.shadows, rel)
	}
	if !was || now || !s.act || s.test.trustTargets || s.hostGitDir(rel) || !s.isGitDir(rel) {
		return
	}
	n := len(s.forced)
	s.forced = append(s.forced, rel)
	delete(s.visited, rel)
	s.gitDir(rel, 0)
	s.forced = slices.Delete(s.forced, n, n+1)
}

// shadowedBy reports whether git run in rel stops at rel/.git (git's
// setup.c): a regular file there (git follows it or dies on it), or a
// real directory git takes for a git directory (a HEAD it accepts,
// objects and refs). Anything else (a link, another type, a directory
// git refuses) is taken as no shadow: git may then go on to rel itself.
func (s *gitSweep) shadowedBy(rel string) bool {
	g := path.Join(rel, ".git")
	fi, err := s.lstat(g)
	switch {
	case err != nil:
		return false
	case fi.Mode().IsRegular():
		return true
	case !fi.IsDir():
		return false
	}
	r, name := s.base(g)
	for _, e := range []string{"objects", "refs"} {
		if _, err := r.Stat(path.Join(name, e)); err != nil {
			return false
		}
	}
	return validHead(r, path.Join(name, "HEAD"))
}

// validHead reports whether git's validate_headref accepts the HEAD at
// name beneath r: a link whose text starts with "refs/", or a regular
// file holding "ref:", blanks, then "refs/...", or an object id in hex.
func validHead(r *os.Root, name string) bool {
	fi, err := r.Lstat(name)
	switch {
	case err != nil:
		return false
	case fi.Mode()&fs.ModeSymlink != 0:
		to, err := r.Readlink(name)
		return err == nil && strings.HasPrefix(to, "refs/")
	case !fi.Mode().IsRegular():
		return false
	}
	dir, base := path.Split(name)
	d, err := r.OpenRoot(dirName(path.Clean(dir)))
	if err != nil {
		return false
	}
	defer d.Close()
	data, err := pinnedfs.ReadRegular(d, base, maxPointerFileBytes)
	if err != nil {
		return false
	}
	if len(data) > 255 {
		data = data[:255] // what git reads
	}
	if rest, ok := bytes.CutPrefix(data, []byte("ref:")); ok {
		if bytes.HasPrefix(bytes.TrimLeft(rest, " \t\n\r"), []byte("refs/")) {
			return true
		}
	}
	n := 0
	for n < len(data) && (data[n] >= '0' && data[n] <= '9' || data[n] >= 'a' && data[n] <= 'f' || data[n] >= 'A' && data[n] <= 'F') {
		n++
	}
	return n >= 40
}

// gitDir checks one git directory's control files and descends into its
// modules and worktrees.
func (s *gitSweep) gitDir(rel string, depth int) {
	if s.visited[rel] {
		return
	}
	if depth > MaxModuleDepth {
		s.fail(rel, errGitTooDeep)
		return
	}
	s.visited[rel] = true
	s.forceIfMade(rel)
	s.gitdirs[rel] = true
	r, name := s.base(rel)
	gd, restore, err := openDirAccessible(r, name)
	if err != nil {
		// Missing, or not a directory (then no git directory either;
		// a pointer file there is checked as one by its parent's pass).
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			s.fail(rel, err)
		}
		return
	}
	defer restore()
	defer gd.Close()
	prev := s.cur
	s.cur = &pinnedDir{rel: rel, root: gd}
	defer func() { s.cur = prev }()
	if s.onDir != nil {
		s.readDir(rel) // the watcher needs the directory itself
	}
	for _, name := range []string{"config", "config.worktree"} {
		s.config(path.Join(rel, name))
	}
	s.hooks(path.Join(rel, "hooks"))
	s.pointer(path.Join(rel, "commondir"))
	for _, sub := range []string{"modules", "worktrees"} {
		s.container(path.Join(rel, sub), depth+1)
	}
}

// container walks modules/ or worktrees/: a directory that is a git
// directory is checked as one, any other is part of a name with slashes,
// and a link is a pointer (git's submodule commands take a link
// modules/<name> for the submodule's git directory, as git takes a .git
// link).
func (s *gitSweep) container(rel string, depth int) {
	if depth > MaxModuleDepth {
		s.fail(rel, errGitTooDeep)
		return
	}
	entries, ok := s.readDir(rel)
	if !ok {
		return
	}
	for _, e := range entries {
		child := path.Join(rel, e.Name())
		if e.Type()&fs.ModeSymlink != 0 {
			s.pointer(child)
			continue
		}
		if !e.IsDir() {
			continue
		}
		if fi, err := s.lstat(path.Join(child, "HEAD")); err == nil && isHeadMode(fi.Mode()) {
			s.gitDir(child, depth)
		} else {
			s.container(child, depth+1)
		}
	}
}

// changed reports whether rel must be acted on: it exists, is not one
// the sweep skips, and differs from the version last seen. Outside an
// acting pass it only records the version.
func (s *gitSweep) changed(rel string) (fs.FileInfo, bool) {
	fi, err := s.lstat(rel)
	if err != nil {
		delete(s.known, rel)
		return nil, false
	}
	fp := fingerprintOf(fi)
	if t, ok := s.tainted[rel]; ok {
		delete(s.tainted, rel)
		if t == fp {
			// Still what a tool wrote for the model (even where a
			// command's policy protects the path: the tool wrote it
			// outside the jail): acted on in any pass, never recorded
			// as the host's.
			s.known[rel] = fp
			return fi, true
		}
		// Rewritten since: whoever did it is judged as any writer is.
	}
	if s.skip[rel] {
		return fi, false
	}
	if s.forcedPath(rel) {
		s.known[rel] = fp
		return fi, true
	}
	if old, ok := s.known[rel]; ok && old == fp {
		return fi, false
	}
	s.known[rel] = fp
	return fi, s.act
}

// config neutralises a git config file the command created or changed:
// every entry the allowlist does not keep (gitAllowed) is removed
// (staged beside it and renamed over it); one that is not a regular
// file, is too large, or does not parse is moved aside whole. A config
// holding core.worktree (the host's too) is judged again in every
// acting pass, changed or not, since what makes that value inert is
// the directories it names, which a command can swap for links without
// touching the config.
func (s *gitSweep) config(rel string) {
	if s.onConfig != nil {
		s.onConfig(rel)
	}
	prev, seen := s.known[rel]
	fi, ok := s.changed(rel)
	if fi == nil {
		delete(s.worktrees, rel)
		return
	}
	gitDir := path.Dir(rel)
	inert := func(v string) bool { return s.worktreeInert(gitDir, v) }
	if !ok && s.act {
		for _, v := range s.worktrees[rel] {
			if !inert(v) {
				ok = true // re-aimed beneath it: acted on as changed
				delete(s.known, rel)
				break
			}
		}
	}
	if !ok {
		if !s.act && (!seen || prev != s.known[rel]) {
			s.recordWorktrees(rel) // a version first seen: the baseline's
		}
		return
	}
	if !fi.Mode().IsRegular() {
		s.aside(rel, "not a regular file")
		return
	}
	dir, base := path.Split(rel)
	r, dn := s.base(path.Clean(dir))
	d, err := r.OpenRoot(dirName(dn))
	if err != nil {
		s.fail(rel, err)
		return
	}
	defer d.Close()
	data, err := pinnedfs.ReadRegular(d, base, MaxConfigBytes)
	if err != nil {
		// Too large, not regular by now, or unreadable: what git would
		// make of it cannot be told, so git must not meet it.
		if !errors.Is(err, fs.ErrNotExist) {
			s.aside(rel, err.Error())
		}
		return
	}
	out, removed, err := neutraliseGitConfig(data, inert)
	if err != nil {
		s.aside(rel, err.Error())
		return
	}
	s.worktrees[rel] = worktreeValues(out)
	if len(removed) == 0 {
		return
	}
	if err := writeBeside(d, base, out); err != nil {
		s.fail(rel, fmt.Errorf("rewrite without %s: %w", strings.Join(removed, ", "), err))
		return
	}
	// Not recorded as seen: a command still running may have renamed its
	// own version over ours already, so the next pass reads it again.
	delete(s.known, rel)
	s.done = append(s.done, sandbox.Neutralisation{Path: s.absPath(rel), Removed: removed})
}

// recordWorktrees notes the core.worktree values of a config the sweep
// takes as it is (the host's), so later passes judge them again.
func (s *gitSweep) recordWorktrees(rel string) {
	data, err := readRootFile(s.root, rel)
	if err != nil {
		delete(s.worktrees, rel)
		return
	}
	if v := worktreeValues(data); len(v) > 0 {
		s.worktrees[rel] = v
	} else {
		delete(s.worktrees, rel)
	}
}

// worktreeValues returns the core.worktree values data holds (none when
// it does not parse: git refuses it too).
func worktreeValues(data []byte) []string {
	if !bytes.Contains(bytes.ToLower(data), []byte("worktree")) {
		return nil
	}
	items, err := scanGitConfig(data)
	if err != nil {
		return nil
	}
	var out []string
	for _, it := range items {
		if it.section == "core" && !it.hasSub && it.key == "worktree" {
			out = append(out, it.value)
		}
	}
	return out
}

// hooks moves aside every hook the command created or changed: anything
// in a hooks directory but git's inert *.sample files, or the hooks
// directory itself when it is a link.
func (s *gitSweep) hooks(rel string) {
	fi, ok := s.changed(rel)
	if fi == nil {
		return
	}
	// A protected hooks directory is read-only in the jail: only a hook
	// a tool wrote there for the model (tainted) can be the model's.
	protected := s.skip[rel]
	if fi.Mode()&fs.ModeSymlink != 0 {
		if ok {
			s.aside(rel, "hooks directory is a link")
		}
		return
	}
	if !fi.IsDir() || protected && !s.taintedIn(rel) {
		return
	}
	entries, okd := s.readDir(rel)
	if !okd {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, ".sample") || strings.Contains(name, QuarantineSuffix) {
			continue
		}
		if _, mine := s.tainted[path.Join(rel, name)]; protected && !mine {
			continue
		}
		if _, ok := s.changed(path.Join(rel, name)); ok {
			s.aside(path.Join(rel, name), "hook")
		}
	}
}

// aside moves rel out of git's way, renaming it beside itself.
func (s *gitSweep) aside(rel, why string) {
	dir := path.Dir(rel)
	r, dn := s.base(dir)
	s.asideWith(rel, dir, why, func(name string) (string, error) { return renameAside(r, dn, name) })
}

// asideInto moves rel out of git's way into the directory into (both
// beneath the root): for an entry whose every name beside itself git
// may read, such as a link in modules/.
func (s *gitSweep) asideInto(rel, into, why string) {
	dir := path.Dir(rel)
	s.asideWith(rel, into, why, func(name string) (string, error) { return renameAsideInto(s.root, dir, name, s.root, into) })
}

func (s *gitSweep) asideWith(rel, into, why string, rename func(name string) (string, error)) {
	to, err := rename(path.Base(rel))
	if errors.Is(err, fs.ErrNotExist) {
		delete(s.known, rel) // gone already: the command removed it
		return
	}
	if err != nil {
		s.fail(rel, fmt.Errorf("%s: move aside: %w", why, err))
		return
	}
	delete(s.known, rel)
	s.done = append(s.done, sandbox.Neutralisation{Path: s.absPath(rel), MovedTo: s.absPath(path.Join(into, to))})
}

// containerHolder returns the outermost known git directory in whose
// modules/ or worktrees/ rel lies: git looks a submodule's (or a
// worktree's) git directory up by any name beneath those, so an entry
// moved aside must leave them.
func (s *gitSweep) containerHolder(rel string) (string, bool) {
	parts := strings.Split(rel, "/")
	for i := 0; i < len(parts)-1; i++ {
		if (parts[i] == "modules" || parts[i] == "worktrees") && s.gitdirs[joinComps(parts[:i])] {
			return joinComps(parts[:i]), true
		}
	}
	return "", false
}

// errGitTooDeep is the failure of a modules/ or worktrees/ tree deeper
// than MaxModuleDepth.
var errGitTooDeep = fmt.Errorf("modules or worktrees nested deeper than %d levels, which the git guard does not check", MaxModuleDepth)

func (s *gitSweep) fail(rel string, err error) {
	delete(s.known, rel) // so the next pass tries again
	msg := fmt.Sprintf("%s: %v", s.absPath(rel), err)
	s.failed = append(s.failed, msg)
	s.done = append(s.done, sandbox.Neutralisation{Path: s.absPath(rel), Err: err.Error()})
}

func (s *gitSweep) absPath(rel string) string {
	return filepath.Join(s.abs, filepath.FromSlash(rel))
}

// openDirAccessible pins the directory name beneath r. When a command
// took the broker's own access away (chmod 111 or 000 on a directory it
// created: the jail runs as the host's user, so the host owns it), the
// broker gives itself u+rwx for as long as it works there: restore puts
// the mode back. A directory it cannot chmod (not its own, so no command
// made it) stays an error.
func openDirAccessible(r *os.Root, name string) (*os.Root, func(), error) {
	d, err := r.OpenRoot(dirName(name))
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return d, func() {}, err
	}
	fi, lerr := r.Lstat(name)
	if lerr != nil || !fi.IsDir() {
		return nil, nil, err
	}
	mode := fi.Mode().Perm()
	if cerr := r.Chmod(name, mode|0o700); cerr != nil {
		return nil, nil, fmt.Errorf("%w (and giving the broker access: %v)", err, cerr)
	}
	restore := func() { r.Chmod(name, mode) }
	d, err = r.OpenRoot(dirName(name))
	if err != nil {
		restore()
		return nil, nil, err
	}
	return d, restore, nil
}

// writeBeside replaces name in d with data (staged in d and renamed
// over it), making d writable for the owner meanwhile when a command
// took that away (chmod 555 .git), and restoring its mode after.
func writeBeside(d *os.Root, name string, data []byte) error {
	err := pinnedfs.WriteWhole(d, name, data, 0o644)
	if !errors.Is(err, fs.ErrPermission) {
		return err
	}
	restore, cerr := ownerWritable(d)
	if cerr != nil {
		return fmt.Errorf("%w (and making the directory writable: %v)", err, cerr)
	}
	defer restore()
	return pinnedfs.WriteWhole(d, name, data, 0o644)
}

// ownerWritable adds u+w to the directory d and returns how to put its
// mode back.
func ownerWritable(d *os.Root) (func(), error) {
	fi, err := d.Stat(".")
	if err != nil {
		return nil, err
	}
	mode := fi.Mode().Perm()
	if err := d.Chmod(".", mode|0o700); err != nil {
		return nil, err
	}
	return func() { d.Chmod(".", mode) }, nil
}
