package tool

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/agentloom/loom/hashline"
	"github.com/agentloom/loom/sandbox"
)

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content" jsonschema:"the whole new content"`
}

// WriteDetails is the Details of a successful fs_write.
type WriteDetails struct {
	Path    string `json:"path"`
	Bytes   int    `json:"bytes"`
	Lines   int    `json:"lines"`
	Digest  string `json:"digest"`
	Created bool   `json:"created"`
	// GitNeutralised is what the broker's git guard disarmed because of
	// this write (see broker.Broker.GuardToolWrite); empty when nothing.
	GitNeutralised []sandbox.Neutralisation `json:"git_neutralised,omitempty"`
	// Diagnostics is the written file's diagnosis, as shown (see
	// Diagnostics); empty without a Diagnostics or when no server owns
	// the file.
	Diagnostics []FileDiagnostics `json:"diagnostics,omitempty"`
}

// WriteTool returns fs_write: replace a whole file (creating parents),
// answering with the digest and anchors of what it wrote so an edit can
// follow without a read. With d, the answer ends with d's diagnosis of
// the file (see Diagnostics); nil answers without one.
func WriteTool(d Diagnostics) Tool {
	desc := fmt.Sprintf("Write a whole file, creating parent directories; the answer gives the new `digest:` and "+
		"`N:anchor|text` lines to plan an fs_edit from. To change part of a file, prefer fs_edit. Files over %d MiB are refused.", MaxFileBytes>>20)
	if d != nil {
		desc += describeDiagnostics()
	}
	return Typed(Tool{
		Name:          "fs_write",
		Title:         "Write a file",
		Description:   desc,
		PromptSnippet: "fs_write: create or replace a whole file",
		Replay:        ReplaySafe,
		Mode:          Exclusive,
	}, func(ctx context.Context, c *Call, a writeArgs) Outcome { return runWrite(ctx, c, a, d) })
}

func runWrite(ctx context.Context, c *Call, a writeArgs, d Diagnostics) Outcome {
	if len(a.Content) > MaxFileBytes {
		return Fail(CodeFileTooLarge, fmt.Sprintf("content is %d bytes; at most %d bytes (%d MiB) are written", len(a.Content), MaxFileBytes, MaxFileBytes>>20))
	}
	if o, refused := refuseSchemeWrite("fs_write", a.Path); refused {
		return o
	}
	// A file outside the roots is written only with the operator's
	// approval of exactly it, shown the content that lands; its directory
	// must exist, since the approval covers the file alone.
	parents := true
	path, err := c.ResolveWrite(a.Path)
	if err != nil {
		subject := &Subject{Kind: SubjectContent, Text: a.Content}
		if path, err = c.askAccess(ctx, "fs_write", a.Path, accessWrite, err, subject); err != nil {
			return pathFailure(err)
		}
		parents = false
	}
	if o, refused := refuseGitControl(c, a.Path, path); refused {
		return o
	}
	data := []byte(a.Content)
	res, err := writeWhole(path, data, parents)
	if err != nil {
		if !parents && errors.Is(err, fs.ErrNotExist) {
			return Fail(CodeWriteFailed, fmt.Sprintf("%s: %v (%s); the approval covers this file alone, so its directory must exist already", a.Path, err, res.changed(c)))
		}
		return writeFailure(c, a.Path, res, err)
	}
	created := res.Created
	shown := c.displayPath(path)
	guarded, err := guardGitWrite(c, path)
	if err != nil {
		return gitGuardFailure(c, shown, guarded, err)
	}
	digest := hashline.Digest(data)
	total := hashline.LineCount(data)
	var b strings.Builder
	verb := "wrote"
	if created {
		verb = "created"
	}
	fmt.Fprintf(&b, "%s %s (%d bytes, %d lines)\n", verb, shown, len(data), total)
	fmt.Fprintf(&b, "digest: %s\n", digest)
	writeNotes(&b, res)
	writeGitGuard(&b, c, path, guarded)
	if total > 0 {
		// Rendered within the cap, block by block: a file whose anchors do
		// not fit costs no more than the cap to find out.
		text, complete, _ := hashline.RenderRegionsOf(data, []hashline.Region{{Start: 1, End: total}}, 0, hashline.MaxFreshAnchorBytes)
		if complete {
			b.WriteString("Fresh anchors:\n")
			b.WriteString(text)
		} else {
			fmt.Fprintf(&b, "The file is too large to show its anchors here (over %d bytes rendered); fs_read it, with offset/limit for the part you will edit.\n", hashline.MaxFreshAnchorBytes)
		}
	}
	det := WriteDetails{Path: shown, Bytes: len(data), Lines: total, Digest: digest, Created: created, GitNeutralised: guarded}
	if d != nil {
		det.Diagnostics = writeDiagnostics(&b, c, diagnose(ctx, d, []ChangedFile{{Path: path, Content: data}}), map[string][]byte{path: data})
	}
	return Outcome{Text: b.String(), Details: det}
}

// writeNotes states what a successful write could not make durable: a
// directory sync that failed after the rename (the content is in place
// but may not survive a crash). Parents a write created are implied by
// its success ("missing parent directories are created"); a failed
// write names them (see writeResult.changed).
func writeNotes(b *strings.Builder, res writeResult) {
	if res.SyncErr != nil {
		fmt.Fprintf(b, "warning: the file is written, but its directory could not be synced (%v); a crash now could lose it\n", res.SyncErr)
	}
}

// writeFailure renders a failed write, saying what it changed anyway.
func writeFailure(c *Call, path string, res writeResult, err error) Outcome {
	code := CodeWriteFailed
	switch {
	case errors.Is(err, errPathChanged):
		code = CodePathChanged
	case errors.Is(err, errNotRegularFile):
		code = CodeNotARegularFile
	}
	return Fail(code, fmt.Sprintf("%s: %v (%s)", path, err, res.changed(c)))
}

// refuseGitControl refuses a write whose path, as the model gave it or
// as it resolved, has a component git takes as its own directory (see
// isDotGitName). Git's own files are changed with git through bash,
// where the broker's git guard applies; a harness-side write there
// would happen outside every jail. Components above the writable root
// the path lies in (a workspace that itself sits under a .git) are not
// the model's choice and are not looked at.
func refuseGitControl(c *Call, arg, resolved string) (Outcome, bool) {
	check := []string{}
	if rel, ok := c.relToWritableRoot(resolved); ok {
		check = append(check, rel)
	}
	if a := filepath.Clean(arg); !filepath.IsAbs(a) {
		check = append(check, a)
	} else if rel, ok := c.relToWritableRoot(a); ok {
		check = append(check, rel)
	} else {
		check = append(check, a)
	}
	for _, p := range check {
		for comp := range strings.SplitSeq(filepath.ToSlash(p), "/") {
			if isDotGitName(comp) {
				return Fail(CodeGitControlPath, fmt.Sprintf(
					"%s: %q is git's own directory, which fs_write and fs_edit do not touch; change git's files with git through bash, where the broker's git guard applies. Nothing was written.",
					arg, comp)), true
			}
		}
	}
	return Outcome{}, false
}

// relToWritableRoot returns p relative to the deepest root of the
// workspace and writable roots (as the call names them, and resolved)
// that covers it.
func (c *Call) relToWritableRoot(p string) (string, bool) {
	best, found := "", false
	for _, r := range c.guardRoots() {
		for _, form := range []string{r.named, r.resolved} {
			if sandbox.Covers(form, p) && (!found || len(form) > len(best)) {
				best, found = form, true
			}
		}
	}
	if !found {
		return "", false
	}
	rel, err := filepath.Rel(best, p)
	return rel, err == nil
}

// hfsIgnorable are the code points HFS+ ignores in names, so
// ".g\u200cit" is .git there (git's own is_hfs_dotgit list).
var hfsIgnorable = strings.NewReplacer(
	"\u200c", "", "\u200d", "", "\u200e", "", "\u200f", "",
	"\u202a", "", "\u202b", "", "\u202c", "", "\u202d", "", "\u202e", "",
	"\u206a", "", "\u206b", "", "\u206c", "", "\u206d", "", "\u206e", "", "\u206f", "",
	"\ufeff", "")

// isDotGitName reports whether a path component names git's directory
// on some filesystem a workspace may live on: ".git" in any case
// (case-insensitive filesystems), with HFS+'s ignorable code points
// removed, with NTFS's trailing dots and spaces removed, or NTFS's short
// name "git~1".
func isDotGitName(comp string) bool {
	n := strings.ToLower(hfsIgnorable.Replace(comp))
	n = strings.TrimRight(n, ". ")
	return n == ".git" || n == "git~1"
}

// guardRoot is one writable root as the policy names it and resolved.
type guardRoot struct{ named, resolved string }

// guardRoots lists the workspace and the writable roots of the base
// policy and this call's grants, each as named and resolved.
func (c *Call) guardRoots() []guardRoot {
	named := append([]string{c.Workspace}, c.Base.WritableRoots...)
	for _, g := range c.Grants {
		if g.Kind == sandbox.GrantWritableRoot {
			named = append(named, g.Path)
		}
	}
	var out []guardRoot
	for _, n := range named {
		if !filepath.IsAbs(n) {
			continue
		}
		if rr, err := c.root(n); err == nil {
			out = append(out, guardRoot{named: filepath.Clean(n), resolved: rr})
		}
	}
	return out
}

// guardGitWrite tells the broker's git guard (or, without a broker, the
// broker-less check: a host that runs no command may still run git on
// the workspace) about a file a tool wrote at the resolved path, once
// for every writable root that covers it.
func guardGitWrite(c *Call, resolved string) ([]sandbox.Neutralisation, error) {
	var out []sandbox.Neutralisation
	seen := map[string]bool{}
	for _, r := range c.guardRoots() {
		if !sandbox.Covers(r.resolved, resolved) || seen[r.named] {
			continue
		}
		seen[r.named] = true
		rel, err := filepath.Rel(r.resolved, resolved)
		if err != nil {
			continue
		}
		done, err := guardToolWrite(c.Broker, r.named, filepath.Join(r.named, rel))
		out = append(out, done...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// writeGitGuard states what the git guard disarmed because of a write,
// and, when that was the written file itself, that its content is no
// longer what the answer shows.
func writeGitGuard(b *strings.Builder, c *Call, written string, done []sandbox.Neutralisation) {
	for _, n := range done {
		shown := c.displayPath(n.Path)
		switch {
		case n.Err != "":
			fmt.Fprintf(b, "git guard: could not neutralise %s: %s\n", shown, n.Err)
		case n.MovedTo != "":
			fmt.Fprintf(b, "git guard: moved %s aside to %s (git could run it)\n", shown, c.displayPath(n.MovedTo))
		default:
			fmt.Fprintf(b, "git guard: removed %s from %s (git could run a program from them)\n", strings.Join(n.Removed, ", "), shown)
		}
		if filepath.Clean(n.Path) == filepath.Clean(written) {
			fmt.Fprintf(b, "note: %s is no longer what you wrote; fs_read it before editing it\n", shown)
		}
	}
}

// gitGuardFailure is the outcome of a write that landed but that the
// git guard could not make safe.
func gitGuardFailure(c *Call, shown string, done []sandbox.Neutralisation, err error) Outcome {
	code := CodeGitGuardFailed
	var d *sandbox.Denial
	if errors.As(err, &d) {
		code = Code(d.Code)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s was written, but the git guard could not make it safe for the host's git: %v\n", shown, err)
	if jailOf(c.Broker) != nil {
		b.WriteString("The workspace is fenced: no command runs there until the host repairs what is named and lifts the fence.\n")
	} else {
		b.WriteString("The workspace is to be treated as fenced: the host must not run git there until what is named is repaired.\n")
	}
	writeGitGuard(&b, c, "", done)
	return Fail(code, b.String())
}
