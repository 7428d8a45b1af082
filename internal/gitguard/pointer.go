package gitguard

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/agentloom/loom/internal/pinnedfs"
)

// Git pointers: a ".git" file or link, and a git directory's commondir.
//
// The guard reads a pointer exactly as git does (setup.c:
// read_gitfile_gently for a .git file, get_common_dir_noenv for
// commondir), resolves the path git would open on the host's file
// system, component by component and link by link as the kernel does,
// and then decides:
//   - a target beneath the writable root is checked as a git directory
//     wherever it lies (inside another repository's objects, refs or
//     logs too), or, while it is none yet, watched and looked at again
//     in every later pass;
//   - a pointer a command created or changed (or one whose target a
//     command re-aimed through a link or a directory it swapped) that
//     git would follow but the guard cannot with certainty is moved
//     aside (one git refuses outright, such as an empty file or one
//     without the "gitdir: " prefix, is left: it runs nothing): one
//     that is not plain (a NUL byte, a control byte, invalid UTF-8, more
//     than maxPointerFileBytes, not a regular file, a commondir link, a
//     .git link to a file), whose resolution passes through procfs (what
//     /proc/self, /proc/<pid>/root or cwd and /dev/fd name depends on
//     which process reads them), loops past maxGitLinks
//     links, or cannot be looked at; and one naming a directory outside
//     its writable root (another writable root, which that root's
//     guard never sees as named, or the host's own repositories, which
//     a command has no business aiming the host's git at). Only when the
//     move fails is the workspace fenced;
//   - a pointer a command made or re-aimed that names a git directory
//     (and, through its commondir, a common directory) holding a config
//     entry off the allowlist or a hook is moved aside too, whoever
//     wrote them (armedTarget): the host's own checkout writes any file
//     a command committed, so a git directory by another name than .git
//     in the host's baseline may be a command's plant. Only a git
//     directory the host's checkout cannot write (one beneath a .git)
//     or whose config the policy protects is the host's own repository,
//     taken as it is. The command's pointers are remembered, and every
//     acting pass judges what they name again.
//
// A pointer the host made (the baseline) is followed but never moved.

// maxGitLinks bounds the links one pointer's resolution follows, as the
// kernel's own bound (MAXSYMLINKS) does; past it git's open fails with
// ELOOP, and the guard takes the pointer as one it cannot follow.
const maxGitLinks = 40

// gitfilePrefix is what a .git file must start with for git to read it.
const gitfilePrefix = "gitdir: "

// parseGitfile returns the path a .git file holding data names, as git's
// read_gitfile_gently reads it: data must start with "gitdir: "; every
// trailing '\n' and '\r' is dropped; what follows the prefix, up to the
// first NUL, is the path (an empty one names the .git file's own
// directory). ok is false where git refuses the file.
func parseGitfile(data []byte) (p string, ok bool) {
	if !bytes.HasPrefix(data, []byte(gitfilePrefix)) {
		return "", false
	}
	n := len(data)
	for n > 0 && (data[n-1] == '\n' || data[n-1] == '\r') {
		n--
	}
	if n <= len(gitfilePrefix) {
		return "", false
	}
	rest := data[len(gitfilePrefix):n]
	if i := bytes.IndexByte(rest, 0); i >= 0 {
		rest = rest[:i]
	}
	return string(rest), true
}

// parseCommondir returns the path a commondir file holding data names,
// as git's get_common_dir_noenv reads it: every trailing '\n' and '\r'
// is dropped and the rest, up to the first NUL, is the path. An empty
// file is refused (git dies on it); a path that is empty after the NUL
// cut names the git directory itself.
func parseCommondir(data []byte) (p string, ok bool) {
	if len(data) == 0 {
		return "", false
	}
	n := len(data)
	for n > 0 && (data[n-1] == '\n' || data[n-1] == '\r') {
		n--
	}
	rest := data[:n]
	if i := bytes.IndexByte(rest, 0); i >= 0 {
		rest = rest[:i]
	}
	return string(rest), true
}

// plainPointer reports whether data is a pointer as git itself writes
// one, which every reader takes the same way: for a .git file "gitdir: "
// then the path, for commondir the path alone, then nothing but line
// ends; the path non-empty, valid UTF-8, without NUL or any other
// control byte, and the whole at most maxPointerFileBytes.
func plainPointer(data []byte, gitfile bool) bool {
	if len(data) > maxPointerFileBytes {
		return false
	}
	if gitfile {
		var found bool
		if data, found = bytes.CutPrefix(data, []byte(gitfilePrefix)); !found {
			return false
		}
	}
	data = bytes.TrimRight(data, "\r\n")
	if len(data) == 0 || !utf8.Valid(data) {
		return false
	}
	for _, c := range data {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// gitAimKind says what a pointer's resolution found.
type gitAimKind uint8

const (
	// aimNone: git would not follow the pointer at all (a .git file
	// without the "gitdir: " prefix, an empty commondir).
	aimNone gitAimKind = iota
	// aimInRoot: the path lies beneath the writable root; rel is the
	// target (relative, "." for the root itself), present says whether
	// it is a directory now.
	aimInRoot
	// aimOutside: the path names something outside the writable root.
	aimOutside
	// aimUncertain: the guard cannot tell with certainty what git would
	// open (why says why).
	aimUncertain
)

// gitAim is where a pointer leads, as recorded per pointer: a pass that
// finds it changed re-decides.
type gitAim struct {
	kind    gitAimKind
	rel     string
	present bool
	odd     bool   // the file is not a plain pointer (see plainPointer)
	why     string // aimOutside, aimUncertain, odd: what to tell
}

// errGitResolve says a host path cannot be resolved with certainty.
var errGitResolve = errors.New("cannot resolve with certainty")

// hostResolution is the outcome of resolving one path on the host.
type hostResolution struct {
	// comps is the resolved path's components from "/" (each a real
	// directory but perhaps the last), dir whether the last is a
	// directory, missing whether it does not exist (comps then holds
	// the deepest directory that does, then the first missing name).
	comps   []string
	dir     bool
	missing bool
	// through lists every directory the resolution looked a name up in
	// (as component lists; the one a missing name was sought in too), so
	// the guard can watch those beneath the root.
	through [][]string
}

// hostFS is how a resolution looks at the host's file system: lstat and
// readlink of an absolute path whose every parent component the
// resolver already found to be a real directory.
type hostFS interface {
	lstat(comps []string) (fs.FileInfo, error)
	readlink(comps []string) (string, error)
}

// resolveHost resolves p (absolute, or relative to the directory start,
// given as components from "/") the way the kernel resolves a path git
// opens: every link followed (at most maxGitLinks), ".." the parent of
// the real directory reached so far. It refuses with errGitResolve a
// path through /proc or /dev (or any procfs), one that loops, and any
// component it cannot look at.
func resolveHost(h hostFS, start []string, p string) (hostResolution, error) {
	var res hostResolution
	stack := []string{}
	if !strings.HasPrefix(p, "/") {
		stack = append(stack, start...)
	}
	rest := splitPath(p)
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		if c == "." {
			continue // what the stack holds is a directory
		}
		if c == ".." {
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		// Every directory a name is looked up in is one whose change can
		// change the outcome (a link swapped, the missing target made).
		if n := len(res.through); n == 0 || !slices.Equal(res.through[n-1], stack) {
			res.through = append(res.through, slices.Clip(stack))
		}
		next := append(slices.Clip(stack), c)
		if special(next) {
			return res, fmt.Errorf("%w: the path passes through /%s, which means something else to each process", errGitResolve, strings.Join(next, "/"))
		}
		fi, err := h.lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			res.comps, res.missing = next, true
			return res, nil
		}
		if err != nil {
			return res, fmt.Errorf("%w: /%s: %v", errGitResolve, strings.Join(next, "/"), err)
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			if links++; links > maxGitLinks {
				return res, fmt.Errorf("%w: more than %d links", errGitResolve, maxGitLinks)
			}
			to, err := h.readlink(next)
			if err != nil {
				return res, fmt.Errorf("%w: readlink /%s: %v", errGitResolve, strings.Join(next, "/"), err)
			}
			if to == "" {
				return res, fmt.Errorf("%w: /%s is an empty link", errGitResolve, strings.Join(next, "/"))
			}
			if strings.HasPrefix(to, "/") {
				stack = []string{}
			}
			rest = append(splitPath(to), rest...)
		case fi.IsDir():
			if onProcFS(fi, next) {
				return res, fmt.Errorf("%w: /%s is on procfs", errGitResolve, strings.Join(next, "/"))
			}
			stack = next
			res.through = append(res.through, stack) // what it holds may make it a git directory
		default:
			if len(rest) > 0 {
				// ENOTDIR for git: nothing there.
				res.comps, res.missing = next, true
				return res, nil
			}
			res.comps = next
			return res, nil
		}
	}
	res.comps, res.dir = stack, true
	return res, nil
}

// special reports whether comps lies in /proc. (/dev/fd, /dev/stdin and
// the like are links into /proc/self, caught there; onProcFS catches a
// procfs mounted anywhere else.)
func special(comps []string) bool {
	return len(comps) > 0 && comps[0] == "proc"
}

// splitPath splits p into its components, dropping empty ones and ".",
// but for a trailing "/" or "/.", kept as a last "." (it requires what
// comes before to be a directory).
func splitPath(p string) []string {
	var out []string
	for c := range strings.SplitSeq(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	if len(out) > 0 && (strings.HasSuffix(p, "/") || strings.HasSuffix(p, "/.")) {
		out = append(out, ".")
	}
	return out
}

// sweepFS is the host file system as a sweep looks at it: beneath its
// root through the pinned root (no link or ".." leads out of it), above
// and beside it by absolute path.
type sweepFS struct{ s *gitSweep }

func (f sweepFS) rel(comps []string) (string, bool) {
	c := f.s.canon
	if c == nil || len(comps) < len(c) || !slices.Equal(comps[:len(c)], c) {
		return "", false
	}
	if len(comps) == len(c) {
		return ".", true
	}
	return strings.Join(comps[len(c):], "/"), true
}

func (f sweepFS) lstat(comps []string) (fs.FileInfo, error) {
	if rel, ok := f.rel(comps); ok {
		return f.s.root.Lstat(rel)
	}
	return os.Lstat("/" + strings.Join(comps, "/"))
}

func (f sweepFS) readlink(comps []string) (string, error) {
	if rel, ok := f.rel(comps); ok {
		return f.s.root.Readlink(rel)
	}
	return os.Readlink("/" + strings.Join(comps, "/"))
}

// canonRoot resolves the root's own path (what the host's git sees as
// its path) into components, nil when it cannot be.
func canonRoot(abs string) []string {
	res, err := resolveHost(osFS{}, nil, abs)
	if err != nil || !res.dir {
		return nil
	}
	return res.comps
}

// osFS is the host file system by absolute path.
type osFS struct{}

func (osFS) lstat(comps []string) (fs.FileInfo, error) {
	return os.Lstat("/" + strings.Join(comps, "/"))
}

func (osFS) readlink(comps []string) (string, error) {
	return os.Readlink("/" + strings.Join(comps, "/"))
}

// aimOf reads the pointer at rel (fi its lstat) and resolves where git
// would go from it, watching every directory beneath the root the
// resolution passed.
func (s *gitSweep) aimOf(rel string, fi fs.FileInfo) gitAim {
	dir, name := path.Split(rel)
	dir = path.Clean(dir)
	gitfile := name != "commondir"
	if !s.canonDone {
		s.canon, s.canonDone = canonRoot(s.abs), true
	}
	if s.canon == nil {
		return gitAim{kind: aimUncertain, why: "the writable root's own path cannot be resolved"}
	}
	start := slices.Concat(s.canon, splitPath(dir)) // dir is clean: no trailing "."
	var target string
	var aim gitAim
	switch {
	case fi.Mode()&fs.ModeSymlink != 0 && gitfile:
		// git takes a .git link to a directory as the git directory
		// (and would read one to a file as a .git file: never written
		// by git, so not followed).
		target = name
	case fi.Mode()&fs.ModeSymlink != 0:
		return gitAim{kind: aimUncertain, why: "commondir is a link"}
	case !fi.Mode().IsRegular():
		return gitAim{kind: aimUncertain, why: "git pointer is not a regular file"}
	default:
		r, dn := s.base(dir)
		d, err := r.OpenRoot(dirName(dn))
		if err != nil {
			return gitAim{kind: aimUncertain, why: fmt.Sprintf("cannot open its directory: %v", err)}
		}
		data, err := pinnedfs.ReadRegular(d, name, maxPointerFileBytes)
		d.Close()
		if errors.Is(err, fs.ErrNotExist) {
			return gitAim{kind: aimNone}
		}
		if err != nil {
			return gitAim{kind: aimUncertain, why: fmt.Sprintf("git pointer cannot be read whole: %v", err)}
		}
		var ok bool
		if gitfile {
			target, ok = parseGitfile(data)
		} else {
			target, ok = parseCommondir(data)
		}
		if !ok {
			// git refuses it (no "gitdir: " prefix, no path, an empty
			// commondir): nothing to follow, nothing git would run. Also
			// what a live pass sees of a pointer being written, between
			// its creation and its one write.
			return gitAim{kind: aimNone}
		}
		if !plainPointer(data, gitfile) {
			aim.odd, aim.why = true, "git pointer is not plain (a NUL or control byte, invalid UTF-8, or more than one line)"
		}
		if target == "" {
			target = "."
		}
	}
	res, err := resolveHost(sweepFS{s}, start, target)
	var through []string
	for _, t := range res.through {
		if r, ok := (sweepFS{s}).rel(t); ok && !slices.Contains(through, r) {
			through = append(through, r)
			s.watchDir(r)
		}
	}
	s.through[rel] = through
	if err != nil {
		aim.kind, aim.why = aimUncertain, err.Error()
		return aim
	}
	r, in := (sweepFS{s}).rel(res.comps)
	switch {
	case !in:
		aim.kind = aimOutside
		if aim.why == "" {
			aim.why = fmt.Sprintf("names /%s, outside the writable root", strings.Join(res.comps, "/"))
		}
	case !res.dir && !res.missing:
		aim.kind, aim.why = aimUncertain, "the git pointer leads to a file"
	default:
		aim.kind, aim.rel, aim.present = aimInRoot, r, res.dir
	}
	return aim
}

// watchDir has the watcher (when there is one) watch the directory rel.
func (s *gitSweep) watchDir(rel string) {
	if s.onDir == nil {
		return
	}
	r, name := s.base(rel)
	f, err := r.OpenFile(dirName(name), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return
	}
	s.onDir(rel, f)
	f.Close()
}

// pointer checks the .git file or link, or the commondir, at rel: it
// follows it to the git directory git would use (see aimOf) and moves
// it aside when git could not be followed there with certainty and a
// command made it so (see the comment at the top of this file).
func (s *gitSweep) pointer(rel string) {
	if s.ptrSeen[rel] {
		return
	}
	s.ptrSeen[rel] = true
	fi, changed := s.changed(rel)
	if fi == nil {
		s.forgetPointer(rel)
		return
	}
	if t := s.tool; t != nil && rel == t.rel {
		// The tool wrote this pointer: what it names is the model's.
		t.aimed = true
		defer func() { t.aimed = false }()
	}
	aim := s.aimOf(rel, fi)
	prev, seen := s.pointers[rel]
	s.pointers[rel] = aim
	act := changed || (s.act && seen && prev != aim && !s.skip[rel])
	if fp := fingerprintOf(fi); act {
		s.owned[rel] = fp
	} else if o, ok := s.owned[rel]; ok && o != fp {
		delete(s.owned, rel) // rewritten by the host since
	}
	_, owned := s.owned[rel]
	failed := len(s.failed)
	if aim.kind == aimInRoot && aim.present && (aim.rel != "." || s.isGitDir(".")) {
		// Checked as a git directory even while git would refuse it as
		// one (it may become one at any time); but the root's own files
		// named config or hooks are the host's project files unless the
		// root is a git directory.
		s.gitDir(aim.rel, 0)
	}
	if len(s.failed) > failed && (changed || s.act && !s.skip[rel]) {
		// What it names could not be neutralised (the root is fenced for
		// that): the host's git must not be led there meanwhile.
		aim.odd, aim.why, act = true, "what it names could not be neutralised", true
	}
	if (act || s.act && owned) && !aim.odd && aim.kind == aimInRoot && aim.present && !s.test.trustTargets {
		// What the command's own writes left there was neutralised just
		// now; what remains off the list is someone else's, and the
		// command must not lead the host's git to it.
		if why := s.armedTarget(aim.rel); why != "" {
			aim.odd, aim.why, act = true, why, true
		}
	}
	if !act {
		return
	}
	switch {
	case aim.odd, aim.kind == aimUncertain, aim.kind == aimOutside:
		s.asidePointer(rel, aim.why)
	default:
		return
	}
	s.forgetPointer(rel)
}

// asidePointer moves the pointer at rel out of git's way: beside itself
// (git reads no other name there), or, for a link in modules/ or
// worktrees/ (see container), out of them. A .git moved aside no longer
// keeps git from taking its directory for the git directory (see
// shadow).
func (s *gitSweep) asidePointer(rel, why string) {
	switch path.Base(rel) {
	case ".git":
		s.aside(rel, why)
		_, err := s.lstat(rel)
		s.shadow(path.Dir(rel), err == nil)
		return
	case "commondir":
		s.aside(rel, why)
		return
	}
	into, ok := s.containerHolder(rel)
	if !ok {
		s.fail(rel, fmt.Errorf("%s: no git directory holds it to move it into", why))
		return
	}
	s.asideInto(rel, into, why)
}

// ownedPointers judges again, between commands, what each pointer a
// command made names (see owned), as the host's own writes since left
// it, and moves aside one that now leads the host's git to an armed git
// directory (and, a .git moved aside, acts on what it shadowed: see
// shadow). Nothing else is acted on.
func (s *gitSweep) ownedPointers() {
	if s.test.trustTargets {
		return
	}
	for _, rel := range sortedKeys(s.owned) {
		fi, err := s.lstat(rel)
		if err != nil || fingerprintOf(fi) != s.owned[rel] {
			delete(s.owned, rel) // gone, or rewritten by the host: no longer the command's
			continue
		}
		aim := s.aimOf(rel, fi)
		if aim.kind != aimInRoot || !aim.present {
			continue
		}
		if why := s.armedTarget(aim.rel); why != "" {
			s.asidePointer(rel, why)
			s.forgetPointer(rel)
		}
	}
}

// forgetPointer drops what the sweep knows of the pointer at rel (gone,
// or moved aside).
func (s *gitSweep) forgetPointer(rel string) {
	delete(s.pointers, rel)
	delete(s.through, rel)
	delete(s.owned, rel)
}

// armedTarget says why the git directory rel, which a pointer a command
// made names, would make the host's git run a program, or returns ""
// when it would not: rel is no git directory, or it and the common
// directory its commondir names each hold only config entries the
// allowlist keeps (gitAllowedEntry) and no hook but git's *.sample
// files, or are the host's own repository (see hostGitDir). A file
// that cannot be read with certainty counts as armed.
func (s *gitSweep) armedTarget(rel string) string {
	if !s.isGitDir(rel) {
		return "" // nothing git opens as a repository, yet: judged again when it changes
	}
	if why := s.armedGitDir(rel); why != "" {
		return why
	}
	cd := path.Join(rel, "commondir")
	fi, err := s.lstat(cd)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	var a gitAim
	if err != nil {
		a = gitAim{kind: aimUncertain, why: err.Error()}
	} else {
		a = s.aimOf(cd, fi)
	}
	switch {
	case a.kind == aimNone:
		return ""
	case a.kind == aimInRoot && a.present:
		return s.armedGitDir(a.rel)
	case a.kind == aimInRoot, s.hostGitDir(rel):
		return "" // a missing common directory: git refuses the repository
	default:
		return fmt.Sprintf("names the git directory %s, whose commondir leads where the guard cannot judge (%s)", s.absPath(rel), a.why)
	}
}

// hostGitDir reports whether the git directory rel is the host's own
// repository, whose files the guard takes as they are: it lies beneath
// a directory named .git (which git's checkout never writes into, so
// nothing a command committed can land there), or its config is a path
// the policy protects.
func (s *gitSweep) hostGitDir(rel string) bool {
	for c := range strings.SplitSeq(rel, "/") {
		if strings.EqualFold(c, ".git") {
			return true
		}
	}
	return s.skip[path.Join(rel, "config")]
}

// armedGitDir is armedTarget for one git directory, without its
// commondir.
func (s *gitSweep) armedGitDir(rel string) string {
	if s.hostGitDir(rel) {
		return ""
	}
	for _, name := range []string{"config", "config.worktree"} {
		if why := s.armedConfig(rel, path.Join(rel, name)); why != "" {
			return why
		}
	}
	return s.armedHooks(path.Join(rel, "hooks"))
}

// armedConfig says why the config at rel, in the git directory gitDir,
// holds what the allowlist does not keep, or returns "" when it holds
// nothing else or is missing.
func (s *gitSweep) armedConfig(gitDir, rel string) string {
	data, err := s.readControl(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		return fmt.Sprintf("names a git directory whose %s cannot be judged: %v", s.absPath(rel), err)
	}
	items, err := scanGitConfig(data)
	if err != nil {
		return fmt.Sprintf("names a git directory whose %s cannot be judged: %v", s.absPath(rel), err)
	}
	var off []string
	for _, it := range items {
		if !gitAllowedEntry(it, func(v string) bool { return s.worktreeInert(gitDir, v) }) {
			off = append(off, it.name())
		}
	}
	if len(off) > 0 {
		return fmt.Sprintf("names a git directory whose %s, which the command did not write, holds %s, off the allowlist", s.absPath(rel), strings.Join(off, ", "))
	}
	return ""
}

// armedHooks says why the hooks directory rel holds a hook git would
// run, or returns "" when it holds none.
func (s *gitSweep) armedHooks(rel string) string {
	fi, err := s.lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ""
	case err != nil:
		return fmt.Sprintf("names a git directory whose %s cannot be looked at: %v", s.absPath(rel), err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Sprintf("names a git directory whose %s is a link", s.absPath(rel))
	case !fi.IsDir():
		return "" // git finds no hook in a file
	}
	entries, ok := s.readDir(rel)
	if !ok {
		return fmt.Sprintf("names a git directory whose %s cannot be listed", s.absPath(rel))
	}
	for _, e := range entries {
		if name := e.Name(); !strings.HasSuffix(name, ".sample") && !strings.Contains(name, QuarantineSuffix) {
			return fmt.Sprintf("names a git directory holding the hook %s, which the command did not write", s.absPath(path.Join(rel, name)))
		}
	}
	return ""
}

// readControl reads the control file rel, opened beneath its pinned
// directory: non-blocking, a regular file only, at most
// MaxConfigBytes.
func (s *gitSweep) readControl(rel string) ([]byte, error) {
	dir, base := path.Split(rel)
	r, dn := s.base(path.Clean(dir))
	d, err := r.OpenRoot(dirName(dn))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return pinnedfs.ReadRegular(d, base, MaxConfigBytes)
}

// knownPointers follows again every pointer found so far whose
// resolution passed one of the directories dirty (a change there may
// have created what it names, or swapped a link or a directory on its
// way, in a place no walk visits), or every one when dirty is nil; an
// acting pass follows every pointer a command made too (see owned).
func (s *gitSweep) knownPointers(dirty []string) {
	set := make(map[string]bool, len(dirty))
	for _, d := range dirty {
		set[d] = true
	}
	for _, rel := range sortedKeys(s.pointers) {
		_, owned := s.owned[rel]
		if dirty == nil || s.act && owned || set[path.Dir(rel)] || slices.ContainsFunc(s.through[rel], func(d string) bool { return set[d] }) {
			s.pointer(rel)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
