package main

// The language operations of -mode lang, over the *.txt files of the
// working directory (the workspace), a document held open read as it was
// last sent. A line "def NAME" defines NAME (a dotted name: "T.Greet" is
// Greet in T); every other occurrence of a word is a reference; a line
// "call NAME" under a def is a call of NAME from that def. A position
// names the word under it.
//
// Words that make the answers hostile:
//
//	HUGE      references: 20000 sites in the file, 5 outside the
//	          workspace, 6 malformed elements
//	ESCAPE    rename: an edit also touching /etc/passwd
//	BADRANGE  rename: an edit at line 999999; definition: sites with
//	          negative, huge and reversed ranges
//	OVERLAP   rename: two overlapping changes
//	CREATE    rename: a file created
//	DUP       workspace/symbol: three symbols named DUP
//
// Code actions: for each line of the range holding "ERR", a quick fix
// "Replace ERR on line N" replacing it with "OK"; and one action that is
// a command only.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

var opened = map[string]string{}

type pos struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

type rng struct {
	Start pos `json:"start"`
	End   pos `json:"end"`
}

type loc struct {
	URI   string `json:"uri"`
	Range rng    `json:"range"`
}

var word = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

func cwdURI() string {
	d, _ := os.Getwd()
	return "file://" + d
}

// texts is every *.txt file of the workspace, by URI.
func texts() map[string]string {
	out := map[string]string{}
	names, _ := filepath.Glob("*.txt")
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err == nil {
			out[cwdURI()+"/"+n] = string(b)
		}
	}
	for u, t := range opened {
		out[u] = t
	}
	return out
}

func sortedURIs(m map[string]string) []string {
	var us []string
	for u := range m {
		us = append(us, u)
	}
	sort.Strings(us)
	return us
}

// wordAt is the word under p in the document uri.
func wordAt(uri string, p pos) string {
	t, ok := texts()[uri]
	if !ok {
		return ""
	}
	lines := strings.Split(t, "\n")
	if p.Line < 0 || p.Line >= len(lines) {
		return ""
	}
	for _, m := range word.FindAllStringIndex(lines[p.Line], -1) {
		if m[0] <= p.Character && p.Character <= m[1] {
			return lines[p.Line][m[0]:m[1]]
		}
	}
	return ""
}

// occurrences are every site of w as a whole word.
func occurrences(w string) []loc {
	var out []loc
	all := texts()
	for _, u := range sortedURIs(all) {
		for i, l := range strings.Split(all[u], "\n") {
			for _, m := range word.FindAllStringIndex(l, -1) {
				if l[m[0]:m[1]] == w {
					out = append(out, loc{u, rng{pos{i, m[0]}, pos{i, m[1]}}})
				}
			}
		}
	}
	return out
}

// def is the site of "def ...w": the last part of its dotted name.
type def struct {
	name string // the dotted name
	at   loc
}

func defs() []def {
	var out []def
	all := texts()
	for _, u := range sortedURIs(all) {
		for i, l := range strings.Split(all[u], "\n") {
			if name, ok := strings.CutPrefix(l, "def "); ok {
				last := name[strings.LastIndex(name, ".")+1:]
				c := strings.LastIndex(l, last)
				out = append(out, def{name, loc{u, rng{pos{i, c}, pos{i, c + len(last)}}}})
			}
		}
	}
	return out
}

func defOf(w string) *def {
	for _, d := range defs() {
		if d.name == w || strings.HasSuffix(d.name, "."+w) {
			return &d
		}
	}
	return nil
}

// enclosing is the def a line of uri is under.
func enclosing(uri string, line int) *def {
	var best *def
	for _, d := range defs() {
		if d.at.URI == uri && d.at.Range.Start.Line <= line {
			best = &d
		}
	}
	return best
}

func item(d def) map[string]any {
	return map[string]any{"name": d.name[strings.LastIndex(d.name, ".")+1:], "kind": 12, "uri": d.at.URI, "range": d.at.Range, "selectionRange": d.at.Range, "data": map[string]string{"def": d.name}}
}

func edits(w, newName string) map[string]any {
	var changes []map[string]any
	byURI := map[string][]map[string]any{}
	var order []string
	for _, o := range occurrences(w) {
		if byURI[o.URI] == nil {
			order = append(order, o.URI)
		}
		byURI[o.URI] = append(byURI[o.URI], map[string]any{"range": o.Range, "newText": newName})
	}
	for _, u := range order {
		changes = append(changes, map[string]any{"textDocument": map[string]any{"uri": u, "version": nil}, "edits": byURI[u]})
	}
	switch w {
	case "ESCAPE":
		changes = append(changes, map[string]any{"textDocument": map[string]any{"uri": "file:///etc/passwd"}, "edits": []any{map[string]any{"range": rng{}, "newText": "evil::0:0\n"}}})
	case "BADRANGE":
		changes[0]["edits"] = []any{map[string]any{"range": rng{pos{999999, 0}, pos{999999, 1}}, "newText": "x"}}
	case "OVERLAP":
		r := occurrences(w)[0].Range
		changes[0]["edits"] = []any{map[string]any{"range": r, "newText": "a"}, map[string]any{"range": rng{r.Start, pos{r.Start.Line, r.Start.Character + 1}}, "newText": "b"}}
	case "CREATE":
		changes = append(changes, map[string]any{"kind": "create", "uri": cwdURI() + "/new.txt"})
	}
	return map[string]any{"documentChanges": changes}
}

func answer(method string, raw json.RawMessage) any {
	var p struct {
		TextDocument struct {
			URI string `json:"uri"`
		} `json:"textDocument"`
		Position pos    `json:"position"`
		Query    string `json:"query"`
		NewName  string `json:"newName"`
		Range    rng    `json:"range"`
		Item     struct {
			Data struct {
				Def string `json:"def"`
			} `json:"data"`
		} `json:"item"`
	}
	json.Unmarshal(raw, &p)
	w := wordAt(p.TextDocument.URI, p.Position)
	switch method {
	case "textDocument/definition", "textDocument/implementation":
		if w == "BADRANGE" {
			u := p.TextDocument.URI
			return []any{
				loc{u, rng{pos{-1, 0}, pos{0, 0}}},
				map[string]any{"uri": u, "range": map[string]any{"start": map[string]int{"line": 1 << 40}, "end": map[string]int{"line": 1 << 40}}},
				loc{u, rng{pos{3, 0}, pos{1, 0}}},
				map[string]any{"uri": u},
				"nonsense",
				map[string]any{"targetUri": u, "targetSelectionRange": rng{pos{0, 0}, pos{0, 3}}, "targetRange": rng{}},
			}
		}
		if d := defOf(w); d != nil {
			return d.at
		}
		return nil
	case "textDocument/references":
		out := []any{}
		for _, o := range occurrences(w) {
			out = append(out, o)
		}
		if w == "HUGE" {
			u := p.TextDocument.URI
			for i := 0; i < 20000; i++ {
				out = append(out, loc{u, rng{pos{i, 0}, pos{i, 1}}})
			}
			for _, o := range []string{"file:///etc/passwd", "file://evil.example/x.txt", cwdURI() + "/../outside.txt", "https://example.com/x", "file:///usr/lib/go/src/fmt/print.go"} {
				out = append(out, loc{o, rng{}})
			}
			out = append(out, 7, "x", nil, map[string]any{"uri": u, "range": "r"}, loc{u, rng{pos{-5, 0}, pos{-5, 0}}}, loc{"", rng{}})
		}
		return out
	case "textDocument/hover":
		if w == "" {
			return nil
		}
		return map[string]any{"contents": map[string]string{"kind": "markdown", "value": "hover of **" + w + "**"}}
	case "textDocument/documentSymbol":
		var children []any
		for _, d := range defs() {
			if d.at.URI == p.TextDocument.URI {
				children = append(children, map[string]any{"name": d.name, "kind": 12, "range": d.at.Range, "selectionRange": d.at.Range})
			}
		}
		return []any{map[string]any{"name": "file", "kind": 1, "range": rng{}, "selectionRange": rng{}, "children": children}}
	case "workspace/symbol":
		out := []any{}
		q := p.Query[strings.LastIndexAny(p.Query, "./")+1:]
		for _, d := range defs() {
			if strings.Contains(d.name, q) {
				out = append(out, map[string]any{"name": d.name, "kind": 12, "containerName": "pkg", "location": d.at})
			}
		}
		if q == "DUP" {
			for i := 0; i < 3; i++ {
				out = append(out, map[string]any{"name": "DUP", "kind": 12, "containerName": "pkg" + string(rune('a'+i)), "location": loc{cwdURI() + "/a.txt", rng{pos{i, 0}, pos{i, 3}}}})
			}
		}
		return out
	case "textDocument/prepareCallHierarchy":
		if d := defOf(w); d != nil {
			return []any{item(*d)}
		}
		return nil
	case "callHierarchy/incomingCalls":
		name := p.Item.Data.Def
		w := name[strings.LastIndex(name, ".")+1:]
		out := []any{}
		for _, o := range occurrences(w) {
			line := strings.Split(texts()[o.URI], "\n")[o.Range.Start.Line]
			if strings.HasPrefix(line, "call ") {
				if d := enclosing(o.URI, o.Range.Start.Line); d != nil {
					out = append(out, map[string]any{"from": item(*d), "fromRanges": []rng{o.Range}})
				}
			}
		}
		return out
	case "callHierarchy/outgoingCalls":
		d := defOf(p.Item.Data.Def)
		out := []any{}
		if d == nil {
			return out
		}
		lines := strings.Split(texts()[d.at.URI], "\n")
		for i := d.at.Range.Start.Line + 1; i < len(lines) && !strings.HasPrefix(lines[i], "def "); i++ {
			if callee, ok := strings.CutPrefix(lines[i], "call "); ok {
				if cd := defOf(callee); cd != nil {
					out = append(out, map[string]any{"to": item(*cd), "fromRanges": []rng{{pos{i, 5}, pos{i, 5 + len(callee)}}}})
				}
			}
		}
		return out
	case "textDocument/rename":
		return edits(w, p.NewName)
	case "textDocument/codeAction":
		out := []any{map[string]any{"title": "Run a command", "command": "fake.cmd", "arguments": []any{}}}
		t := texts()[p.TextDocument.URI]
		for i, l := range strings.Split(t, "\n") {
			if i < p.Range.Start.Line || i > p.Range.End.Line {
				continue
			}
			if c := strings.Index(l, "ERR"); c >= 0 {
				out = append(out, map[string]any{
					"title": "Replace ERR on line " + itoa(i+1), "kind": "quickfix", "isPreferred": true,
					"edit": map[string]any{"changes": map[string]any{p.TextDocument.URI: []any{map[string]any{"range": rng{pos{i, c}, pos{i, c + 3}}, "newText": "OK"}}}},
				})
			}
			if strings.Contains(l, "BADFIX") {
				out = append(out, map[string]any{"title": "A fix past the end", "kind": "quickfix",
					"edit": map[string]any{"changes": map[string]any{p.TextDocument.URI: []any{map[string]any{"range": rng{pos{4000, 0}, pos{4000, 1}}, "newText": "x"}}}}})
			}
		}
		return out
	}
	return nil
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
