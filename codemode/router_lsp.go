package codemode

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentloom/loom/hashline"
	"github.com/agentloom/loom/lsp"
	"github.com/agentloom/loom/tool"
)

// maxLSPPaths bounds the files one lsp.diagnostics asks about, and the
// kinds one lsp.code_actions filters by.
const maxLSPPaths = 64

// The lsp.* capabilities serve the language operations of
// Options.LanguageServers, each answer a map cap/lsp reads. cap/lsp is
// offered only with a plane, so h.lsp is set whenever one is called.

// lspSites serves a capability that answers sites of one position.
func lspSites(op func(*lsp.Plane, context.Context, lsp.Position) (lsp.Sites, error)) func(*seamHost, context.Context, *capArgs) (any, error) {
	return func(h *seamHost, ctx context.Context, a *capArgs) (any, error) {
		at := lspPosition(a)
		if err := a.done(); err != nil {
			return nil, err
		}
		s, err := op(h.lsp, ctx, at)
		if err != nil {
			return nil, err
		}
		return sitesMap(s), nil
	}
}

// lspHover serves lsp.hover.
func (h *seamHost) lspHover(ctx context.Context, a *capArgs) (any, error) {
	p := h.lsp
	at := lspPosition(a)
	if err := a.done(); err != nil {
		return nil, err
	}
	hv, err := p.Hover(ctx, at)
	if err != nil {
		return nil, err
	}
	return map[string]any{"server": hv.Server, "site": siteMap(hv.Site), "text": hv.Text}, nil
}

// lspDocumentSymbols serves lsp.document_symbols.
func (h *seamHost) lspDocumentSymbols(ctx context.Context, a *capArgs) (any, error) {
	p := h.lsp
	path := a.str("path", true)
	if err := a.done(); err != nil {
		return nil, err
	}
	s, err := p.DocumentSymbols(ctx, path)
	if err != nil {
		return nil, err
	}
	return sitesMap(s), nil
}

// lspWorkspaceSymbols serves lsp.workspace_symbols.
func (h *seamHost) lspWorkspaceSymbols(ctx context.Context, a *capArgs) (any, error) {
	p := h.lsp
	query := a.str("query", false)
	if err := a.done(); err != nil {
		return nil, err
	}
	s, err := p.WorkspaceSymbols(ctx, query)
	if err != nil {
		return nil, err
	}
	return sitesMap(s), nil
}

// lspCodeActions serves lsp.code_actions.
func (h *seamHost) lspCodeActions(ctx context.Context, a *capArgs) (any, error) {
	p := h.lsp
	path := a.str("path", true)
	line := int(a.integer("line", 0, 1, 1<<30))
	end := int(a.integer("end_line", 0, 0, 1<<30))
	kinds := a.strings("kinds", false)
	if err := a.done(); err != nil {
		return nil, err
	}
	if len(kinds) > maxLSPPaths {
		return nil, &CapError{Code: codeInvalidCapabilityArguments, Message: fmt.Sprintf("lsp.code_actions takes at most %d kinds (got %d)", maxLSPPaths, len(kinds))}
	}
	acts, err := p.CodeActions(ctx, path, line, end, kinds)
	if err != nil {
		return nil, err
	}
	items := make([]any, len(acts.Items))
	for i, x := range acts.Items {
		m := map[string]any{"title": x.Title, "kind": x.Kind, "preferred": x.Preferred, "command": x.Command, "disabled": x.Disabled, "refused": ""}
		if x.Edit != nil {
			m["edit"] = editMap(*x.Edit)
		}
		if x.Refused != nil {
			m["refused"] = string(x.Refused.Code) + ": " + x.Refused.Error()
		}
		items[i] = m
	}
	return map[string]any{"server": acts.Server, "items": items, "total": acts.Total, "malformed": acts.Malformed}, nil
}

// lspRename serves lsp.rename.
func (h *seamHost) lspRename(ctx context.Context, a *capArgs) (any, error) {
	p := h.lsp
	at := lspPosition(a)
	name := a.str("new_name", true)
	if err := a.done(); err != nil {
		return nil, err
	}
	e, err := p.Rename(ctx, at, name)
	if err != nil {
		return nil, err
	}
	return editMap(e), nil
}

// lspApply serves lsp.apply.
func (h *seamHost) lspApply(ctx context.Context, a *capArgs) (any, error) {
	p := h.lsp
	e := lspEdit(a)
	if err := a.done(); err != nil {
		return nil, err
	}
	ap, err := p.Apply(ctx, h.call, e)
	if err != nil {
		return nil, err
	}
	files := make([]any, len(ap.Files))
	contents := map[string][]byte{}
	for i, f := range ap.Files {
		files[i] = map[string]any{"path": f.Path, "digest": f.Digest, "bytes": f.Bytes}
		if now, err := h.call.ReadFile(f.Path); err == nil {
			contents[filepath.Join(filepath.Clean(h.call.Workspace), filepath.FromSlash(f.Path))] = now.Content
		}
	}
	return map[string]any{"files": files, "diagnostics": h.diagnosticsList(ap.Diagnostics, contents)}, nil
}

// lspDiagnostics serves lsp.diagnostics.
func (h *seamHost) lspDiagnostics(ctx context.Context, a *capArgs) (any, error) {
	p := h.lsp
	paths := a.strings("paths", true)
	if err := a.done(); err != nil {
		return nil, err
	}
	if len(paths) == 0 || len(paths) > maxLSPPaths {
		return nil, &CapError{Code: codeInvalidCapabilityArguments, Message: fmt.Sprintf("lsp.diagnostics takes 1 to %d paths (got %d)", maxLSPPaths, len(paths))}
	}
	files := make([]tool.ChangedFile, 0, len(paths))
	contents := map[string][]byte{}
	for _, path := range paths {
		abs, err := h.call.ResolveRead(path)
		if err != nil {
			return nil, forProgram(path, err)
		}
		f, err := h.call.ReadFile(abs)
		if err != nil {
			return nil, forProgram(path, err)
		}
		files = append(files, tool.ChangedFile{Path: abs, Content: f.Content})
		contents[abs] = f.Content
	}
	dctx, cancel := context.WithTimeout(ctx, tool.DiagnosticsWait)
	defer cancel()
	return map[string]any{"files": h.diagnosticsList(p.Diagnose(dctx, files), contents)}, nil
}

// lspPosition decodes a position's arguments: path, line, column and
// ident, or symbol.
func lspPosition(a *capArgs) lsp.Position {
	return lsp.Position{
		Path:   a.str("path", false),
		Line:   int(a.integer("line", 0, 0, 1<<30)),
		Column: int(a.integer("column", 0, 0, 1<<30)),
		Ident:  a.str("ident", false),
		Symbol: a.str("symbol", false),
	}
}

// lspEdit decodes lsp.apply's edit, every field checked.
func lspEdit(a *capArgs) lsp.Edit {
	e := lsp.Edit{Server: a.str("server", false)}
	for i, f := range a.list("files", true) {
		fm, ok := f.(map[string]any)
		if !ok {
			a.fail(fmt.Sprintf("files[%d]", i), "a map {path, digest, changes}")
			return e
		}
		fa := newCapArgs(fmt.Sprintf("lsp.apply files[%d]", i), fm)
		fe := lsp.FileEdit{Path: fa.str("path", true), Digest: fa.str("digest", true)}
		for j, c := range fa.list("changes", true) {
			cm, ok := c.(map[string]any)
			if !ok {
				fa.fail(fmt.Sprintf("changes[%d]", j), "a map {line, column, end_line, end_column, new_text}")
				break
			}
			ca := newCapArgs(fmt.Sprintf("lsp.apply files[%d].changes[%d]", i, j), cm)
			fe.Changes = append(fe.Changes, lsp.Change{
				Line: int(ca.integer("line", 0, 1, 1<<30)), Column: int(ca.integer("column", 0, 1, 1<<30)),
				EndLine: int(ca.integer("end_line", 0, 1, 1<<30)), EndColumn: int(ca.integer("end_column", 0, 1, 1<<30)),
				Anchor: ca.str("anchor", false), NewText: ca.str("new_text", false),
			})
			if err := ca.done(); err != nil && a.err == nil {
				a.err = err
			}
		}
		if err := fa.done(); err != nil && a.err == nil {
			a.err = err
		}
		e.Files = append(e.Files, fe)
	}
	return e
}

func siteMap(s lsp.Site) map[string]any {
	return map[string]any{"path": s.Path, "line": s.Line, "column": s.Column, "anchor": s.Anchor, "text": s.Text,
		"name": s.Name, "kind": s.Kind, "container": s.Container}
}

func sitesMap(s lsp.Sites) map[string]any {
	items := make([]any, len(s.Items))
	for i, x := range s.Items {
		items[i] = siteMap(x)
	}
	return map[string]any{"server": s.Server, "items": items, "total": s.Total, "outside": s.Outside, "malformed": s.Malformed}
}

func editMap(e lsp.Edit) map[string]any {
	files := make([]any, len(e.Files))
	for i, f := range e.Files {
		changes := make([]any, len(f.Changes))
		for j, c := range f.Changes {
			changes[j] = map[string]any{"line": c.Line, "column": c.Column, "end_line": c.EndLine, "end_column": c.EndColumn,
				"anchor": c.Anchor, "new_text": c.NewText}
		}
		files[i] = map[string]any{"path": f.Path, "digest": f.Digest, "changes": changes}
	}
	return map[string]any{"server": e.Server, "files": files}
}

// diagnosticsList renders diagnoses for a program: each file's path as
// the file tools show it, and each finding's line anchor from contents
// (the content diagnosed, by absolute path) when the server left it out.
func (h *seamHost) diagnosticsList(found []tool.FileDiagnostics, contents map[string][]byte) []any {
	out := make([]any, len(found))
	for i, f := range found {
		var lines []hashline.Line
		if c, ok := contents[f.Path]; ok {
			lines = hashline.Annotate(c)
		}
		items := make([]any, len(f.Items))
		for j, d := range f.Items {
			anchor := d.Anchor
			if anchor == "" && d.Line >= 1 && d.Line <= len(lines) {
				anchor = lines[d.Line-1].Anchor
			}
			items[j] = map[string]any{"line": d.Line, "severity": string(d.Severity), "message": d.Message, "source": d.Source, "anchor": anchor}
		}
		out[i] = map[string]any{"path": h.shownPath(f.Path), "server": f.Server, "status": string(f.Status),
			"waited_ms": f.Waited.Milliseconds(), "code": string(f.Code), "reason": f.Reason,
			"errors": f.Errors, "warnings": f.Warnings, "infos": f.Infos, "hints": f.Hints, "items": items}
	}
	return out
}

// shownPath is abs relative to the workspace when under it, slash
// separated; else abs.
func (h *seamHost) shownPath(abs string) string {
	for _, ws := range []string{h.call.Workspace, resolvedDir(h.call.Workspace)} {
		if rel, err := filepath.Rel(ws, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return filepath.ToSlash(rel)
		}
	}
	return abs
}

// resolvedDir is dir with its links resolved, or dir.
func resolvedDir(dir string) string {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return r
	}
	return dir
}
