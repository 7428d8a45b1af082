package lsp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Bounds on what Loom decodes of a language operation's answer. As with
// diagnostics, a server's lists are never trusted: Loom counts the
// elements itself and keeps a bounded number of them.
const (
	// maxWireItems bounds the elements of one answer decoded and kept
	// before sorting; the rest are counted only.
	maxWireItems = 10_000
	// maxNameBytes bounds a symbol's name or detail as kept.
	maxNameBytes = 256
	// maxSymbolDepth bounds how deep a document's symbol tree is read.
	maxSymbolDepth = 16
)

// wirePos is an LSP Position: 0-based line and UTF-16 character.
type wirePos struct {
	Line      int64 `json:"line"`
	Character int64 `json:"character"`
}

// wireRange is an LSP Range.
type wireRange struct {
	Start wirePos `json:"start"`
	End   wirePos `json:"end"`
}

// valid reports whether both ends are within Loom's bounds and the start
// is not after the end.
func (r wireRange) valid() bool {
	ok := func(p wirePos) bool {
		return p.Line >= 0 && p.Line <= maxLine && p.Character >= 0 && p.Character <= maxLine
	}
	if !ok(r.Start) || !ok(r.End) {
		return false
	}
	return r.Start.Line < r.End.Line || (r.Start.Line == r.End.Line && r.Start.Character <= r.End.Character)
}

// wireLoc is where one site is, as a server named it: a uri and a range
// (the identifier's when the server gave one).
type wireLoc struct {
	URI       string
	Range     wireRange
	Name      string
	Kind      int64
	Container string
}

// wireLocs is a decoded list of sites: what was kept, and counts of the
// elements that were not.
type wireLocs struct {
	// ws is the workspace: a site outside it is counted, not kept.
	ws    string
	items []wireLoc
	// outside counts sites outside ws.
	outside int
	// extra counts readable elements past maxWireItems.
	extra int
	// bad counts elements that were not what the answer's type says.
	bad int
}

// eachElement calls f with every element of raw when it is a list, with
// raw itself when it is an object, and not at all for null or anything
// else. It stops when the list is out of step (a syntax error), counting
// that as one bad element.
func eachElement(raw json.RawMessage, f func(json.RawMessage)) (bad int) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' {
		f(raw)
		return 0
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return 0
	}
	for dec.More() {
		var el json.RawMessage
		if err := dec.Decode(&el); err != nil {
			return bad + 1
		}
		f(el)
	}
	return bad
}

// add keeps l when it is sound, counting it otherwise.
func (w *wireLocs) add(l wireLoc, ok bool) {
	switch {
	case !ok || !l.Range.valid() || l.URI == "":
		w.bad++
	case !under(l.URI, w.ws):
		w.outside++
	case len(w.items) >= maxWireItems:
		w.extra++
	default:
		l.Name = oneLine(l.Name, maxNameBytes)
		l.Container = oneLine(l.Container, maxNameBytes)
		w.items = append(w.items, l)
	}
}

// decodeLocations decodes the answer to definition, references or
// implementation: null, a Location, a list of Locations, or a list of
// LocationLinks (their target's selection range taken).
func decodeLocations(raw json.RawMessage, ws string) wireLocs {
	out := wireLocs{ws: ws}
	n := eachElement(raw, func(el json.RawMessage) {
		var l struct {
			URI                  string     `json:"uri"`
			Range                *wireRange `json:"range"`
			TargetURI            string     `json:"targetUri"`
			TargetSelectionRange *wireRange `json:"targetSelectionRange"`
		}
		if json.Unmarshal(el, &l) != nil {
			out.add(wireLoc{}, false)
			return
		}
		switch {
		case l.TargetURI != "" && l.TargetSelectionRange != nil:
			out.add(wireLoc{URI: l.TargetURI, Range: *l.TargetSelectionRange}, true)
		case l.URI != "" && l.Range != nil:
			out.add(wireLoc{URI: l.URI, Range: *l.Range}, true)
		default:
			out.add(wireLoc{}, false)
		}
	})
	out.bad += n
	return out
}

// under reports whether uri names a path under the workspace ws.
func under(uri, ws string) bool {
	_, ok := pathIn(uri, ws)
	return ok
}

// decodeSymbols decodes the answer to textDocument/documentSymbol (a
// tree of DocumentSymbols, or a list of SymbolInformation, whose uri is
// then docURI's when absent) or workspace/symbol (SymbolInformation or
// WorkspaceSymbol; a location without a range is taken at its start).
func decodeSymbols(raw json.RawMessage, docURI, ws string) wireLocs {
	out := wireLocs{ws: ws}
	var walk func(el json.RawMessage, container string, depth int)
	walk = func(el json.RawMessage, container string, depth int) {
		var s struct {
			Name           *string    `json:"name"`
			Kind           int64      `json:"kind"`
			ContainerName  string     `json:"containerName"`
			SelectionRange *wireRange `json:"selectionRange"`
			Range          *wireRange `json:"range"`
			Location       *struct {
				URI   string     `json:"uri"`
				Range *wireRange `json:"range"`
			} `json:"location"`
			Children json.RawMessage `json:"children"`
		}
		if json.Unmarshal(el, &s) != nil || s.Name == nil {
			out.add(wireLoc{}, false)
			return
		}
		l := wireLoc{URI: docURI, Name: *s.Name, Kind: s.Kind, Container: s.ContainerName}
		if container != "" {
			l.Container = container
		}
		switch {
		case s.Location != nil:
			l.URI = s.Location.URI
			if s.Location.Range != nil {
				l.Range = *s.Location.Range
			}
		case s.SelectionRange != nil:
			l.Range = *s.SelectionRange
		case s.Range != nil:
			l.Range = *s.Range
		default:
			out.add(wireLoc{}, false)
			return
		}
		out.add(l, true)
		if len(s.Children) > 0 && depth < maxSymbolDepth {
			name := *s.Name
			if container != "" {
				name = container + "." + name
			}
			n := eachElement(s.Children, func(c json.RawMessage) { walk(c, name, depth+1) })
			out.bad += n
		}
	}
	n := eachElement(raw, func(el json.RawMessage) { walk(el, "", 0) })
	out.bad += n
	return out
}

// callItem is what Loom reads of a CallHierarchyItem; raw is the item as
// the server sent it, which is what it is given back.
type callItem struct {
	Name           string     `json:"name"`
	Kind           int64      `json:"kind"`
	URI            string     `json:"uri"`
	SelectionRange *wireRange `json:"selectionRange"`
	raw            json.RawMessage
}

// decodeCallItems decodes the answer to prepareCallHierarchy.
func decodeCallItems(raw json.RawMessage) (items []callItem, bad int) {
	n := eachElement(raw, func(el json.RawMessage) {
		var it callItem
		if json.Unmarshal(el, &it) != nil || it.URI == "" || it.SelectionRange == nil || !it.SelectionRange.valid() {
			bad++
			return
		}
		if len(items) < maxWireItems {
			it.raw = el
			items = append(items, it)
		}
	})
	return items, bad + n
}

// decodeCalls decodes the answer to callHierarchy/incomingCalls (field
// "from": one site for each range of a call in the caller) or
// outgoingCalls (field "to": one site for each callee, at its name).
func decodeCalls(raw json.RawMessage, incoming bool, ws string) wireLocs {
	out := wireLocs{ws: ws}
	n := eachElement(raw, func(el json.RawMessage) {
		var c struct {
			From       *callItem   `json:"from"`
			To         *callItem   `json:"to"`
			FromRanges []wireRange `json:"fromRanges"`
		}
		if json.Unmarshal(el, &c) != nil {
			out.add(wireLoc{}, false)
			return
		}
		if incoming {
			if c.From == nil || len(c.FromRanges) == 0 {
				out.add(wireLoc{}, false)
				return
			}
			for _, r := range c.FromRanges {
				out.add(wireLoc{URI: c.From.URI, Range: r, Name: c.From.Name, Kind: c.From.Kind}, true)
			}
			return
		}
		if c.To == nil || c.To.SelectionRange == nil {
			out.add(wireLoc{}, false)
			return
		}
		out.add(wireLoc{URI: c.To.URI, Range: *c.To.SelectionRange, Name: c.To.Name, Kind: c.To.Kind}, true)
	})
	out.bad += n
	return out
}

// decodeHover decodes a Hover's contents (a MarkedString, a list of
// them, or MarkupContent) into text cut to maxHoverBytes, valid UTF-8.
func decodeHover(raw json.RawMessage) string {
	var h struct {
		Contents json.RawMessage `json:"contents"`
	}
	if json.Unmarshal(raw, &h) != nil {
		return ""
	}
	var parts []string
	piece := func(el json.RawMessage) {
		var s string
		if json.Unmarshal(el, &s) == nil {
			parts = append(parts, s)
			return
		}
		var m struct {
			Value string `json:"value"`
		}
		if json.Unmarshal(el, &m) == nil && m.Value != "" {
			parts = append(parts, m.Value)
		}
	}
	c := bytes.TrimSpace(h.Contents)
	if len(c) > 0 && c[0] == '"' {
		piece(c)
	} else {
		eachElement(c, piece)
	}
	text := strings.ToValidUTF8(strings.Join(parts, "\n\n"), "\uFFFD")
	return cut(strings.TrimSpace(text), maxHoverBytes)
}

// wireTextEdit is an LSP TextEdit (or AnnotatedTextEdit).
type wireTextEdit struct {
	Range   *wireRange `json:"range"`
	NewText *string    `json:"newText"`
}

// wireEdit is a decoded WorkspaceEdit: each document's text edits, in the
// order the server gave the documents.
type wireEdit struct {
	uris  []string
	edits map[string][]wireTextEdit
}

// decodeWorkspaceEdit decodes a WorkspaceEdit: its documentChanges when
// it has them (every one a TextDocumentEdit; a file created, renamed or
// deleted is refused), else its changes. Any element Loom cannot read
// refuses the whole edit: half an edit is worse than none.
func decodeWorkspaceEdit(raw json.RawMessage) (wireEdit, *Error) {
	out := wireEdit{edits: map[string][]wireTextEdit{}}
	bad := func(why string) (wireEdit, *Error) {
		return wireEdit{}, &Error{Code: CodeBadEdit, Reason: "the server's edit " + why}
	}
	var w struct {
		Changes         map[string]json.RawMessage `json:"changes"`
		DocumentChanges json.RawMessage            `json:"documentChanges"`
	}
	if json.Unmarshal(raw, &w) != nil {
		return bad("is not a workspace edit")
	}
	count := 0
	addEdits := func(uri string, list json.RawMessage) *Error {
		var edits []wireTextEdit
		if json.Unmarshal(list, &edits) != nil {
			return &Error{Code: CodeBadEdit, Reason: "the server's edit has a list of text edits Loom cannot read"}
		}
		for _, e := range edits {
			if e.Range == nil || e.NewText == nil || !e.Range.valid() {
				return &Error{Code: CodeBadEdit, Reason: "the server's edit has a text edit without a sound range or text"}
			}
		}
		count += len(edits)
		if count > maxEditChanges {
			return &Error{Code: CodeBadEdit, Reason: fmt.Sprintf("the server's edit has more than %d text edits", maxEditChanges)}
		}
		if _, seen := out.edits[uri]; !seen {
			out.uris = append(out.uris, uri)
			if len(out.uris) > maxEditFiles {
				return &Error{Code: CodeBadEdit, Reason: fmt.Sprintf("the server's edit touches more than %d files", maxEditFiles)}
			}
		}
		out.edits[uri] = append(out.edits[uri], edits...)
		return nil
	}
	if dc := bytes.TrimSpace(w.DocumentChanges); len(dc) > 0 && string(dc) != "null" {
		var e *Error
		n := eachElement(dc, func(el json.RawMessage) {
			if e != nil {
				return
			}
			var d struct {
				Kind         string `json:"kind"`
				TextDocument *struct {
					URI string `json:"uri"`
				} `json:"textDocument"`
				Edits json.RawMessage `json:"edits"`
			}
			if json.Unmarshal(el, &d) != nil || d.TextDocument == nil || d.TextDocument.URI == "" {
				e = &Error{Code: CodeBadEdit, Reason: "the server's edit has a document change Loom cannot read"}
				return
			}
			if d.Kind != "" {
				e = &Error{Code: CodeBadEdit, Reason: "the server's edit would " + oneLine(d.Kind, 20) + " a file; Loom lands text edits only"}
				return
			}
			e = addEdits(d.TextDocument.URI, d.Edits)
		})
		if e == nil && n > 0 {
			return bad("is not a list Loom can read")
		}
		if e != nil {
			return wireEdit{}, e
		}
		return out, nil
	}
	// A map's order is not the server's: take the URIs sorted.
	uris := make([]string, 0, len(w.Changes))
	for u := range w.Changes {
		uris = append(uris, u)
	}
	slices.Sort(uris)
	for _, u := range uris {
		if e := addEdits(u, w.Changes[u]); e != nil {
			return wireEdit{}, e
		}
	}
	return out, nil
}

// wireAction is what Loom reads of a CodeAction or Command.
type wireAction struct {
	Title       string          `json:"title"`
	Kind        string          `json:"kind"`
	IsPreferred bool            `json:"isPreferred"`
	Edit        json.RawMessage `json:"edit"`
	Command     json.RawMessage `json:"command"`
	Disabled    *struct {
		Reason string `json:"reason"`
	} `json:"disabled"`
}

// decodeActions decodes the answer to textDocument/codeAction: every
// element counted, at most maxWireItems kept.
func decodeActions(raw json.RawMessage) (items []wireAction, total, bad int) {
	n := eachElement(raw, func(el json.RawMessage) {
		var a wireAction
		if json.Unmarshal(el, &a) != nil || a.Title == "" {
			bad++
			return
		}
		total++
		if len(items) < maxWireItems {
			items = append(items, a)
		}
	})
	return items, total, bad + n
}
