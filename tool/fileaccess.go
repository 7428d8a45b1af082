package tool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentloom/loom/internal/gitguard"
	"github.com/agentloom/loom/sandbox"
)

// A file tool whose target lies outside what the session grants asks the
// host for it, through the escalation bash uses (Call.Raise): one
// refusal naming exactly the target, read access for fs_read, write
// access for fs_write and fs_edit. It asks at most once per call and
// never for a protected entry: a path under Base.Protected, inside a git
// directory (or, for a write, a file git takes as a control file), or in
// one of the harness's own stores (see harnessStores). Those stay refused
// as the resolver refused them.
//
// An approval is the call's alone. The tool goes on with the one target
// it raised, opened as every resolved path is (component by component
// from "/", no link followed, non-blocking, regular files only); nothing
// is added to the Call's grants or to the session's pins, so the next
// call, and any other path, is refused again.

// access is what a file tool wants of its target.
type access int

const (
	accessRead access = iota
	accessWrite
)

// accessAnswer is how the host settled the access a file tool asked for;
// it chooses the remedy a PathError names.
type accessAnswer int

const (
	// notAsked: the refusal is the resolver's alone (grep, a host's own
	// call of ResolveRead or ResolveWrite).
	notAsked accessAnswer = iota
	// noOneToAsk: the call has no escalation hook (Call.RaiseRefusal).
	noOneToAsk
	// declined: the host settled the raise.
	declined
	// grantedShort: the host resumed without a grant covering the target.
	grantedShort
	// neverAsked: the target is one no file tool asks for (mayAsk).
	neverAsked
)

// askAccess asks the host for access to the target of arg, which the
// resolver refused with refused, and returns the target (resolved) when
// the host approved it for this call. A refusal it may not raise is
// returned as it is; one it raised and the host did not approve comes
// back as the resolver's *PathError, saying so. subject, when non-nil, is
// what the grant would act on; its Path is set to the target.
func (c *Call) askAccess(ctx context.Context, toolName, arg string, want access, refused error, subject *Subject) (string, error) {
	var pe *PathError
	if !errors.As(refused, &pe) || !raisable(pe, want) {
		return "", refused
	}
	lexical, target, err := c.resolve(arg)
	if err != nil {
		return "", err
	}
	if err := c.checkProtected(arg, lexical, target); err != nil {
		return "", err
	}
	answered := func(a accessAnswer) error {
		p := *pe
		p.answer = a
		return &p
	}
	if !c.mayAsk(lexical, target, want) {
		return "", answered(neverAsked)
	}
	if c.RaiseRefusal == nil {
		return "", answered(noOneToAsk)
	}
	grant := sandbox.Grant{Kind: sandbox.GrantReadableRoot, Path: target}
	verb, roots := "read", "readable"
	if want == accessWrite {
		grant.Kind, verb, roots = sandbox.GrantWritableRoot, "write", "writable"
	}
	if subject != nil {
		subject.Path = target
	}
	esc := c.Raise(ctx, RaisedRefusal{
		Tool: toolName,
		Denial: &sandbox.Denial{
			Code:   sandbox.DenialRequirementsNotCovered,
			Reason: fmt.Sprintf("%s would %s the file %s, outside the workspace and every %s root of this session; an approval lets this one call %s this one file", toolName, verb, target, roots, verb),
			Wanted: []sandbox.Grant{grant},
		},
		Subject: subject,
	})
	switch {
	case !esc.Resume:
		return "", answered(declined)
	case !grantsCover(esc.Grants, grant):
		return "", answered(grantedShort)
	}
	return target, nil
}

// raisable reports whether a resolver's refusal is one a file tool may
// ask the host to lift: a path outside every root, or, for a read, one
// under the host's ScratchDir, which a jailed command sees replaced by
// its own (the host's /proc and /dev are never read).
func raisable(pe *PathError, want access) bool {
	switch pe.Code {
	case CodeOutsideRoots:
		return true
	case CodeJailReplaced:
		return want == accessRead && pe.Entry == sandbox.ScratchDir
	}
	return false
}

// mayAsk reports whether a target (lexical and resolved) outside the
// session's roots may be raised: not in a git directory, not a file git
// takes as a control file or its own configuration (for a write), not
// in a harness store, not under /proc or /dev.
func (c *Call) mayAsk(lexical, target string, want access) bool {
	for _, p := range []string{lexical, target} {
		for comp := range strings.SplitSeq(p, "/") {
			if isDotGitName(comp) {
				return false
			}
		}
		if want == accessWrite && (gitguard.ControlName(p) || gitConfigName(filepath.Base(p))) {
			return false
		}
		if r := jailReplacedRoot(p); r != "" && r != sandbox.ScratchDir {
			return false
		}
		for _, s := range c.harnessStores() {
			if sandbox.Covers(s, p) {
				return false
			}
		}
	}
	return true
}

// gitConfigName reports whether name is that of git's configuration
// outside a repository (~/.gitconfig, /etc/gitconfig), which git reads
// on the host wherever it runs and whose settings run commands.
func gitConfigName(name string) bool {
	n := strings.ToLower(name)
	return n == ".gitconfig" || n == "gitconfig"
}

// harnessStores lists the directories the harness keeps its own state
// in, resolved where they resolve: the call's blob store and, under the
// user cache directory, Loom's directory (the default blob store,
// history indexes and session scratch directories) and the git guard's
// markers (there or in the temporary directory).
func (c *Call) harnessStores() []string {
	var dirs []string
	if c.Blobs != nil && c.Blobs.Root() != "" {
		dirs = append(dirs, c.Blobs.Root())
	}
	if base, err := os.UserCacheDir(); err == nil {
		dirs = append(dirs, filepath.Join(base, "loom"), filepath.Join(base, gitguard.MarkerDirName))
	}
	dirs = append(dirs, filepath.Join(os.TempDir(), fmt.Sprintf("%s-%d", gitguard.MarkerDirName, os.Geteuid())))
	out := make([]string, 0, 2*len(dirs))
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			continue
		}
		out = append(out, filepath.Clean(d))
		if r, err := resolveReal(d); err == nil && r != filepath.Clean(d) {
			out = append(out, r)
		}
	}
	return out
}

// grantsCover reports whether one of grants, valid, covers want: a
// root grant of want's kind (for a read, either root kind) at or above
// want's path.
func grantsCover(grants []sandbox.Grant, want sandbox.Grant) bool {
	for i, g := range grants {
		if sandbox.ValidateGrant(fmt.Sprintf("grants[%d]", i), g) != nil {
			continue
		}
		kindOK := g.Kind == want.Kind || (want.Kind == sandbox.GrantReadableRoot && g.Kind == sandbox.GrantWritableRoot)
		if kindOK && sandbox.Covers(g.Path, want.Path) {
			return true
		}
	}
	return false
}
