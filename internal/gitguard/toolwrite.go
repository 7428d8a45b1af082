package gitguard

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentloom/loom/sandbox"
)

// Tool writes and the git guard.
//
// The guard takes what changes in a writable root between commands for
// the host's own doing: it records it as the baseline and does not act.
// A harness-side tool (fs_write, fs_edit) writing on a model's behalf
// also writes between commands, from the host's process, so each such
// write is reported to the guard with ToolWrite, which checks at
// once what the write can have armed and remembers the control files the
// tool wrote as the model's, so no later pass records them as the host's.

// MaxToolWriteTaints bounds how many control-file paths written by
// tools (files named config, config.worktree, commondir or .git, and
// files in a directory named hooks) the guard of one writable root
// remembers as the model's while no git directory holds them yet. Past
// it, entries whose file is gone or was rewritten since are dropped;
// when none is, the root is fenced rather than forget one.
const MaxToolWriteTaints = 1 << 14

// gitToolWrite is the write one tool-write pass checks.
type gitToolWrite struct {
	rel string // the written file, relative to the root
	// fresh: the guard started on the root in this very call, so no git
	// directory it holds is known to be the host's from before.
	fresh bool
	// aimed: the pass is following the pointer file the tool wrote.
	aimed bool
}

// ToolWrite is called after a harness-side tool wrote the file at path
// (absolute, beneath the writable root root, in the form the policy
// names the root) on a model's behalf, outside any jail. When it returns
// nil, no git configuration that write created or changed can make the
// host's git run a program: every git directory the written path lies in
// or beneath, that an ancestor's .git names, or that the written file
// points at (a .git or commondir file) has been checked, entries off
// the allowlist removed from its configs and hooks moved aside, as after a
// command, and a pointer the write made or re-aimed that cannot be
// followed with certainty, that names a directory outside root, or that
// names an armed git directory has been moved aside (see pointer.go).
// It acts on:
//   - the written file, if it is a git control file, whatever the guard
//     recorded of the path before;
//   - every control file of a git directory the write made one (or that
//     the written pointer names) and that the guard did not know as one
//     before (for a root it had never seen, every such directory);
//   - while a command runs in the root, whatever changed, as its live
//     passes do.
//
// A control file written outside any git directory is remembered (see
// MaxToolWriteTaints) and acted on by whichever later pass, between
// commands or during one, first finds a git directory around it, in
// whatever order the rest of the repository appears.
//
// The work is bounded by the written path's depth: the path's ancestors
// up to the root and the git directories they are or point at, never a
// sweep of the root, except once, when the guard had never run in root:
// then its first sweep records the baseline before the write is
// attributed. The result lists what was neutralised. When something
// cannot be, the root is fenced and the error is a fenced *Error; a
// path not beneath root is an *Error that is not.
func (f *Fences) ToolWrite(root, path string) ([]sandbox.Neutralisation, error) {
	root, rel, err := toolWritten(root, path)
	if err != nil {
		return nil, err
	}
	if f.Test.Off {
		return nil, nil
	}
	r := f.rootFor(root)
	r.mu.Lock()
	done, err := r.toolWrite(rel)
	r.mu.Unlock()
	r.flushAudits()
	return done, err
}

// toolWritten returns root cleaned and path relative to it, or an
// *Error when path does not lie beneath the absolute root.
func toolWritten(root, path string) (string, string, error) {
	root = filepath.Clean(root)
	rel, ok := relUnder(root, path)
	if !filepath.IsAbs(root) || !ok {
		return "", "", &Error{Msg: fmt.Sprintf("the git guard was told of a write to %s, which is not beneath the writable root %s", path, root)}
	}
	return root, rel, nil
}

// toolWrite is ToolWrite on one root, under its lock.
func (r *gitRoot) toolWrite(rel string) ([]sandbox.Neutralisation, error) {
	if err := r.pin(); err != nil {
		r.fence(fmt.Sprintf("the git guard cannot open %s to check a file a tool wrote there (%v); call Broker.Unfence(%q) once it opens", r.abs, err, r.abs))
		return nil, r.fenceError()
	}
	first := r.seq
	r.taint(rel)
	fresh := !r.started
	if fresh {
		r.start()
	}
	act := r.active > 0
	r.sweep.begin(act)
	r.sweep.tool = &gitToolWrite{rel: rel, fresh: fresh}
	r.sweep.ancestors(rel)
	r.sweep.tool, r.sweep.forced = nil, nil
	r.finish(act)
	var done []sandbox.Neutralisation
	for _, l := range r.log {
		if l.seq > first && l.n != nil {
			done = append(done, *l.n)
		}
	}
	if r.active == 0 {
		r.log = nil // no command's settlement will collect it
	}
	if r.fenced != "" {
		return done, r.fenceError()
	}
	return done, nil
}

// taint remembers rel, when it is a control file, as the model's (see
// gitSweep.tainted), fencing the root when the bound is reached.
func (r *gitRoot) taint(rel string) {
	s := r.sweep
	if !ControlName(rel) {
		return
	}
	fi, err := s.root.Lstat(rel)
	if err != nil {
		return // gone already: nothing there to arm anything
	}
	delete(s.known, rel)
	if _, ok := s.tainted[rel]; !ok && len(s.tainted) >= MaxToolWriteTaints {
		for p, fp := range s.tainted {
			if cur, err := s.root.Lstat(p); err != nil || fingerprintOf(cur) != fp {
				delete(s.tainted, p)
			}
		}
		if len(s.tainted) >= MaxToolWriteTaints {
			r.fence(fmt.Sprintf("tools wrote more than %d git control files (config, hooks, pointers) in %s outside any git directory; "+
				"remove the ones that are not needed, then call Broker.Unfence(%q)", MaxToolWriteTaints, r.abs, r.abs))
			return
		}
	}
	s.tainted[rel] = fingerprintOf(fi)
}

// fence fences the root for why, unless it is fenced already.
func (r *gitRoot) fence(why string) {
	if r.fenced == "" {
		r.fenced = why
		r.audits = append(r.audits, Event{Kind: EventFenced, Workspace: r.abs, Detail: why})
	}
}

// ancestors checks every directory from rel's parent up to the root:
// each one that is a git directory, and the git directory its .git entry
// is or names.
func (s *gitSweep) ancestors(rel string) {
	for d := path.Dir(rel); ; d = path.Dir(d) {
		if s.isGitDir(d) {
			s.gitDir(d, 0)
		}
		s.dotGit(d)
		if d == "." {
			return
		}
	}
}

// forceIfMade marks the git directory rel as the tool write's own when
// the write lies in it (or is the pointer naming it) and the guard did
// not know it as a git directory before.
func (s *gitSweep) forceIfMade(rel string) {
	t := s.tool
	if t == nil || (!t.fresh && s.gitdirs[rel]) {
		return
	}
	if t.aimed || rel == "." || strings.HasPrefix(t.rel, rel+"/") {
		s.forced = append(s.forced, rel)
	}
}

// forcedPath reports whether rel lies in a git directory the current
// tool write made (see forceIfMade).
func (s *gitSweep) forcedPath(rel string) bool {
	for _, f := range s.forced {
		switch {
		case f == ".":
			// The root itself is the git directory: its own control
			// files, not every repository beneath it.
			first, _, _ := strings.Cut(rel, "/")
			switch first {
			case "config", "config.worktree", "commondir", "hooks", "modules", "worktrees":
				return true
			}
		case rel == f || strings.HasPrefix(rel, f+"/"):
			return true
		}
	}
	return false
}

// taintedIn reports whether a file a tool wrote lies directly in dir.
func (s *gitSweep) taintedIn(dir string) bool {
	for p := range s.tainted {
		if path.Dir(p) == dir {
			return true
		}
	}
	return false
}

// ControlName reports whether a file at rel (slash-separated) is one
// git can take as a control file that runs or re-aims something,
// wherever it lies: a config, a pointer, or a hook.
func ControlName(rel string) bool {
	switch strings.ToLower(path.Base(rel)) {
	case "config", "config.worktree", "commondir", ".git":
		return true
	}
	return strings.ToLower(path.Base(path.Dir(rel))) == "hooks"
}

// ToolWriteAlone is ToolWrite without a guard (for a host that runs no
// commands, whose own git may still meet the workspace): one pass with
// no memory of what came before. The written file and every git
// directory containing it are acted on; a failure is reported but
// fences nothing, as nothing runs there.
func ToolWriteAlone(root, path string) ([]sandbox.Neutralisation, error) {
	root, rel, err := toolWritten(root, path)
	if err != nil {
		return nil, err
	}
	rt, err := openDirRoot(root)
	if err != nil {
		return nil, fenced(fmt.Sprintf("the git guard cannot open %s to check a file a tool wrote there: %v", root, err), err)
	}
	defer rt.Close()
	s := newGitSweep(rt, root)
	if ControlName(rel) {
		if fi, err := rt.Lstat(rel); err == nil {
			s.tainted[rel] = fingerprintOf(fi)
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, fenced(fmt.Sprintf("the git guard cannot check %s: %v", filepath.Join(root, rel), err), err)
		}
	}
	s.begin(false)
	s.tool = &gitToolWrite{rel: rel, fresh: true}
	s.ancestors(rel)
	if len(s.failed) > 0 {
		return s.done, fenced(fmt.Sprintf(
			"the git guard could not neutralise git configuration a tool wrote in %s (%s); remove or repair what is named before the host runs git there",
			root, strings.Join(s.failed, "; ")), nil)
	}
	return s.done, nil
}
