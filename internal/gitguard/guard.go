package gitguard

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/agentloom/loom/sandbox"
)

// The git guard keeps a command from leaving repository-controlled
// execution behind for the host's own git: the top-level repository's
// control files are read-only in the jail (the policy's protected paths); protected
// paths that were missing and that a command created are moved aside;
// and in every git directory anywhere in a writable root (nested
// repositories, submodules' and linked worktrees' git directories, a
// .git file's target) config the command created or changed keeps only
// the entries on the allowlist (allow.go) and hooks it created are
// moved aside
// (sandbox.Neutralisation). Every pointer (.git file or link, commondir, a link
// in modules/ or worktrees/) is read and resolved exactly as git does
// on the host (pointer.go): the git directory it names is checked
// wherever in the root it lies, and one a command wrote or re-aimed that
// cannot be followed with certainty (a NUL, an odd byte, too large,
// through /proc, a loop), that names a directory outside the root, or
// that names a git directory holding what the allowlist does not keep,
// whoever wrote it (the host's own checkout writes whatever a command
// committed), is moved aside; so a command cannot launder a plant
// through the host's baseline. A git directory a command exposes by
// removing or spoiling the .git that shadowed it has its control files
// acted on as the command's (gitSweep.shadow). Whatever cannot be
// understood is moved out of git's way first; the workspace is fenced
// only when even that fails. Changes are found by a persistent inotify watch of
// each writable root (a dirty-directory set), checked as they happen
// while a command runs and again when it settles; a root whose watch
// overflowed, or where inotify is unavailable, is swept whole instead.
// What cannot be done fences the workspace (a fenced Error) until
// Fences.Unfence succeeds. A marker kept outside the workspace while a
// command runs makes the next broker sweep the root whole first when the
// host died mid-command.
//
// Between commands the watch's changes are the host's own and only
// recorded as the baseline. Writes a harness-side tool makes on a
// model's behalf happen there too, in the host's process, so each is
// reported with Fences.ToolWrite (toolwrite.go): it checks the
// written path's ancestors and the git directories they are or name at
// once, and marks the control files it wrote as the model's (tainted),
// so no baseline ever records them as the host's.

// Fences is one broker's git guard: one entry per writable root it has
// run commands in. The zero value is ready to use.
type Fences struct {
	// Audit, when set, receives each event, outside every lock of the
	// guard.
	Audit func(Event)
	// Test holds switches only tests set: Off turns the whole guard off
	// (the escape suite's controls); NoWatch runs it as where inotify is
	// unavailable; TrustTargets takes a git directory a command's
	// pointer names as it stands when the command did not write it (the
	// guard before it judged such targets: the laundering probes'
	// controls).
	Test struct{ Off, NoWatch, TrustTargets bool }

	mu    sync.Mutex
	roots map[string]*gitRoot
	// markerDir, when set (tests), is where crash markers are kept; once
	// markerOK, it is the directory checked and in use.
	markerDir string
	markerOK  bool
}

// audit hands e to the host (see Fences.Audit).
func (f *Fences) audit(e Event) {
	if f.Audit != nil {
		f.Audit(e)
	}
}

// gitRoot is the guard's view of one writable root.
type gitRoot struct {
	f   *Fences
	abs string

	mu      sync.Mutex
	root    *os.Root
	sweep   *gitSweep
	watch   *gitWatch // nil when inotify is unavailable
	started bool      // the first command's baseline (or crash) sweep ran
	active  int       // commands running with this root writable
	fenced  string    // why the root is fenced; empty when it is not
	// resolved is where abs resolved when the guard first pinned it: a
	// root that later resolves elsewhere (a command swapped it, or a
	// directory above it, for a link) is fenced, never swept there.
	resolved string
	seq      int64
	log      []gitLogged
	absent   map[string]int // absolute absent protected paths → running commands that listed them
	// protects counts, per protected path (relative), the running
	// commands whose policy protects it; existing holds those that
	// existed when a command entered. Only a path every running command
	// protects is read-only to all of them, so only such a path is
	// skipped by the sweep and ignored by the watch.
	protects map[string]int
	existing map[string]bool
	audits   []Event
	skipSeen map[string]bool
}

// errGitRootMoved: a guarded root resolves elsewhere than when the guard
// first pinned it.
var errGitRootMoved = errors.New("the root moved")

// gitLogged is one thing the guard did, numbered so each command's
// settlement reports what happened while it ran.
type gitLogged struct {
	seq int64
	n   *sandbox.Neutralisation
	q   *Moved
}

// Hold is one command's hold on the guard: exactly one of Settle (after
// the command's tree is gone) or Abandon (the command never started)
// ends it.
type Hold struct {
	f      *Fences
	off    bool
	absent []string
	roots  []gitEntry
}

type gitEntry struct {
	r         *gitRoot
	since     int64
	protected []string // the protected paths (relative) this command's policy holds read-only here
	events    uint64   // the watch's change count when the command entered
}

// Enter prepares the guard for a command that may write the roots
// writable, under a policy whose read-only paths are protected, or
// refuses it with a fenced *Error when the workspace cannot be kept
// safe: it is fenced, a sweep after a host crash failed, or the crash
// marker cannot be written.
func (f *Fences) Enter(writable, protected []string) (*Hold, error) {
	g := &Hold{f: f, absent: absentPaths(protected)}
	if f.Test.Off {
		g.off = true
		return g, nil
	}
	for _, w := range writable {
		r := f.rootFor(filepath.Clean(w))
		since, mine, err := r.enter(protected, g.absent)
		r.flushAudits()
		if err != nil {
			g.Abandon()
			return nil, err
		}
		e := gitEntry{r: r, since: since, protected: mine}
		if r.watch != nil {
			e.events, _ = r.watch.count()
		}
		g.roots = append(g.roots, e)
	}
	return g, nil
}

// Abandon ends a hold whose command never started.
func (g *Hold) Abandon() {
	for _, e := range g.roots {
		e.r.mu.Lock()
		e.r.leave(g.absent, e.protected)
		e.r.mu.Unlock()
	}
	g.roots = nil
}

// Settle runs after the command's tree is gone and returns what the
// guard did while it ran: the files it neutralised, and the protected
// paths the command created that it moved aside.
func (g *Hold) Settle() (neutralised []sandbox.Neutralisation, created []Moved) {
	if g.off {
		return nil, nil
	}
	// Absent protected paths beneath a writable root are quarantined by
	// that root's pass below, under its lock; others here.
	var outside []string
	for _, p := range g.absent {
		if g.rootOf(p) == nil {
			outside = append(outside, p)
		}
	}
	for _, q := range quarantineCreated(outside) {
		created = append(created, q)
		g.f.audit(Event{Kind: EventQuarantined, Path: q.Path, Detail: quarantineDetail(q)})
	}
	// A command in whose writable roots the watch saw no change at all
	// (nothing created, written, truncated, renamed, linked or chmodded)
	// left nothing to check: only the log of what was done while it ran
	// is collected.
	// Every change the command made is read from the kernel's queue
	// before anything is decided (else a plant whose events are still
	// queued would be taken for the host's at the next command).
	synced := len(g.roots) == 0 || syncWatch()
	quiet := synced
	for _, e := range g.roots {
		if e.r.watch == nil {
			quiet = false
			continue
		}
		n, ok := e.r.watch.count()
		quiet = quiet && ok && n == e.events
	}
	for _, e := range g.roots {
		r := e.r
		r.mu.Lock()
		if !quiet {
			r.passChanged(true, true, synced)
		}
		for _, l := range r.log {
			if l.seq <= e.since {
				continue
			}
			if l.q != nil {
				created = append(created, *l.q)
			}
			if l.n != nil {
				neutralised = append(neutralised, *l.n)
			}
		}
		r.leave(g.absent, e.protected)
		r.mu.Unlock()
		r.flushAudits()
	}
	g.roots = nil
	return neutralised, created
}

func (g *Hold) rootOf(p string) *gitRoot {
	for _, e := range g.roots {
		if sandbox.Covers(e.r.abs, p) {
			return e.r
		}
	}
	return nil
}

func quarantineDetail(q Moved) string {
	if q.Err != "" {
		return "could not move aside: " + q.Err
	}
	return "moved to " + q.MovedTo
}

// Unfence re-runs the full sweep of workspace (a writable root a fenced
// command ran in) and, only if every neutralisation now succeeds, lets
// commands run there again. A workspace that is not fenced returns nil;
// a failed sweep returns a fenced *Error saying what remains.
func (f *Fences) Unfence(workspace string) error {
	f.mu.Lock()
	r := f.roots[filepath.Clean(workspace)]
	f.mu.Unlock()
	if r == nil {
		return nil
	}
	r.mu.Lock()
	if r.fenced == "" {
		r.mu.Unlock()
		return nil
	}
	r.fenced = ""
	r.passChanged(true, true, syncWatch())
	why := r.fenced
	if why == "" {
		r.audits = append(r.audits, Event{Kind: EventFenced, Workspace: r.abs, Detail: "fence lifted: a full sweep succeeded"})
		if r.active == 0 {
			r.f.clearMarker(r.abs)
		}
	}
	r.mu.Unlock()
	r.flushAudits()
	if why != "" {
		return fenced(why, nil)
	}
	return nil
}

// Fenced reports why workspace is fenced, or "" when it is not.
func (f *Fences) Fenced(workspace string) string {
	f.mu.Lock()
	r := f.roots[filepath.Clean(workspace)]
	f.mu.Unlock()
	if r == nil {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fenced
}

func (f *Fences) rootFor(abs string) *gitRoot {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.roots == nil {
		f.roots = map[string]*gitRoot{}
	}
	r := f.roots[abs]
	if r == nil {
		r = &gitRoot{f: f, abs: abs, absent: map[string]int{}, skipSeen: map[string]bool{},
			protects: map[string]int{}, existing: map[string]bool{}}
		f.roots[abs] = r
	}
	return r
}

// enter registers a command about to run with this root writable and
// returns the log position it starts at and the protected paths
// (relative) its policy holds read-only here.
func (r *gitRoot) enter(protected, absent []string) (since int64, mine []string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fenced != "" {
		return 0, nil, r.fenceError()
	}
	if err := r.pin(); errors.Is(err, errGitRootMoved) {
		r.fenced = fmt.Sprintf("the writable root %s now resolves to another place than %s, where it resolved when the git guard began: "+
			"something replaced it or a directory above it with a link, so the guard checks nothing there and no command runs until the host restores it and calls Unfence (%v)", r.abs, r.resolved, err)
		return 0, nil, r.fenceError()
	} else if err != nil {
		// Nothing to guard: the jail will refuse a missing root.
		return r.seq, nil, nil
	}
	for _, pr := range protected {
		if rel, ok := relUnder(r.abs, pr); ok && !slices.Contains(mine, rel) {
			mine = append(mine, rel)
			r.existing[rel] = !slices.Contains(absent, pr)
		}
	}
	// Only the policies of the commands running now, this one among
	// them, say what is read-only in every jail.
	r.countProtects(mine, 1)
	r.protectedByAll(r.active + 1)
	defer func() {
		if err != nil {
			r.countProtects(mine, -1)
			r.protectedByAll(r.active)
			mine = nil
		}
	}()
	since = r.seq
	if !r.started {
		r.start()
		if r.fenced != "" {
			return 0, nil, r.fenceError()
		}
	} else if r.active == 0 {
		// Between commands, what changed was the host's own doing: the
		// directories the watch saw change are recorded, not acted on
		// (every change queued so far read first, so none of the host's
		// is left to be taken for the command's). A git directory a
		// command's pointer names is judged again as the host's writes
		// left it.
		r.passChanged(false, false, syncWatch())
		r.sweep.begin(true)
		r.sweep.ownedPointers()
		r.finish(false)
	}
	if r.active == 0 {
		if err := r.f.setMarker(r.abs); err != nil {
			return 0, nil, fenced(fmt.Sprintf(
				"the git guard cannot record that a command runs in %s (%v), so a host crash could leave it unchecked; make the user cache directory writable", r.abs, err), err)
		}
	}
	r.active++
	for _, a := range absent {
		if sandbox.Covers(r.abs, a) {
			r.absent[a]++
		}
	}
	return since, mine, nil
}

// pin opens the root when it is not open yet, or again when no command
// runs and the directory at its path was replaced (then the guard starts
// over on the new one).
func (r *gitRoot) pin() error {
	resolved, err := filepath.EvalSymlinks(r.abs)
	if err != nil {
		return err
	}
	if r.resolved == "" {
		r.resolved = resolved
	} else if resolved != r.resolved {
		return fmt.Errorf("%w: it resolves to %s now", errGitRootMoved, resolved)
	}
	if r.root != nil && r.active == 0 && !sameDir(r.root, r.abs) {
		r.root.Close()
		r.root, r.sweep, r.started = nil, nil, false
		if r.watch != nil {
			r.watch.retire()
			r.watch = nil
		}
	}
	if r.root == nil {
		root, err := openDirRoot(r.abs)
		if err != nil {
			return err
		}
		r.root = root
		r.sweep = newGitSweep(root, r.abs)
	}
	r.sweep.test.trustTargets = r.f.Test.TrustTargets
	return nil
}

// Close stops watching every root no command is in: its inotify watches
// are removed and its live goroutine ends. What the guard knows of each
// root stays (the pointers commands made among it), so Fences used after
// Close still guard every root, sweeping one whole at each settlement.
func (f *Fences) Close() {
	f.mu.Lock()
	roots := make([]*gitRoot, 0, len(f.roots))
	for _, r := range f.roots {
		roots = append(roots, r)
	}
	f.mu.Unlock()
	for _, r := range roots {
		r.mu.Lock()
		if r.active == 0 && r.watch != nil {
			r.watch.retire()
			r.watch = nil
			if r.sweep != nil {
				r.sweep.onDir = nil
			}
		}
		r.mu.Unlock()
	}
}

// start begins guarding a pinned root: its watch, and the first sweep,
// which records the baseline (or, when the host stopped while a command
// ran here, acts on everything it finds).
func (r *gitRoot) start() {
	crashed := r.f.markerExists(r.abs)
	if w, err := newGitWatch(); err == nil && !r.f.Test.NoWatch {
		r.watch = w
		r.sweep.onDir = w.add
		go r.live(w)
	}
	if crashed {
		r.audits = append(r.audits, Event{Kind: EventNeutralised, Workspace: r.abs,
			Detail: "a command was running here when the host stopped: sweeping the whole root"})
	}
	r.started = true
	r.sweepAll(crashed)
}

// countProtects adds d to the count of running commands protecting
// each of rels.
func (r *gitRoot) countProtects(rels []string, d int) {
	for _, rel := range rels {
		if r.protects[rel] += d; r.protects[rel] <= 0 {
			delete(r.protects, rel)
			delete(r.existing, rel)
		}
	}
}

// protectedByAll makes the sweep skip, and the watch ignore in-place
// writes to, exactly the protected paths all active running commands
// protect: a path another running command may write is guarded as any.
func (r *gitRoot) protectedByAll(active int) {
	clear(r.sweep.skip)
	ignore := map[string]bool{}
	for rel, n := range r.protects {
		if active > 0 && n >= active {
			r.sweep.skip[rel] = true
			if r.existing[rel] {
				ignore[rel] = true
			}
		}
	}
	if r.watch != nil {
		r.watch.protect(ignore)
	}
}

// leave undoes enter once the command is done (or never ran).
func (r *gitRoot) leave(absent, mine []string) {
	r.countProtects(mine, -1)
	for _, a := range absent {
		if n := r.absent[a]; n > 1 {
			r.absent[a] = n - 1
		} else {
			delete(r.absent, a)
		}
	}
	if r.active--; r.active > 0 {
		r.protectedByAll(r.active)
	} else {
		r.active = 0
		r.log = nil
		if r.fenced == "" {
			r.f.clearMarker(r.abs)
		}
	}
}

// live neutralises changes while commands run, as inotify reports them.
func (r *gitRoot) live(w *gitWatch) {
	for range w.kick {
		r.mu.Lock()
		if r.active > 0 {
			r.pass(true)
		}
		r.mu.Unlock()
		r.flushAudits()
	}
}

// sweepAll walks the whole root: acting (after a crash, or when no watch
// can stand in for one) or recording the baseline.
func (r *gitRoot) sweepAll(act bool) {
	r.sweep.begin(act)
	r.sweep.full()
	r.sweep.knownDirs()
	r.sweep.knownPointers(nil)
	r.finish(act)
}

// pass checks what changed since the last pass (the whole root when the
// watch cannot say) and, when act, neutralises it.
func (r *gitRoot) pass(act bool) { r.passChanged(act, true, true) }

// passChanged is pass; known says whether every known git directory is
// re-checked too (which catches a write through a hard link elsewhere),
// synced whether the watch is known to have read every change queued
// (if not, the root is swept whole).
func (r *gitRoot) passChanged(act, known, synced bool) {
	if r.sweep == nil {
		return
	}
	if r.watch == nil {
		if act {
			r.sweepAll(true)
		}
		return
	}
	dirty, fresh, whole := r.watch.take(synced)
	r.sweep.begin(act)
	if whole {
		r.sweep.full()
	} else {
		for _, d := range fresh {
			r.sweep.walk(d, 0)
		}
		for _, d := range dirty {
			r.sweep.dirty(d)
		}
	}
	if known {
		r.sweep.knownDirs()
		if whole {
			r.sweep.knownPointers(nil)
		} else {
			r.sweep.knownPointers(append(dirty, fresh...))
		}
	}
	r.finish(act)
}

// finish quarantines absent protected paths a command created, logs and
// audits what the pass did, and fences the root on any failure.
func (r *gitRoot) finish(act bool) {
	if act && len(r.absent) > 0 {
		var paths []string
		for p := range r.absent {
			paths = append(paths, p)
		}
		for _, q := range quarantineCreated(paths) {
			if q.Err != "" && errors.Is(statErr(q.Path), fs.ErrNotExist) {
				continue // the command removed it itself meanwhile
			}
			r.seq++
			r.log = append(r.log, gitLogged{seq: r.seq, q: &q})
			r.audits = append(r.audits, Event{Kind: EventQuarantined, Workspace: r.abs, Path: q.Path, Detail: quarantineDetail(q)})
			if q.Err != "" {
				r.sweep.failed = append(r.sweep.failed, q.Path+": "+q.Err)
			}
		}
	}
	for i := range r.sweep.done {
		n := r.sweep.done[i]
		r.seq++
		r.log = append(r.log, gitLogged{seq: r.seq, n: &n})
		r.audits = append(r.audits, Event{Kind: EventNeutralised, Workspace: r.abs, Path: n.Path, Detail: neutralisedDetail(n)})
	}
	if len(r.sweep.failed) > 0 && r.fenced == "" {
		r.fenced = fmt.Sprintf("the broker could not neutralise git configuration a command or a tool left in %s (%s); "+
			"remove or repair what is named, then call Broker.Unfence(%q)", r.abs, strings.Join(r.sweep.failed, "; "), r.abs)
		r.audits = append(r.audits, Event{Kind: EventFenced, Workspace: r.abs, Detail: r.fenced})
	}
	r.sweep.done, r.sweep.failed = nil, nil
}

// sameDir reports whether the directory pinned as root is still the one
// at abs.
func sameDir(root *os.Root, abs string) bool {
	a, err := root.Stat(".")
	if err != nil {
		return false
	}
	b, err := os.Stat(abs)
	return err == nil && os.SameFile(a, b)
}

func statErr(p string) error {
	_, err := os.Lstat(p)
	return err
}

func neutralisedDetail(n sandbox.Neutralisation) string {
	switch {
	case n.Err != "":
		return "could not neutralise: " + n.Err
	case n.MovedTo != "":
		return "moved aside to " + n.MovedTo
	default:
		return "removed " + strings.Join(n.Removed, ", ")
	}
}

func (r *gitRoot) fenceError() error {
	return fenced(r.fenced, nil)
}

// flushAudits hands queued audit events to the host, outside every lock
// of the guard.
func (r *gitRoot) flushAudits() {
	r.mu.Lock()
	a := r.audits
	r.audits = nil
	r.mu.Unlock()
	for _, e := range a {
		r.f.audit(e)
	}
}

// relUnder returns p relative to root, slash-separated, when p lies
// strictly beneath root.
func relUnder(root, p string) (string, bool) {
	if !sandbox.Covers(root, p) {
		return "", false
	}
	rel, err := filepath.Rel(root, filepath.Clean(p))
	if err != nil || rel == "." {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// MarkerDirName is the directory, under the user cache
// directory (os.UserCacheDir) or, when that cannot be created, under the
// temporary directory with the uid appended, where the git guard keeps
// one marker per writable root while a command runs there. A directory
// that is a link or is not the broker's own (mode 0700) is refused.
const MarkerDirName = "loom-git-guard"

func (f *Fences) markerPath(abs string) (string, error) {
	f.mu.Lock()
	dir, ok := f.markerDir, f.markerOK
	f.mu.Unlock()
	if !ok {
		var errs []string
		var candidates []string
		if dir != "" {
			candidates = []string{dir} // set by a test
		} else {
			if base, err := os.UserCacheDir(); err == nil {
				candidates = append(candidates, filepath.Join(base, MarkerDirName))
			}
			candidates = append(candidates, filepath.Join(os.TempDir(), fmt.Sprintf("%s-%d", MarkerDirName, os.Geteuid())))
		}
		dir = ""
		for _, c := range candidates {
			if err := ownPrivateDir(c); err != nil {
				errs = append(errs, err.Error())
				continue
			}
			dir = c
			break
		}
		if dir == "" {
			return "", errors.New(strings.Join(errs, "; "))
		}
		f.mu.Lock()
		f.markerDir, f.markerOK = dir, true
		f.mu.Unlock()
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(dir, hex.EncodeToString(sum[:16])), nil
}

// ownPrivateDir makes dir (mode 0700) if it is missing and checks it is
// a directory, not a link, that only the broker's user can change.
func ownPrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 || !ownedByMe(fi) {
		return fmt.Errorf("%s is not a private directory of this user", dir)
	}
	return nil
}

func (f *Fences) markerExists(abs string) bool {
	p, err := f.markerPath(abs)
	if err != nil {
		return false
	}
	_, err = os.Lstat(p)
	return err == nil
}

func (f *Fences) setMarker(abs string) error {
	p, err := f.markerPath(abs)
	if err != nil {
		return err
	}
	return os.WriteFile(p, []byte(abs+"\n"), 0o600)
}

func (f *Fences) clearMarker(abs string) {
	if p, err := f.markerPath(abs); err == nil {
		os.Remove(p)
	}
}

// absentPaths returns the entries of paths that do not exist.
func absentPaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			out = append(out, p)
		}
	}
	return out
}

// quarantineCreated moves aside every path of absent that now exists.
func quarantineCreated(absent []string) []Moved {
	var out []Moved
	for _, p := range absent {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		q := Moved{Path: p}
		if to, err := quarantineAside(p); err != nil {
			q.Err = err.Error()
		} else {
			q.MovedTo = to
		}
		out = append(out, q)
	}
	return out
}

// Stamp is one writable root's watch and how many changes it had noted
// at one moment (see Stamps).
type Stamp struct {
	r      *gitRoot
	w      *gitWatch
	events uint64
}

// Stamps returns a stamp of the watch of each root of writable, every
// change queued so far noted, or false when one has no standing watch:
// the guard is off, or a root has not been guarded yet, is fenced, or
// is swept whole for want of a watch.
func (f *Fences) Stamps(writable []string) ([]Stamp, bool) {
	if f.Test.Off || !syncWatch() {
		return nil, false
	}
	var out []Stamp
	for _, w := range writable {
		f.mu.Lock()
		r := f.roots[filepath.Clean(w)]
		f.mu.Unlock()
		if r == nil {
			return nil, false
		}
		r.mu.Lock()
		watch, ok := r.watch, r.started && r.fenced == ""
		r.mu.Unlock()
		if watch == nil || !ok {
			return nil, false
		}
		n, standing := watch.count()
		if !standing {
			return nil, false
		}
		out = append(out, Stamp{r: r, w: watch, events: n})
	}
	return out, true
}

// Unchanged reports whether the stamped root is still watched by the
// same watch, which still stands and has noted no change since. Call
// Sync first, so every change queued is noted.
func (s Stamp) Unchanged() bool {
	s.r.mu.Lock()
	same := s.r.watch == s.w // not replaced by a watch of another directory
	s.r.mu.Unlock()
	n, standing := s.w.count()
	return same && standing && n == s.events
}

// Sync returns once every change the kernel queued before the call has
// been noted by the guard's watches; false when that cannot be told (no
// inotify, or reading it failed).
func Sync() bool { return syncWatch() }
