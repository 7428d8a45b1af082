package tool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agentloom/loom/sandbox"
)

// maxLinkFollows bounds the symlinks followed while resolving one path.
const maxLinkFollows = 40

// maxPathBytes bounds a path argument: the kernel's PATH_MAX, past which
// no system call would accept it anyway.
const maxPathBytes = 4096

// PathError is a refused path; its Code is one of the path codes
// (CodeOutsideRoots through CodeInvalidPath).
type PathError struct {
	Code  Code
	Path  string // the path as the model gave it
	Entry string // the protected entry or root involved, or the resolved path
	// Accepted lists the roots a path of this kind would be accepted
	// under (CodeOutsideRoots, CodeOutsideWritableRoots).
	Accepted []string
	// SystemRoot is the base policy's system root the refused path lies
	// under, if any: one the jail reads, never the file tools.
	SystemRoot string
	// Write is set when the path was refused for writing, whose roots are
	// the writable ones.
	Write bool
	Err   error // an underlying filesystem error, if any

	// answer is how a file tool's request for the path was settled
	// (askAccess); it chooses the remedy the text names.
	answer accessAnswer
}

// ErrorCode returns e.Code as a string (see CodedError).
func (e *PathError) ErrorCode() string { return string(e.Code) }

func (e *PathError) Error() string {
	switch e.Code {
	case CodeOutsideRoots:
		if e.Write {
			return fmt.Sprintf("permission denied: %s resolves to %s, outside the workspace and every writable root; the file tools write only under %s. %s", e.Path, e.Entry, rootList(e.Accepted), e.remedy())
		}
		msg := fmt.Sprintf("permission denied: %s resolves to %s, outside the workspace and every readable root; the file tools read only under %s", e.Path, e.Entry, rootList(e.Accepted))
		if e.SystemRoot != "" {
			msg += fmt.Sprintf(". %s is a system root: jailed commands read it to run programs, and the file tools never do without an approval", e.SystemRoot)
		}
		return msg + ". " + e.remedy()
	case CodeOutsideWritableRoots:
		return fmt.Sprintf("%s resolves to %s, which is not a directory bash could run in: a shell directory must lie under the workspace or another writable root (%s)", e.Path, e.Entry, rootList(e.Accepted))
	case CodeNotADirectory:
		if e.Err != nil {
			return fmt.Sprintf("%s is not an existing directory (%v); a shell directory must be one, under %s", e.Path, e.Err, rootList(e.Accepted))
		}
		return fmt.Sprintf("%s is not an existing directory; a shell directory must be one, under %s", e.Path, rootList(e.Accepted))
	case CodeProtectedPath:
		return fmt.Sprintf("permission denied: %s is under the protected entry %s; no grant lifts this", e.Path, e.Entry)
	case CodeRootChanged:
		return fmt.Sprintf("permission denied: the root %s now resolves to %s, not to %s as when this session began: something (a running command?) replaced it or a directory above it with a link or another directory, so the file tools use nothing under it until the host restores it", e.Path, e.Entry, rootList(e.Accepted))
	case CodeProtectionMisconfigured:
		return fmt.Sprintf("permission denied: the host's protected list holds the relative entry %q, which cannot be applied, so every path is refused until the host fixes it", e.Entry)
	case CodeJailReplaced:
		if e.Entry == sandbox.ScratchDir {
			return fmt.Sprintf("permission denied: %s is under %s, outside this session's roots. Every jailed command has a private %s of its own, so a command sees the host's copy only where it names it in permissions.readable_roots and the operator approves. %s", e.Path, e.Entry, e.Entry, e.remedy())
		}
		return fmt.Sprintf("permission denied: %s is under %s, which jailed commands see replaced by their own; read the jail's copy with bash", e.Path, e.Entry)
	case CodeBlobStore:
		return fmt.Sprintf("permission denied: %s is in the blob store (%s) but is not a blob; read a blob by the exact path an answer named", e.Path, e.Entry)
	case CodeTooManyLinks:
		return fmt.Sprintf("%s: more than %d symbolic links", e.Path, maxLinkFollows)
	default:
		if e.Err != nil {
			return fmt.Sprintf("invalid path %q: %v", e.Path, e.Err)
		}
		return fmt.Sprintf("invalid path %q", e.Path)
	}
}

// remedy is the sentence of an outside_roots or jail_replaced refusal
// naming what would give access, by how the host answered (answer).
func (e *PathError) remedy() string {
	field, kind, verb, done := "permissions.readable_roots", "readable", "read", "read"
	if e.Write {
		field, kind, verb, done = "permissions.writable_roots", "writable", "write", "written"
	}
	switch e.answer {
	case noOneToAsk:
		return fmt.Sprintf("This host has no operator to approve more access, so neither the file tools nor a bash command's %s can be granted it; ask the user to add a directory holding it to the session's %s roots, or do without it", field, kind)
	case declined:
		return fmt.Sprintf("The operator was asked to let this call %s exactly this file and did not approve it; nothing was %s. Do without it, or ask the user", verb, done)
	case grantedShort:
		return fmt.Sprintf("The operator answered without granting %s access to this file, so nothing was done; ask the user", verb)
	case neverAsked:
		return fmt.Sprintf("The file tools never ask to %s a path inside a git directory, a file git takes as its own, the harness's own state, /proc or /dev, so no operator was asked; do without it, or ask the user", verb)
	}
	if e.Write {
		return "Write under those roots instead; fs_write and fs_edit ask the operator for a file outside the session's roots themselves where this host lets them, and where this host offers bash, a command may ask for another directory with permissions.writable_roots, which the operator decides"
	}
	return "fs_read asks the operator for a file outside the session's roots itself where this host lets it, and where this host offers bash, a command may ask for another directory with permissions.readable_roots, which the operator decides"
}

// rootList renders roots for a refusal.
func rootList(roots []string) string {
	if len(roots) == 0 {
		return "no root at all"
	}
	return strings.Join(roots, ", ")
}

func (e *PathError) Unwrap() error { return e.Err }

// ResolveRead authorizes path for reading and returns the resolved
// absolute path. Readable: the workspace, the base policy's readable and
// writable roots, this call's granted roots, and the blob store — never
// the base's SystemRoots, which are the jail's alone. Refused: protected
// entries (lexical or resolved form), and /proc, /dev and /tmp unless
// the workspace or a readable root covers the path.
func (c *Call) ResolveRead(path string) (string, error) {
	lexical, resolved, err := c.resolve(path)
	if err != nil {
		return "", err
	}
	// The store resolved its root when it opened; resolving it again
	// here would let a symlink swapped in since redirect the allowance.
	// Only a blob itself is readable, by its exact path: never the root or
	// a shard (a search there would read every session's output), never a
	// staged file. A ref is unguessable, so holding one means it was shown.
	if c.Blobs != nil && c.Blobs.Root() != "" && sandbox.Covers(filepath.Clean(c.Blobs.Root()), resolved) {
		if _, ok := c.Blobs.RefOf(resolved); ok {
			return resolved, nil
		}
		return "", &PathError{Code: CodeBlobStore, Path: path, Entry: c.Blobs.Root()}
	}
	if err := c.checkProtected(path, lexical, resolved); err != nil {
		return "", err
	}
	accepted, changed := c.resolvedRoots(append([]string{c.Workspace}, c.readableRoots()...))
	replaced := jailReplacedRoot(resolved)
	for _, rr := range accepted {
		if !sandbox.Covers(rr, resolved) {
			continue
		}
		// The jail shows its own /proc, /dev and /tmp, so a root above one
		// of them ("/") does not make the host's copy readable here: that
		// would read the host process's own state. A root inside one (a
		// workspace under /tmp) does.
		if replaced != "" && !sandbox.Covers(replaced, rr) {
			return "", &PathError{Code: CodeJailReplaced, Path: path, Entry: replaced}
		}
		return resolved, nil
	}
	if err := changedRootOver(lexical, changed); err != nil {
		return "", err
	}
	if replaced != "" {
		return "", &PathError{Code: CodeJailReplaced, Path: path, Entry: replaced}
	}
	pe := &PathError{Code: CodeOutsideRoots, Path: path, Entry: resolved, Accepted: accepted}
	for _, sr := range c.Base.SystemRoots {
		if sandbox.Covers(filepath.Clean(sr), resolved) || sandbox.Covers(filepath.Clean(sr), lexical) {
			pe.SystemRoot = sr
			break
		}
	}
	return "", pe
}

// jailReplacedRoot returns the entry of sandbox.ReplacedRoots covering
// p, or "".
func jailReplacedRoot(p string) string {
	for _, r := range sandbox.ReplacedRoots() {
		if sandbox.Covers(r, p) {
			return r
		}
	}
	return ""
}

// ResolveWrite authorizes path for writing and returns the resolved
// absolute path. Writable: the workspace and the writable roots of the
// base policy and this call's grants. Refused: protected entries, the blob
// store, and anything a symlink carries outside those roots.
func (c *Call) ResolveWrite(path string) (string, error) {
	lexical, resolved, err := c.resolve(path)
	if err != nil {
		return "", err
	}
	if err := c.checkProtected(path, lexical, resolved); err != nil {
		return "", err
	}
	if c.Blobs != nil {
		if root, err := resolveReal(c.Blobs.Root()); err == nil && sandbox.Covers(root, resolved) {
			return "", &PathError{Code: CodeProtectedPath, Path: path, Entry: root}
		}
	}
	roots, changed := c.writableRoots()
	for _, rr := range roots {
		if sandbox.Covers(rr, resolved) {
			return resolved, nil
		}
	}
	if err := changedRootOver(lexical, changed); err != nil {
		return "", err
	}
	return "", &PathError{Code: CodeOutsideRoots, Path: path, Entry: resolved, Accepted: roots, Write: true}
}

// ResolveShellDir authorizes path as a directory bash commands run in
// and returns it resolved: an existing directory (no link followed to
// check it) under the workspace or a writable root of the base policy or
// this call's grants, outside protected entries. A relative path is
// relative to the workspace. bash's cwd and working_directory both ask
// this one predicate, so a directory working_directory selects is one
// bash accepts. Refusals are *PathError with codes outside_writable_roots
// and not_a_directory (and the resolver's own).
func (c *Call) ResolveShellDir(path string) (string, error) {
	lexical, resolved, err := c.resolve(path)
	if err != nil {
		return "", err
	}
	if err := c.checkProtected(path, lexical, resolved); err != nil {
		return "", err
	}
	roots, changed := c.writableRoots()
	inside := false
	for _, rr := range roots {
		inside = inside || sandbox.Covers(rr, resolved)
	}
	if err := changedRootOver(lexical, changed); err != nil && !inside {
		return "", err
	}
	if !inside {
		return "", &PathError{Code: CodeOutsideWritableRoots, Path: path, Entry: resolved, Accepted: roots}
	}
	if err := isDir(resolved); err != nil {
		return "", &PathError{Code: CodeNotADirectory, Path: path, Entry: resolved, Accepted: roots, Err: err}
	}
	return resolved, nil
}

// writableRoots returns the resolved workspace and writable roots of the
// base policy and this call's grants, each checked against the session's
// pins; a root that cannot be resolved is left out, and one that changed
// is returned apart.
func (c *Call) writableRoots() (roots []string, changed []*PathError) {
	named := append([]string{c.Workspace}, c.Base.WritableRoots...)
	for _, g := range c.Grants {
		if g.Kind == sandbox.GrantWritableRoot {
			named = append(named, g.Path)
		}
	}
	return c.resolvedRoots(named)
}

// addRoot appends root to roots unless one of them already covers it.
func addRoot(roots []string, root string) []string {
	for _, r := range roots {
		if sandbox.Covers(r, root) {
			return roots
		}
	}
	return append(roots, root)
}

// readableRoots returns the roots reads may use besides the workspace:
// the base's readable and writable roots and this call's root grants.
// The base's SystemRoots are deliberately absent.
func (c *Call) readableRoots() []string {
	roots := append(append([]string{}, c.Base.ReadableRoots...), c.Base.WritableRoots...)
	for _, g := range c.Grants {
		if g.Kind == sandbox.GrantReadableRoot || g.Kind == sandbox.GrantWritableRoot {
			roots = append(roots, g.Path)
		}
	}
	return roots
}

// resolve returns the lexical (cleaned, absolute) and resolved forms of path.
func (c *Call) resolve(path string) (lexical, resolved string, err error) {
	if path == "" || strings.ContainsRune(path, 0) {
		return "", "", &PathError{Code: CodeInvalidPath, Path: path, Err: errors.New("a path must be non-empty and free of NUL bytes")}
	}
	if len(path) > maxPathBytes {
		return "", "", &PathError{Code: CodePathTooLong, Path: path[:64] + "…", Err: fmt.Errorf("a path is at most %d bytes; this one is %d", maxPathBytes, len(path))}
	}
	if !filepath.IsAbs(c.Workspace) {
		return "", "", &PathError{Code: CodeInvalidPath, Path: path, Err: fmt.Errorf("the host's workspace %q is not absolute", c.Workspace)}
	}
	raw := path
	if !filepath.IsAbs(raw) {
		raw = c.Workspace + "/" + raw
	}
	// Resolution walks the path as written, so "link/.." means the parent
	// of the link's target, as it does to the kernel; the cleaned form is
	// kept for matching protected entries lexically.
	lexical = filepath.Clean(raw)
	resolved, err = resolveReal(raw)
	if err != nil {
		var pe *PathError
		if errors.As(err, &pe) {
			pe.Path = path
			return "", "", pe
		}
		return "", "", &PathError{Code: CodeInvalidPath, Path: path, Err: err}
	}
	return lexical, resolved, nil
}

// checkProtected refuses lexical/resolved under any protected entry, and
// refuses everything when an entry is relative.
func (c *Call) checkProtected(path, lexical, resolved string) error {
	for _, e := range c.Base.Protected {
		if !filepath.IsAbs(e) {
			return &PathError{Code: CodeProtectionMisconfigured, Path: path, Entry: e}
		}
	}
	for _, e := range c.Base.Protected {
		e = filepath.Clean(e)
		re, err := resolveReal(e)
		if err != nil {
			re = e
		}
		if sandbox.Covers(e, lexical) || sandbox.Covers(e, resolved) || sandbox.Covers(re, lexical) || sandbox.Covers(re, resolved) {
			return &PathError{Code: CodeProtectedPath, Path: path, Entry: e}
		}
	}
	return nil
}

// resolveReal resolves every symlink in the absolute path p, one
// component at a time, following at most maxLinkFollows links. Components
// that do not exist are kept lexically, so a path to a file not yet
// created resolves to where it would be created.
func resolveReal(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", &PathError{Code: CodeInvalidPath, Path: p, Err: errors.New("not absolute")}
	}
	rest := strings.Split(p, "/")[1:]
	done := "/"
	follows := 0
	for len(rest) > 0 {
		comp := rest[0]
		rest = rest[1:]
		switch comp {
		case "", ".":
			continue
		case "..":
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, comp)
		fi, err := os.Lstat(next)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				// This component does not exist yet: keep it as written
				// and go on, since a later ".." climbs back into real
				// directories whose symlinks must still be followed.
				done = next
				continue
			}
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		follows++
		if follows > maxLinkFollows {
			return "", &PathError{Code: CodeTooManyLinks, Path: p}
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			done = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return done, nil
}
