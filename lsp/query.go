package lsp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
	"github.com/sourcegraph/jsonrpc2"
)

// Bounds on the language operations' answers.
const (
	// MaxSites bounds the sites one answer lists; Sites.Total counts them
	// all.
	MaxSites = 200
	// maxActions bounds the code actions one answer lists; Actions.Total
	// counts them all.
	maxActions = 200
	// maxHoverBytes bounds a hover's text.
	maxHoverBytes = 8 << 10
	// maxSiteTextBytes bounds the line text a Site carries.
	maxSiteTextBytes = 200
	// maxEditFiles bounds the files one edit touches; a server's edit
	// touching more is refused (CodeBadEdit).
	maxEditFiles = 200
	// maxEditChanges bounds the text changes of one edit, over all its
	// files; past it, as past maxEditFiles.
	maxEditChanges = 10_000
	// maxCandidates bounds the symbols a refusal of an ambiguous name
	// lists.
	maxCandidates = 10
	// queryWait bounds a language operation when its context has no
	// deadline of its own.
	queryWait = 30 * time.Second
	// maxContextDiagnostics bounds the diagnostics a code-action request
	// carries back to the server.
	maxContextDiagnostics = 64
)

// Position addresses one place in the workspace, in one of two ways.
//
// By file: Path (relative to the workspace, or absolute under it) and
// Line (1-based), then Column (1-based, in characters), or else Ident,
// taken at its first occurrence on the line (models count columns
// badly), or else neither: the line's first non-blank character.
//
// By name: Symbol, a workspace symbol's name qualified as far as needed
// ("pkg.Type.Method", "Type.Method", "Func"), found through
// workspace/symbol and taken at its name; a name several symbols have is
// refused with CodeSymbolAmbiguous, the candidates listed. Path, Line,
// Column and Ident are then ignored.
type Position struct {
	Path   string `json:"path,omitempty"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
	Ident  string `json:"ident,omitempty"`
	Symbol string `json:"symbol,omitempty"`
}

// Site is one place an answer names.
type Site struct {
	// Path is the file, relative to the workspace, slash-separated.
	Path string `json:"path"`
	// Line and Column are 1-based; Column counts characters.
	Line   int `json:"line"`
	Column int `json:"column"`
	// Anchor is the line's hashline anchor, so a model can edit at it;
	// Text is the line, trimmed, control characters escaped, cut to
	// maxSiteTextBytes. Both are empty when the file did not read (a
	// link out of the workspace, too large) or has no such line.
	Anchor string `json:"anchor,omitempty"`
	Text   string `json:"text,omitempty"`
	// Name, Kind ("function", "method", "struct", ... LSP's SymbolKind
	// in snake_case) and Container are a symbol's, for the answers that
	// name symbols (symbols, calls).
	Name      string `json:"name,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Container string `json:"container,omitempty"`
}

// Sites is a list of sites, sorted by path, line and column, at most
// MaxSites of them.
type Sites struct {
	Server string `json:"server"`
	Items  []Site `json:"items"`
	// Total counts the sites in the workspace, listed or not.
	Total int `json:"total"`
	// Outside counts sites the server named outside the workspace (the
	// standard library, the module cache): dropped, never read.
	Outside int `json:"outside,omitempty"`
	// Malformed counts elements of the answer that were not sites Loom
	// could read (a malformed range, a negative or huge line): dropped.
	Malformed int `json:"malformed,omitempty"`
}

// Hover is what the server says of the symbol at a place.
type Hover struct {
	Server string `json:"server"`
	Site   Site   `json:"site"`
	// Text is the server's text (markdown, most servers), valid UTF-8,
	// cut to maxHoverBytes; empty when it has nothing to say.
	Text string `json:"text"`
}

// Action is one code action a server offers for a range.
type Action struct {
	Title     string `json:"title"`
	Kind      string `json:"kind,omitempty"`
	Preferred bool   `json:"preferred,omitempty"`
	// Edit is the action's edit as a preview (Plane.Apply lands it);
	// nil when the action has none, or its edit was refused (Refused).
	Edit *Edit `json:"edit,omitempty"`
	// Command names the command the action would have the server run
	// instead of (or after) its edit; Loom runs no server command.
	Command string `json:"command,omitempty"`
	// Disabled is the server's reason the action does not apply now.
	Disabled string `json:"disabled,omitempty"`
	// Refused says why the action's edit is not offered.
	Refused *Error `json:"refused,omitempty"`
}

// Actions is the code actions for one range, at most maxActions.
type Actions struct {
	Server    string   `json:"server"`
	Items     []Action `json:"items"`
	Total     int      `json:"total"`
	Malformed int      `json:"malformed,omitempty"`
}

// Edit is a server's edit as a preview: each file's changes, planned
// against the content the preview read (its Digest). Making one writes
// nothing; Plane.Apply lands it, all or nothing.
type Edit struct {
	Server string     `json:"server"`
	Files  []FileEdit `json:"files"`
}

// FileEdit is one file's part of an Edit.
type FileEdit struct {
	// Path is the file, relative to the workspace, slash-separated.
	Path string `json:"path"`
	// Digest is hashline.Digest of the content the changes were planned
	// against; Apply refuses the whole edit when the file no longer has
	// it.
	Digest string `json:"digest"`
	// Changes are in order of their start, none overlapping.
	Changes []Change `json:"changes"`
}

// Change replaces the text from (Line, Column) up to, not including,
// (EndLine, EndColumn) with NewText. Lines and columns are 1-based,
// columns in characters; EndLine is one past the last line, column 1,
// for a change reaching the content's end.
type Change struct {
	Line      int `json:"line"`
	Column    int `json:"column"`
	EndLine   int `json:"end_line"`
	EndColumn int `json:"end_column"`
	// Anchor is the hashline anchor of the line the change starts on
	// (empty past the last line).
	Anchor  string `json:"anchor,omitempty"`
	NewText string `json:"new_text"`
}

// Definition returns where the symbol at at is defined.
func (p *Plane) Definition(ctx context.Context, at Position) (Sites, error) {
	return p.locations(ctx, at, "textDocument/definition", nil)
}

// Implementation returns the implementations of the interface or method
// at at (or the interfaces a type at at implements, as the server says).
func (p *Plane) Implementation(ctx context.Context, at Position) (Sites, error) {
	return p.locations(ctx, at, "textDocument/implementation", nil)
}

// References returns every reference to the symbol at at, its
// declaration included.
func (p *Plane) References(ctx context.Context, at Position) (Sites, error) {
	return p.locations(ctx, at, "textDocument/references", map[string]any{"includeDeclaration": true})
}

// locations asks the server owning at's file a request answered with
// locations.
func (p *Plane) locations(ctx context.Context, at Position, method string, refCtx any) (Sites, error) {
	ctx, cancel := withWait(ctx)
	defer cancel()
	f := p.files()
	defer f.close()
	pl, err := p.place(ctx, f, at)
	if err != nil {
		return Sites{}, err
	}
	params := pl.params()
	if refCtx != nil {
		params["context"] = refCtx
	}
	var raw json.RawMessage
	if err := pl.s.query(ctx, func(r *run) error { return r.call(ctx, method, params, &raw) }); err != nil {
		return Sites{}, err
	}
	return p.sites(f, pl.s, decodeLocations(raw, p.ws)), nil
}

// Hover returns what the server says of the symbol at at.
func (p *Plane) Hover(ctx context.Context, at Position) (Hover, error) {
	ctx, cancel := withWait(ctx)
	defer cancel()
	f := p.files()
	defer f.close()
	pl, err := p.place(ctx, f, at)
	if err != nil {
		return Hover{}, err
	}
	var raw json.RawMessage
	if err := pl.s.query(ctx, func(r *run) error { return r.call(ctx, "textDocument/hover", pl.params(), &raw) }); err != nil {
		return Hover{}, err
	}
	return Hover{Server: pl.s.cfg.Name, Site: f.site(pl.abs, wireLoc{Range: wireRange{Start: pl.pos, End: pl.pos}}), Text: decodeHover(raw)}, nil
}

// DocumentSymbols returns the symbols of the file at path (relative to
// the workspace, or absolute under it), nested ones with their
// container's name (Type for its methods and fields).
func (p *Plane) DocumentSymbols(ctx context.Context, path string) (Sites, error) {
	ctx, cancel := withWait(ctx)
	defer cancel()
	f := p.files()
	defer f.close()
	abs, s, err := p.owned(path)
	if err != nil {
		return Sites{}, err
	}
	if _, err := f.text(abs); err != nil {
		return Sites{}, unreadable(f, abs, err)
	}
	uri := fileURI(abs)
	var raw json.RawMessage
	params := map[string]any{"textDocument": map[string]string{"uri": uri}}
	if err := s.query(ctx, func(r *run) error { return r.call(ctx, "textDocument/documentSymbol", params, &raw) }); err != nil {
		return Sites{}, err
	}
	return p.sites(f, s, decodeSymbols(raw, uri, p.ws)), nil
}

// WorkspaceSymbols returns the workspace's symbols matching query, as
// the servers match it (gopls: fuzzily), from every configured server
// that answers; an error only when none did.
func (p *Plane) WorkspaceSymbols(ctx context.Context, query string) (Sites, error) {
	ctx, cancel := withWait(ctx)
	defer cancel()
	f := p.files()
	defer f.close()
	var all Sites
	var names []string
	var first error
	for _, s := range p.servers {
		w, err := s.workspaceSymbols(ctx, query)
		if err != nil {
			first = cmp.Or(first, err)
			continue
		}
		got := p.sites(f, s, w)
		names = append(names, s.cfg.Name)
		all.Items = append(all.Items, got.Items...)
		all.Total += got.Total
		all.Outside += got.Outside
		all.Malformed += got.Malformed
	}
	if names == nil {
		if first == nil {
			first = &Error{Code: CodeNoServer, Reason: "no language server is configured"}
		}
		return Sites{}, first
	}
	all.Server = strings.Join(names, ",")
	sortSites(all.Items)
	all.Items = all.Items[:min(len(all.Items), MaxSites)]
	return all, nil
}

func (s *server) workspaceSymbols(ctx context.Context, query string) (wireLocs, error) {
	ws := s.p.ws
	var raw json.RawMessage
	if err := s.query(ctx, func(r *run) error {
		return r.call(ctx, "workspace/symbol", map[string]string{"query": query}, &raw)
	}); err != nil {
		return wireLocs{}, err
	}
	return decodeSymbols(raw, "", ws), nil
}

// IncomingCalls returns the calls of the function at at: one site for
// each call, named for the function that makes it.
func (p *Plane) IncomingCalls(ctx context.Context, at Position) (Sites, error) {
	return p.calls(ctx, at, true)
}

// OutgoingCalls returns the functions the function at at calls: one
// site for each, at its name.
func (p *Plane) OutgoingCalls(ctx context.Context, at Position) (Sites, error) {
	return p.calls(ctx, at, false)
}

// calls prepares the call hierarchy at at and asks its first item's
// incoming or outgoing calls.
func (p *Plane) calls(ctx context.Context, at Position, incoming bool) (Sites, error) {
	ctx, cancel := withWait(ctx)
	defer cancel()
	f := p.files()
	defer f.close()
	pl, err := p.place(ctx, f, at)
	if err != nil {
		return Sites{}, err
	}
	method := "callHierarchy/outgoingCalls"
	if incoming {
		method = "callHierarchy/incomingCalls"
	}
	var raw json.RawMessage
	var bad int
	err = pl.s.query(ctx, func(r *run) error {
		var prep json.RawMessage
		if err := r.call(ctx, "textDocument/prepareCallHierarchy", pl.params(), &prep); err != nil {
			return err
		}
		var items []callItem
		items, bad = decodeCallItems(prep)
		if len(items) == 0 {
			return nil
		}
		return r.call(ctx, method, map[string]any{"item": items[0].raw}, &raw)
	})
	if err != nil {
		return Sites{}, err
	}
	out := p.sites(f, pl.s, decodeCalls(raw, incoming, p.ws))
	out.Malformed += bad
	return out, nil
}

// CodeActions returns the code actions the server offers for lines
// line to endLine (1-based, inclusive; endLine below line is line) of
// the file at path, of the kinds given (LSP's CodeActionKinds:
// "quickfix", "refactor", ...; none asks for all). The file's current
// diagnostics on those lines go with the request, so the server offers
// their quick fixes. Each action's edit is a preview; nothing is
// applied.
func (p *Plane) CodeActions(ctx context.Context, path string, line, endLine int, kinds []string) (Actions, error) {
	ctx, cancel := withWait(ctx)
	defer cancel()
	f := p.files()
	defer f.close()
	abs, s, err := p.owned(path)
	if err != nil {
		return Actions{}, err
	}
	t, err := f.text(abs)
	if err != nil {
		return Actions{}, unreadable(f, abs, err)
	}
	endLine = max(endLine, line)
	if line < 1 || endLine > max(t.lines(), 1) {
		return Actions{}, &Error{Code: CodeBadPosition, Reason: fmt.Sprintf("lines %d to %d are not lines of %s (it has %d)", line, endLine, f.rel(abs), t.lines())}
	}
	var endChar int64
	if endLine <= t.lines() {
		endChar = utf16Len(t.line(endLine - 1))
	}
	uri := fileURI(abs)
	rng := wireRange{Start: wirePos{Line: int64(line - 1)}, End: wirePos{Line: int64(endLine - 1), Character: endChar}}
	var raw json.RawMessage
	err = s.query(ctx, func(r *run) error {
		// The server holds the file open, as it is on disk, so that its
		// diagnostics (and their fixes) are of this content.
		if d := r.docs[abs]; d == nil || !d.open {
			s.clock++
			if _, err := s.send(ctx, r, tool.ChangedFile{Path: abs, Content: t.content}); err != nil {
				return err
			}
			r.unwait(abs, r.docs[abs].waiter)
			r.docs[abs].waiter = nil
			if err := s.closeLeastRecent(ctx, r, map[string]bool{abs: true}); err != nil {
				return err
			}
		}
		actx := map[string]any{"diagnostics": r.diagnosticsIn(ctx, uri, rng)}
		if len(kinds) > 0 {
			actx["only"] = kinds
		}
		return r.call(ctx, "textDocument/codeAction", map[string]any{
			"textDocument": map[string]string{"uri": uri}, "range": rng, "context": actx,
		}, &raw)
	})
	if err != nil {
		return Actions{}, err
	}
	items, total, bad := decodeActions(raw)
	out := Actions{Server: s.cfg.Name, Total: total, Malformed: bad, Items: []Action{}}
	for _, w := range items[:min(len(items), maxActions)] {
		a := Action{Title: oneLine(w.Title, maxNameBytes), Kind: oneLine(w.Kind, maxNameBytes), Preferred: w.IsPreferred}
		if w.Disabled != nil {
			a.Disabled = cmp.Or(oneLine(w.Disabled.Reason, maxNameBytes), "disabled")
		}
		a.Command = commandName(w.Command)
		if e := jsonValue(w.Edit); e != nil {
			edit, err := p.planEdit(f, s, e)
			if err != nil {
				a.Refused = err
			} else {
				a.Edit = &edit
			}
		}
		out.Items = append(out.Items, a)
	}
	return out, nil
}

// commandName is the name of a code action's command: the object's
// "command" field, or the string itself (an element that is a Command).
func commandName(raw json.RawMessage) string {
	if raw = jsonValue(raw); raw == nil {
		return ""
	}
	var name string
	if json.Unmarshal(raw, &name) == nil {
		return oneLine(name, maxNameBytes)
	}
	var c struct {
		Command string `json:"command"`
	}
	json.Unmarshal(raw, &c)
	return oneLine(c.Command, maxNameBytes)
}

// jsonValue returns raw unless it is absent or null.
func jsonValue(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

// diagnosticsIn returns the server's current diagnostics of uri whose
// range meets rng, as it sent them (at most maxContextDiagnostics), when
// it answers pulls; none otherwise.
func (r *run) diagnosticsIn(ctx context.Context, uri string, rng wireRange) []json.RawMessage {
	out := []json.RawMessage{}
	if !r.pull {
		return out
	}
	var report struct {
		Items json.RawMessage `json:"items"`
	}
	if r.call(ctx, "textDocument/diagnostic", map[string]any{"textDocument": map[string]string{"uri": uri}}, &report) != nil {
		return out
	}
	eachElement(report.Items, func(el json.RawMessage) {
		var d struct {
			Range wireRange `json:"range"`
		}
		if len(out) >= maxContextDiagnostics || json.Unmarshal(el, &d) != nil || !d.Range.valid() {
			return
		}
		if d.Range.End.Line >= rng.Start.Line && d.Range.Start.Line <= rng.End.Line {
			out = append(out, el)
		}
	})
	return out
}

// Rename returns the edit renaming the symbol at at to newName, as a
// preview: nothing is written (Plane.Apply lands it). An edit touching a
// file outside the workspace is refused whole (CodeEditOutside).
func (p *Plane) Rename(ctx context.Context, at Position, newName string) (Edit, error) {
	ctx, cancel := withWait(ctx)
	defer cancel()
	if newName == "" || !utf8.ValidString(newName) || strings.ContainsAny(newName, "\x00\n\r") {
		return Edit{}, &Error{Code: CodeBadPosition, Reason: "a rename needs a new name on one line"}
	}
	f := p.files()
	defer f.close()
	pl, err := p.place(ctx, f, at)
	if err != nil {
		return Edit{}, err
	}
	params := pl.params()
	params["newName"] = newName
	var raw json.RawMessage
	if err := pl.s.query(ctx, func(r *run) error { return r.call(ctx, "textDocument/rename", params, &raw) }); err != nil {
		return Edit{}, err
	}
	if jsonValue(raw) == nil {
		return Edit{Server: pl.s.cfg.Name, Files: []FileEdit{}}, nil
	}
	edit, e := p.planEdit(f, pl.s, raw)
	if e != nil {
		return Edit{}, e
	}
	return edit, nil
}

// planEdit turns a server's WorkspaceEdit into a preview: every file
// under the workspace read, every change checked against its content
// (within it, in order, none overlapping). Any file outside the
// workspace refuses the whole edit.
func (p *Plane) planEdit(f *files, s *server, raw json.RawMessage) (Edit, *Error) {
	w, e := decodeWorkspaceEdit(raw)
	if e != nil {
		e.Server = s.cfg.Name
		return Edit{}, e
	}
	out := Edit{Server: s.cfg.Name, Files: []FileEdit{}}
	var outside []string
	for _, uri := range w.uris {
		if _, ok := pathIn(uri, p.ws); !ok {
			outside = append(outside, oneLine(uri, 200))
		}
	}
	if len(outside) > 0 {
		return Edit{}, &Error{Code: CodeEditOutside, Server: s.cfg.Name,
			Reason: fmt.Sprintf("the edit touches %d file(s) outside the workspace (%s); none of it is offered", len(outside), strings.Join(outside[:min(3, len(outside))], ", "))}
	}
	for _, uri := range w.uris {
		abs, _ := pathIn(uri, p.ws)
		t, err := f.text(abs)
		if err != nil {
			return Edit{}, unreadable(f, abs, err)
		}
		type span struct {
			start, end int
			text       string
		}
		spans := make([]span, 0, len(w.edits[uri]))
		for _, te := range w.edits[uri] {
			a, ok1 := t.offset(te.Range.Start)
			b, ok2 := t.offset(te.Range.End)
			if !ok1 || !ok2 || a > b {
				return Edit{}, &Error{Code: CodeBadEdit, Server: s.cfg.Name, Reason: fmt.Sprintf("the edit names line %d of %s, which has %d lines", max(te.Range.Start.Line, te.Range.End.Line)+1, f.rel(abs), t.lines())}
			}
			spans = append(spans, span{a, b, *te.NewText})
		}
		slices.SortStableFunc(spans, func(x, y span) int { return cmp.Compare(x.start, y.start) })
		fe := FileEdit{Path: f.rel(abs), Digest: digestOf(t.content), Changes: make([]Change, 0, len(spans))}
		for i, sp := range spans {
			if i > 0 && spans[i-1].end > sp.start {
				return Edit{}, &Error{Code: CodeBadEdit, Server: s.cfg.Name, Reason: fmt.Sprintf("the edit's changes to %s overlap", fe.Path)}
			}
			c := Change{NewText: sp.text}
			c.Line, c.Column = t.position(sp.start)
			c.EndLine, c.EndColumn = t.position(sp.end)
			if c.Line <= t.lines() {
				c.Anchor = anchorOf(t.line(c.Line - 1))
			}
			fe.Changes = append(fe.Changes, c)
		}
		out.Files = append(out.Files, fe)
	}
	slices.SortFunc(out.Files, func(a, b FileEdit) int { return cmp.Compare(a.Path, b.Path) })
	return out, nil
}

// place is a Position resolved: its file, the server owning it, and the
// LSP position.
type place struct {
	s   *server
	abs string
	pos wirePos
}

func (pl place) params() map[string]any {
	return map[string]any{"textDocument": map[string]string{"uri": fileURI(pl.abs)}, "position": pl.pos}
}

// place resolves at.
func (p *Plane) place(ctx context.Context, f *files, at Position) (place, error) {
	if at.Symbol != "" {
		return p.symbol(ctx, f, at.Symbol)
	}
	abs, s, err := p.owned(at.Path)
	if err != nil {
		return place{}, err
	}
	t, err := f.text(abs)
	if err != nil {
		return place{}, unreadable(f, abs, err)
	}
	rel := f.rel(abs)
	if at.Line < 1 || at.Line > t.lines() {
		return place{}, &Error{Code: CodeBadPosition, Reason: fmt.Sprintf("%s has no line %d (it has %d)", rel, at.Line, t.lines())}
	}
	line := t.line(at.Line - 1)
	var ch int64
	switch {
	case at.Ident != "":
		i := strings.Index(line, at.Ident)
		if i < 0 {
			return place{}, &Error{Code: CodeBadPosition, Reason: fmt.Sprintf("line %d of %s does not hold %q; it reads: %s", at.Line, rel, oneLine(at.Ident, 100), oneLine(line, maxSiteTextBytes))}
		}
		ch = utf16Len(line[:i])
	case at.Column > 0:
		if n := utf8.RuneCountInString(line); at.Column > n+1 {
			return place{}, &Error{Code: CodeBadPosition, Reason: fmt.Sprintf("line %d of %s has %d characters; column %d is past them", at.Line, rel, n, at.Column)}
		}
		ch = utf16Of(line, at.Column)
	default:
		ch = utf16Len(line[:len(line)-len(strings.TrimLeftFunc(line, unicode.IsSpace))])
	}
	return place{s: s, abs: abs, pos: wirePos{Line: int64(at.Line - 1), Character: ch}}, nil
}

// symbol resolves a symbol's name through every server's
// workspace/symbol: the full name, then its last part when that finds
// nothing. A candidate matches when its qualified name (its container's,
// a dot, its own, unless its own already carries the container) is the
// name asked for or ends with it after a dot or a slash.
func (p *Plane) symbol(ctx context.Context, f *files, name string) (place, error) {
	type found struct {
		s   *server
		abs string
		l   wireLoc
		q   string
	}
	var cands []found
	var first error
	answered := false
	seen := map[string]bool{}
	last := name[strings.LastIndexAny(name, "./")+1:]
	for _, query := range slices.Compact([]string{name, last}) {
		for _, s := range p.servers {
			w, err := s.workspaceSymbols(ctx, query)
			if err != nil {
				first = cmp.Or(first, err)
				continue
			}
			answered = true
			for _, l := range w.items {
				q := l.Name
				if l.Container != "" && !strings.HasPrefix(q, l.Container) {
					q = l.Container + "." + q
				}
				if q != name && !strings.HasSuffix(q, "."+name) && !strings.HasSuffix(q, "/"+name) {
					continue
				}
				abs, ok := pathIn(l.URI, p.ws)
				key := fmt.Sprintf("%s:%d:%d", abs, l.Range.Start.Line, l.Range.Start.Character)
				if !ok || seen[key] {
					continue
				}
				seen[key] = true
				cands = append(cands, found{s, abs, l, q})
			}
		}
		if len(cands) > 0 {
			break
		}
	}
	switch {
	case len(cands) == 1:
		c := cands[0]
		s := c.s
		if o := p.owner(c.abs); o != nil {
			s = o
		}
		return place{s: s, abs: c.abs, pos: c.l.Range.Start}, nil
	case !answered && first != nil:
		return place{}, first // no server could be asked: say why
	case !answered:
		return place{}, &Error{Code: CodeNoServer, Reason: "no language server is configured"}
	case len(cands) == 0:
		return place{}, &Error{Code: CodeSymbolNotFound, Reason: fmt.Sprintf("no symbol in the workspace is named %q", oneLine(name, 200))}
	}
	var list []string
	for _, c := range cands[:min(len(cands), maxCandidates)] {
		site := f.site(c.abs, c.l)
		list = append(list, fmt.Sprintf("%s (%s %s:%d)", oneLine(c.q, maxNameBytes), site.Kind, site.Path, site.Line))
	}
	more := ""
	if len(cands) > maxCandidates {
		more = fmt.Sprintf(" and %d more", len(cands)-maxCandidates)
	}
	return place{}, &Error{Code: CodeSymbolAmbiguous, Reason: fmt.Sprintf("%d symbols are named %q; qualify it, or give a path and line: %s%s", len(cands), oneLine(name, 200), strings.Join(list, "; "), more)}
}

// owned resolves path (relative to the workspace, or absolute under it)
// and the server owning it.
func (p *Plane) owned(path string) (string, *server, error) {
	if path == "" {
		return "", nil, &Error{Code: CodeBadPosition, Reason: "a position needs a path (or a symbol)"}
	}
	abs := filepath.Clean(path)
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(p.ws, abs)
	}
	if !sandbox.Covers(p.ws, abs) || abs == p.ws {
		return "", nil, &Error{Code: CodeBadPosition, Reason: fmt.Sprintf("%q is not a file in the workspace", oneLine(path, 200))}
	}
	s := p.owner(abs)
	if s == nil {
		return "", nil, &Error{Code: CodeNoServer, Reason: fmt.Sprintf("no language server owns %s", oneLine(path, 200))}
	}
	return abs, s, nil
}

// owner is the first server owning abs, or nil.
func (p *Plane) owner(abs string) *server {
	for _, s := range p.servers {
		if _, ok := s.cfg.owns(abs); ok {
			return s
		}
	}
	return nil
}

// sites turns what a server named into Sites: URIs outside the
// workspace counted and dropped, the rest sorted, deduplicated (one site
// for each start and name) and cut
// to MaxSites, each with its line's anchor.
func (p *Plane) sites(f *files, s *server, w wireLocs) Sites {
	out := Sites{Server: s.cfg.Name, Malformed: w.bad, Outside: w.outside, Items: []Site{}}
	type at struct {
		abs string
		l   wireLoc
	}
	var in []at
	for _, l := range w.items {
		abs, ok := pathIn(l.URI, p.ws)
		if !ok {
			out.Outside++
			continue
		}
		in = append(in, at{abs, l})
	}
	slices.SortStableFunc(in, func(a, b at) int {
		return cmp.Or(cmp.Compare(a.abs, b.abs), cmp.Compare(a.l.Range.Start.Line, b.l.Range.Start.Line),
			cmp.Compare(a.l.Range.Start.Character, b.l.Range.Start.Character))
	})
	in = slices.CompactFunc(in, func(a, b at) bool {
		return a.abs == b.abs && a.l.Range.Start == b.l.Range.Start && a.l.Name == b.l.Name
	})
	out.Total = len(in) + w.extra
	for _, a := range in[:min(len(in), MaxSites)] {
		out.Items = append(out.Items, f.site(a.abs, a.l))
	}
	return out
}

func sortSites(s []Site) {
	slices.SortStableFunc(s, func(a, b Site) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
}

// query runs ask on the server's running incarnation, holding its turn,
// after telling it what changed on disk since it last heard (so it
// answers about the files as they are); errors are *Error.
func (s *server) query(ctx context.Context, ask func(*run) error) error {
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return &Error{Code: CodeTimeout, Server: s.cfg.Name, Reason: "an earlier request to the server was still running"}
	}
	defer func() { <-s.turn }()
	r, e := s.current()
	if e != nil {
		return e
	}
	select {
	case <-r.ready:
	case <-ctx.Done():
		return &Error{Code: CodeTimeout, Server: s.cfg.Name, Reason: "the server is starting"}
	}
	err := s.sync(ctx, r, nil)
	if err == nil {
		err = ask(r)
	}
	var je *jsonrpc2.Error
	var le *Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &le):
		le.Server = cmp.Or(le.Server, s.cfg.Name)
		return le
	case errors.As(err, &je):
		return &Error{Code: CodeRequestFailed, Server: s.cfg.Name, Reason: "it answered: " + oneLine(je.Message, 300)}
	}
	select {
	case <-r.done:
		f := r.failure()
		return &Error{Code: f.Code, Server: s.cfg.Name, Reason: f.Reason + s.endedNote()}
	default:
	}
	if ctx.Err() != nil {
		return &Error{Code: CodeTimeout, Server: s.cfg.Name, Reason: "the server did not answer in time"}
	}
	if isDecodeError(err) {
		return &Error{Code: CodeProtocol, Server: s.cfg.Name, Reason: "its answer is not of the shape asked: " + oneLine(err.Error(), 200)}
	}
	return &Error{Code: CodeCrashed, Server: s.cfg.Name, Reason: oneLine(err.Error(), 300)}
}

func isDecodeError(err error) bool {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.As(err, &syntax) || errors.As(err, &typ)
}

// withWait gives ctx queryWait when it has no deadline.
func withWait(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, queryWait)
}

// unreadable is the error of a workspace file that did not read.
func unreadable(f *files, abs string, err error) *Error {
	return &Error{Code: CodeUnreadable, Reason: fmt.Sprintf("%s could not be read: %s", f.rel(abs), oneLine(err.Error(), 200))}
}

// utf16Len is s's length in UTF-16 code units.
func utf16Len(s string) int64 {
	var n int64
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}
