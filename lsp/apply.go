package lsp

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// Applied says what Apply landed.
type Applied struct {
	// Files are the files written, in the edit's order.
	Files []AppliedFile `json:"files"`
	// Diagnostics are the servers' diagnoses of the files written, as
	// fs_write's (within tool.DiagnosticsWait); a file no server owns has
	// none.
	Diagnostics []tool.FileDiagnostics `json:"diagnostics,omitempty"`
}

// AppliedFile is one file Apply wrote.
type AppliedFile struct {
	Path string `json:"path"`
	// Digest is the new content's hashline digest.
	Digest string `json:"digest"`
	Bytes  int    `json:"bytes"`
}

// Apply lands an edit a preview returned (Rename, an Action's Edit), all
// or nothing, through c's file API: the same path discipline, refusals
// and staged write + rename as fs_write. Every file is read and its
// digest checked against the preview's, and every change planned,
// before anything is written: a file changed since the preview is
// refused (CodeStaleEdit, naming it) and nothing is written. A write
// that fails after others landed (the disk, a refusal of c's policy
// discovered late), or a file that changed while the edit was landing
// (CodeStaleEdit), restores the files already written to the content
// they had, and the error (CodeWriteFailed) says which. c.Workspace must be
// the plane's workspace.
func (p *Plane) Apply(ctx context.Context, c *tool.Call, e Edit) (Applied, error) {
	if c == nil || filepath.Clean(c.Workspace) != p.ws {
		return Applied{}, &Error{Code: CodeBadEdit, Reason: "an edit is applied through a call on the plane's own workspace"}
	}
	plans := make([]plannedFile, 0, len(e.Files))
	seen := map[string]bool{}
	if len(e.Files) > maxEditFiles {
		return Applied{}, &Error{Code: CodeBadEdit, Reason: fmt.Sprintf("the edit touches %d files; at most %d are applied", len(e.Files), maxEditFiles)}
	}
	changes := 0
	for _, fe := range e.Files {
		rel := filepath.FromSlash(fe.Path)
		if fe.Path == "" || filepath.IsAbs(rel) || filepath.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return Applied{}, &Error{Code: CodeBadEdit, Reason: fmt.Sprintf("%q is not a path relative to the workspace", oneLine(fe.Path, 200))}
		}
		if seen[rel] {
			return Applied{}, &Error{Code: CodeBadEdit, Reason: fmt.Sprintf("the edit names %s twice", fe.Path)}
		}
		seen[rel] = true
		if changes += len(fe.Changes); changes > maxEditChanges {
			return Applied{}, &Error{Code: CodeBadEdit, Reason: fmt.Sprintf("the edit has more than %d changes", maxEditChanges)}
		}
		resolved, err := c.ResolveWrite(rel)
		if err != nil {
			return Applied{}, &Error{Code: CodeWriteFailed, Reason: fmt.Sprintf("%s may not be written (nothing was): %s", fe.Path, oneLine(err.Error(), 300))}
		}
		if !sandbox.Covers(p.ws, resolved) {
			// A link swapped in since the preview, to a file elsewhere.
			return Applied{}, &Error{Code: CodeStaleEdit, Reason: fmt.Sprintf("%s now leads out of the workspace; nothing was written", fe.Path)}
		}
		got, err := c.ReadFile(rel)
		if err != nil {
			return Applied{}, &Error{Code: CodeUnreadable, Reason: fmt.Sprintf("%s could not be read (nothing was written): %s", fe.Path, oneLine(err.Error(), 300))}
		}
		if d := digestOf(got.Content); d != fe.Digest {
			return Applied{}, &Error{Code: CodeStaleEdit, Reason: fmt.Sprintf("%s changed since the preview (digest %s, the preview's %s); nothing was written: preview again", fe.Path, d, oneLine(fe.Digest, 40))}
		}
		after, err := applyChanges(got.Content, fe.Changes)
		if err != nil {
			return Applied{}, &Error{Code: CodeBadEdit, Reason: fmt.Sprintf("%s: %s; nothing was written", fe.Path, err)}
		}
		if len(after) > tool.MaxFileBytes {
			return Applied{}, &Error{Code: CodeBadEdit, Reason: fmt.Sprintf("%s would be %d bytes; at most %d are written; nothing was", fe.Path, len(after), tool.MaxFileBytes)}
		}
		plans = append(plans, plannedFile{rel, got.Content, after})
	}
	if err := ctx.Err(); err != nil {
		return Applied{}, &Error{Code: CodeTimeout, Reason: "the context ended before the edit landed; nothing was written"}
	}
	var out Applied
	changed := make([]tool.ChangedFile, 0, len(plans))
	for i, pl := range plans {
		// Checked again just before landing: the window between the plan
		// and this file's write is as short as one file's write.
		if p.test.beforeLanding != nil {
			p.test.beforeLanding(filepath.ToSlash(pl.path))
		}
		var err error
		code := CodeWriteFailed
		if now, rerr := c.ReadFile(pl.path); rerr != nil {
			err = rerr
		} else if digestOf(now.Content) != digestOf(pl.before) {
			err, code = errors.New("it changed while the edit was landing"), CodeStaleEdit
		} else {
			_, err = c.WriteFile(pl.path, pl.after)
		}
		if err != nil {
			return Applied{}, restore(c, plans[:i], pl.path, code, err)
		}
		out.Files = append(out.Files, AppliedFile{Path: filepath.ToSlash(pl.path), Digest: digestOf(pl.after), Bytes: len(pl.after)})
		changed = append(changed, tool.ChangedFile{Path: filepath.Join(p.ws, pl.path), Content: pl.after})
	}
	dctx, cancel := context.WithTimeout(ctx, tool.DiagnosticsWait)
	defer cancel()
	out.Diagnostics = p.Diagnose(dctx, changed)
	return out, nil
}

// plannedFile is one file of an edit being applied: its path relative
// to the workspace, the content the plan was checked against, and the
// content it lands.
type plannedFile struct {
	path          string
	before, after []byte
}

// restore writes back the files of an edit that already landed when the
// write of failed did not, each only while it still holds what the edit
// wrote, and says which were and were not restored.
func restore(c *tool.Call, landed []plannedFile, failed string, code Code, cause error) *Error {
	var back, kept []string
	for _, pl := range landed {
		now, err := c.ReadFile(pl.path)
		if err == nil && digestOf(now.Content) == digestOf(pl.after) {
			if _, err = c.WriteFile(pl.path, pl.before); err == nil {
				back = append(back, filepath.ToSlash(pl.path))
				continue
			}
		}
		kept = append(kept, filepath.ToSlash(pl.path))
	}
	why := fmt.Sprintf("%s was not written (%s)", filepath.ToSlash(failed), oneLine(cause.Error(), 300))
	switch {
	case len(landed) == 0:
		why += "; nothing was written"
	case len(kept) == 0:
		why += "; the files written before it were restored: " + strings.Join(back, ", ")
	default:
		why += "; these files hold the edit and could not be restored: " + strings.Join(kept, ", ")
		if len(back) > 0 {
			why += "; these were restored: " + strings.Join(back, ", ")
		}
	}
	return &Error{Code: code, Reason: why}
}

// applyChanges splices changes, in order and not overlapping, into
// content.
func applyChanges(content []byte, changes []Change) ([]byte, error) {
	t := newText(content)
	var b strings.Builder
	b.Grow(len(content))
	last := 0
	for i, ch := range changes {
		start, ok1 := t.offsetOf(ch.Line, ch.Column)
		end, ok2 := t.offsetOf(ch.EndLine, ch.EndColumn)
		switch {
		case !ok1 || !ok2 || start > end:
			return nil, fmt.Errorf("change %d names a place past the content (line %d column %d to line %d column %d)", i+1, ch.Line, ch.Column, ch.EndLine, ch.EndColumn)
		case start < last:
			return nil, fmt.Errorf("change %d overlaps or precedes the one before", i+1)
		case ch.Anchor != "" && ch.Line <= t.lines() && anchorOf(t.line(ch.Line-1)) != ch.Anchor:
			return nil, fmt.Errorf("change %d's line %d no longer has anchor %s", i+1, ch.Line, oneLine(ch.Anchor, 16))
		}
		b.Write(content[last:start])
		b.WriteString(ch.NewText)
		last = end
	}
	b.Write(content[last:])
	return []byte(b.String()), nil
}
