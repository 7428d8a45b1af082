// Package lsp asks the workspace's language servers: definitions,
// references, implementations, hover, symbols, call hierarchy,
// diagnostics, code actions, and rename with a preview and an
// all-or-nothing apply.
//
// A place is a Position, by file and line (At) or by a symbol's name
// (Symbol): models count columns badly, so neither needs one. Every Site
// an answer names carries its line's hashline anchor and text, so a
// program can edit at it. Lists hold at most 200 sites (Sites.Total counts
// them all). Rename and CodeActions write nothing: they return an Edit,
// a preview, and only Apply lands one, checking every file's digest
// first and writing nothing if any file changed.
//
// The host offers this package only when it runs a language server for
// the workspace. Every call needs the fs_read tool; Apply needs fs_edit,
// as fs.Edit does. Failures are *Error with codes such as "lsp_no_server"
// (no server owns the file), "lsp_bad_position", "lsp_symbol_not_found",
// "lsp_symbol_ambiguous" (the message lists candidates), "lsp_timeout",
// "lsp_stale_edit" (a file changed since the preview; nothing written),
// "lsp_bad_edit", "tool_not_held".
//
// Example:
//
//	refs, err := lsp.References(ctx, lsp.Symbol("Server.Close"))
//	if err != nil {
//		panic(err)
//	}
//	for _, s := range refs.Items {
//		fmt.Printf("%s:%d %s\n", s.Path, s.Line, s.Text)
//	}
//	edit, err := lsp.Rename(ctx, lsp.At("server.go", 12, "Close"), "Shutdown")
//	if err == nil {
//		_, err = lsp.Apply(ctx, edit)
//	}
package lsp

import (
	"context"

	"cap/internal/client"
)

// Error is the error every cap package returns (see fs.Error).
type Error = client.Error

// MaxSites bounds the items of one answer's list; Total counts them all.
const MaxSites = 200

// Position addresses a place: by file (Path, relative to the workspace;
// Line, 1-based; then Column, 1-based in characters, or else Ident, taken
// at its first occurrence on the line, or else neither: the line's first
// non-blank character), or by name (Symbol, a workspace symbol qualified
// as far as needed: "pkg.Type.Method", "Type.Method", "Func"; the other
// fields are then ignored).
type Position struct {
	Path         string
	Line, Column int
	Ident        string
	Symbol       string
}

// At is the identifier ident on line line of the file at path.
func At(path string, line int, ident string) Position {
	return Position{Path: path, Line: line, Ident: ident}
}

// Symbol is the workspace symbol called name ("pkg.Type.Method").
func Symbol(name string) Position { return Position{Symbol: name} }

// Site is one place an answer names.
type Site struct {
	Path         string // relative to the workspace, slash-separated
	Line, Column int    // 1-based; Column counts characters
	Anchor       string // the line's hashline anchor ("" when unreadable)
	Text         string // the line, trimmed, cut to 200 bytes
	// Name, Kind ("function", "method", "struct", ...) and Container are
	// a symbol's, for the answers that name symbols (symbols, calls).
	Name, Kind, Container string
}

// Sites is a list of sites, sorted by path, line and column, at most
// MaxSites of them.
type Sites struct {
	Server    string // the server that answered
	Items     []Site
	Total     int // the sites in the workspace, listed or not
	Outside   int // sites outside the workspace (dropped, never read)
	Malformed int // elements of the answer that were not sites (dropped)
}

// HoverInfo is what the server says of the symbol at a place (Hover's
// answer).
type HoverInfo struct {
	Server string
	Site   Site
	Text   string // markdown, most servers; cut to 8 KiB; "" when none
}

// Change replaces the text from (Line, Column) up to, not including,
// (EndLine, EndColumn) with NewText; 1-based, columns in characters.
type Change struct {
	Line, Column       int
	EndLine, EndColumn int
	Anchor             string // the hashline anchor of the line it starts on
	NewText            string
}

// FileEdit is one file's part of an Edit: its changes, planned against
// the content whose hashline digest is Digest.
type FileEdit struct {
	Path    string
	Digest  string
	Changes []Change
}

// Edit is a server's edit as a preview: making one writes nothing. Apply
// lands it.
type Edit struct {
	Server string
	Files  []FileEdit
}

// Action is one code action a server offers for a range.
type Action struct {
	Title     string
	Kind      string // "quickfix", "refactor.rewrite", ...
	Preferred bool
	// Edit is the action's edit as a preview (Apply lands it); nil when
	// it has none, or it was refused (Refused says why).
	Edit     *Edit
	Command  string // a server command the action names; never run
	Disabled string // the server's reason it does not apply now
	Refused  string // why the action's edit is not offered
}

// Actions is the code actions for one range, at most MaxSites of them.
type Actions struct {
	Server    string
	Items     []Action
	Total     int
	Malformed int
}

// Diagnostic is one finding of a server.
type Diagnostic struct {
	Line     int    // 1-based
	Severity string // "error", "warning", "information" or "hint"
	Message  string
	Source   string // what found it ("compiler", an analyzer); may be ""
	Anchor   string // the line's hashline anchor
}

// FileDiagnostics is one file's diagnosis.
type FileDiagnostics struct {
	Path     string
	Server   string
	Status   string // "settled", "unsettled" (the wait ended) or "unavailable"
	WaitedMs int
	// Code and Reason say why a diagnosis is unavailable or unsettled.
	Code, Reason                   string
	Errors, Warnings, Infos, Hints int // what the server found, all of it
	Items                          []Diagnostic
}

// AppliedFile is one file Apply wrote.
type AppliedFile struct {
	Path   string
	Digest string // the new content's hashline digest
	Bytes  int
}

// Applied says what Apply landed, and what the servers then found in
// the files written.
type Applied struct {
	Files       []AppliedFile
	Diagnostics []FileDiagnostics
}

func (p Position) args() map[string]any {
	return map[string]any{"path": p.Path, "line": p.Line, "column": p.Column, "ident": p.Ident, "symbol": p.Symbol}
}

func readSite(f *client.Fields) Site {
	return Site{Path: f.Str("path"), Line: f.Int("line"), Column: f.Int("column"), Anchor: f.Str("anchor"), Text: f.Str("text"),
		Name: f.Str("name"), Kind: f.Str("kind"), Container: f.Str("container")}
}

func readSites(name string, m map[string]any) (Sites, error) {
	r := client.Read(m)
	s := Sites{Server: r.Str("server"), Total: r.Int("total"), Outside: r.Int("outside"), Malformed: r.Int("malformed")}
	r.Maps("items", func(f *client.Fields) { s.Items = append(s.Items, readSite(f)) })
	return s, r.Err(name)
}

func readEdit(r *client.Fields) Edit {
	e := Edit{Server: r.Str("server")}
	r.Maps("files", func(f *client.Fields) {
		fe := FileEdit{Path: f.Str("path"), Digest: f.Str("digest")}
		f.Maps("changes", func(c *client.Fields) {
			fe.Changes = append(fe.Changes, Change{Line: c.Int("line"), Column: c.Int("column"), EndLine: c.Int("end_line"),
				EndColumn: c.Int("end_column"), Anchor: c.Str("anchor"), NewText: c.Str("new_text")})
		})
		e.Files = append(e.Files, fe)
	})
	return e
}

func readDiagnoses(r *client.Fields, key string) []FileDiagnostics {
	var out []FileDiagnostics
	r.Maps(key, func(f *client.Fields) {
		d := FileDiagnostics{Path: f.Str("path"), Server: f.Str("server"), Status: f.Str("status"), WaitedMs: f.Int("waited_ms"),
			Code: f.Str("code"), Reason: f.Str("reason"), Errors: f.Int("errors"), Warnings: f.Int("warnings"),
			Infos: f.Int("infos"), Hints: f.Int("hints")}
		f.Maps("items", func(i *client.Fields) {
			d.Items = append(d.Items, Diagnostic{Line: i.Int("line"), Severity: i.Str("severity"), Message: i.Str("message"),
				Source: i.Str("source"), Anchor: i.Str("anchor")})
		})
		out = append(out, d)
	})
	return out
}

// Definition returns where the symbol at at is defined.
func Definition(ctx context.Context, at Position) (Sites, error) {
	const name = "lsp.definition"
	m, err := client.Call(ctx, name, at.args())
	if err != nil {
		return Sites{}, err
	}
	return readSites(name, m)
}

// References returns every reference to the symbol at at, its
// declaration included: at most MaxSites, Total counting them all.
func References(ctx context.Context, at Position) (Sites, error) {
	const name = "lsp.references"
	m, err := client.Call(ctx, name, at.args())
	if err != nil {
		return Sites{}, err
	}
	return readSites(name, m)
}

// Implementation returns the implementations of the interface or method
// at at (or what the server takes for them).
func Implementation(ctx context.Context, at Position) (Sites, error) {
	const name = "lsp.implementation"
	m, err := client.Call(ctx, name, at.args())
	if err != nil {
		return Sites{}, err
	}
	return readSites(name, m)
}

// Hover returns what the server says of the symbol at at: its signature
// and documentation, most servers.
func Hover(ctx context.Context, at Position) (HoverInfo, error) {
	const name = "lsp.hover"
	m, err := client.Call(ctx, name, at.args())
	if err != nil {
		return HoverInfo{}, err
	}
	r := client.Read(m)
	h := HoverInfo{Server: r.Str("server"), Text: r.Str("text")}
	r.Map("site", func(f *client.Fields) { h.Site = readSite(f) })
	return h, r.Err(name)
}

// DocumentSymbols returns the symbols declared in the file at path, each
// Site with its Name, Kind and Container.
func DocumentSymbols(ctx context.Context, path string) (Sites, error) {
	const name = "lsp.document_symbols"
	m, err := client.Call(ctx, name, map[string]any{"path": path})
	if err != nil {
		return Sites{}, err
	}
	return readSites(name, m)
}

// WorkspaceSymbols returns the workspace's symbols matching query (as the
// server matches: a substring or fuzzy match, most servers).
func WorkspaceSymbols(ctx context.Context, query string) (Sites, error) {
	const name = "lsp.workspace_symbols"
	m, err := client.Call(ctx, name, map[string]any{"query": query})
	if err != nil {
		return Sites{}, err
	}
	return readSites(name, m)
}

// IncomingCalls returns the callers of the function at at: each Site is
// the call, its Name the calling function.
func IncomingCalls(ctx context.Context, at Position) (Sites, error) {
	const name = "lsp.incoming_calls"
	m, err := client.Call(ctx, name, at.args())
	if err != nil {
		return Sites{}, err
	}
	return readSites(name, m)
}

// OutgoingCalls returns what the function at at calls: each Site is the
// callee, its Name the function called.
func OutgoingCalls(ctx context.Context, at Position) (Sites, error) {
	const name = "lsp.outgoing_calls"
	m, err := client.Call(ctx, name, at.args())
	if err != nil {
		return Sites{}, err
	}
	return readSites(name, m)
}

// Diagnostics returns the servers' diagnoses of the files at paths (1 to
// 64), as they are on disk, waiting at most 5 s for each to settle: one
// FileDiagnostics per file a server owns. "clean" is Status "settled"
// with no Items.
func Diagnostics(ctx context.Context, paths ...string) ([]FileDiagnostics, error) {
	const name = "lsp.diagnostics"
	m, err := client.Call(ctx, name, map[string]any{"paths": paths})
	if err != nil {
		return nil, err
	}
	r := client.Read(m)
	d := readDiagnoses(r, "files")
	return d, r.Err(name)
}

// CodeActions returns the code actions the server offers for lines line
// to endLine (1-based, inclusive; an endLine below line is line) of the
// file at path, at most MaxSites, only those of kinds
// when any are given ("quickfix", "refactor"). It writes nothing: an
// action's Edit is a preview Apply lands.
func CodeActions(ctx context.Context, path string, line, endLine int, kinds ...string) (Actions, error) {
	const name = "lsp.code_actions"
	args := map[string]any{"path": path, "line": line, "end_line": endLine}
	if len(kinds) > 0 {
		args["kinds"] = kinds
	}
	m, err := client.Call(ctx, name, args)
	if err != nil {
		return Actions{}, err
	}
	r := client.Read(m)
	a := Actions{Server: r.Str("server"), Total: r.Int("total"), Malformed: r.Int("malformed")}
	r.Maps("items", func(f *client.Fields) {
		x := Action{Title: f.Str("title"), Kind: f.Str("kind"), Preferred: f.Bool("preferred"), Command: f.Str("command"),
			Disabled: f.Str("disabled"), Refused: f.Str("refused")}
		f.Map("edit", func(ef *client.Fields) {
			e := readEdit(ef)
			x.Edit = &e
		})
		a.Items = append(a.Items, x)
	})
	return a, r.Err(name)
}

// Rename returns the edit renaming the symbol at at to newName, as a
// preview: it writes nothing. Apply lands it.
func Rename(ctx context.Context, at Position, newName string) (Edit, error) {
	const name = "lsp.rename"
	args := at.args()
	args["new_name"] = newName
	m, err := client.Call(ctx, name, args)
	if err != nil {
		return Edit{}, err
	}
	r := client.Read(m)
	e := readEdit(r)
	return e, r.Err(name)
}

// Apply lands edit (from Rename or an Action), all or nothing: every
// file is read and its digest checked against the preview's before
// anything is written, so a file changed since is refused
// ("lsp_stale_edit") with nothing written; files land through the same
// staged write as fs.Write. It returns the files written and the servers'
// diagnoses of them.
func Apply(ctx context.Context, edit Edit) (Applied, error) {
	const name = "lsp.apply"
	files := make([]any, len(edit.Files))
	for i, f := range edit.Files {
		changes := make([]any, len(f.Changes))
		for j, c := range f.Changes {
			changes[j] = map[string]any{"line": c.Line, "column": c.Column, "end_line": c.EndLine, "end_column": c.EndColumn,
				"anchor": c.Anchor, "new_text": c.NewText}
		}
		files[i] = map[string]any{"path": f.Path, "digest": f.Digest, "changes": changes}
	}
	m, err := client.Call(ctx, name, map[string]any{"server": edit.Server, "files": files})
	if err != nil {
		return Applied{}, err
	}
	r := client.Read(m)
	var a Applied
	r.Maps("files", func(f *client.Fields) {
		a.Files = append(a.Files, AppliedFile{Path: f.Str("path"), Digest: f.Str("digest"), Bytes: f.Int("bytes")})
	})
	a.Diagnostics = readDiagnoses(r, "diagnostics")
	return a, r.Err(name)
}
