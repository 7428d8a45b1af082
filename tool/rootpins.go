package tool

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/agentloom/loom/sandbox"
)

// A root is a directory the file tools read or write under: the
// workspace, the base policy's readable and writable roots, a call's
// granted roots. A jailed command that may write the directory above a
// root can rename the root away and leave a link in its place; resolving
// the root again would then follow the link and authorise whatever it
// points at (the whole host, for a link to /). So a session pins each
// root the first time it meets it — where it resolves to and which
// directory (device and inode) is there — and every later call that
// finds the root resolving elsewhere, or another directory in its place,
// refuses to use it with CodeRootChanged.
//
// Pins belong to a session template: At pins the template's roots before
// the first call it makes, and every Call At returns shares them. A Call
// a host builds by hand, not through At, pins only for itself.

// rootPins holds a session's pinned roots, by the root as written.
type rootPins struct {
	mu   sync.Mutex
	pins map[string]rootPin
}

// rootPin is what a root was when the session first met it.
type rootPin struct {
	resolved string
	dev, ino uint64 // zero while the root did not exist yet
}

// pinsMu guards a template's pins field, set once by At.
var pinsMu sync.Mutex

// copyPinned returns a copy of the template c sharing c's pins, creating
// them (and pinning c's own roots) the first time.
func (c *Call) copyPinned() Call {
	pinsMu.Lock()
	defer pinsMu.Unlock()
	if c.pins == nil {
		p := &rootPins{pins: map[string]rootPin{}}
		for _, r := range c.declaredRoots() {
			p.check(r)
		}
		c.pins = p
	}
	return *c
}

// declaredRoots lists the roots the template names: the workspace, the
// base's readable and writable roots and the session scratch.
func (c *Call) declaredRoots() []string {
	roots := append([]string{c.Workspace}, c.Base.ReadableRoots...)
	roots = append(roots, c.Base.WritableRoots...)
	if c.TempDir != "" && filepath.IsAbs(c.TempDir) {
		roots = append(roots, c.TempDir)
	}
	return roots
}

// rootChangedError is the refusal of a root that is no longer the
// directory the session pinned.
func rootChangedError(root string, was rootPin, now string) *PathError {
	return &PathError{Code: CodeRootChanged, Path: root, Entry: now, Accepted: []string{was.resolved}}
}

// check resolves root and compares it with its pin, pinning it when it
// is new. It returns the resolved root, or a *PathError coded
// CodeRootChanged when the root now resolves elsewhere or another
// directory stands where it was.
func (p *rootPins) check(root string) (string, error) {
	root = filepath.Clean(root)
	resolved, err := resolveReal(root)
	if err != nil {
		return "", err
	}
	now := rootPin{resolved: resolved}
	if st, err := os.Lstat(resolved); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			now.dev, now.ino = uint64(sys.Dev), uint64(sys.Ino)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	was, ok := p.pins[root]
	switch {
	case !ok:
		p.pins[root] = now
	case was.resolved != now.resolved:
		return "", rootChangedError(root, was, now.resolved)
	case was.ino == 0 && now.ino != 0:
		// Created since it was pinned, where it was to be.
		p.pins[root] = now
	case was.ino != 0 && (was.dev != now.dev || was.ino != now.ino):
		return "", rootChangedError(root, was, fmt.Sprintf("%s, another directory", now.resolved))
	}
	return resolved, nil
}

// root resolves one of the call's roots against the session's pins (a
// Call made by At); a Call made by hand has none, and its roots are
// resolved as they are now.
func (c *Call) root(r string) (string, error) {
	if c.pins == nil {
		return resolveReal(filepath.Clean(r))
	}
	return c.pins.check(r)
}

// resolvedRoots resolves each root through the pins, keeping those that
// resolve (one covering another counts once) and returning separately
// the refusals of the roots that changed.
func (c *Call) resolvedRoots(roots []string) (ok []string, changed []*PathError) {
	for _, r := range roots {
		rr, err := c.root(r)
		if err == nil {
			ok = addRoot(ok, rr)
			continue
		}
		if pe, isPE := err.(*PathError); isPE && pe.Code == CodeRootChanged {
			changed = append(changed, pe)
		}
	}
	return ok, changed
}

// changedRootOver returns the refusal of a changed root the lexical
// path lies under, or nil: a path under a root that changed is refused
// as that, not as a path outside every root.
func changedRootOver(lexical string, changed []*PathError) error {
	for _, pe := range changed {
		if sandbox.Covers(pe.Path, lexical) {
			return pe
		}
	}
	return nil
}
