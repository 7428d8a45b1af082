package lsp

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

const fuzzWS = "/ws"

// FuzzDecodeAnswers: whatever a server answers, decoding it as any
// operation's answer never panics, keeps at most maxWireItems sites,
// each with a sound range under the workspace, hover text within
// maxHoverBytes and valid UTF-8, and an edit within its bounds.
func FuzzDecodeAnswers(f *testing.F) {
	f.Add([]byte(`[{"uri":"file:///ws/a.go","range":{"start":{"line":1,"character":2},"end":{"line":1,"character":4}}}]`))
	f.Add([]byte(`{"uri":"file:///etc/passwd","range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}}}`))
	f.Add([]byte(`[{"targetUri":"file:///ws/a","targetSelectionRange":{"start":{"line":-1,"character":0},"end":{"line":0,"character":0}}},7,null,"x"]`))
	f.Add([]byte(`[{"name":"T","kind":5,"range":{"start":{"line":0,"character":0},"end":{"line":9,"character":0}},"selectionRange":{"start":{"line":0,"character":5},"end":{"line":0,"character":6}},"children":[{"name":"M","kind":6,"selectionRange":{"start":{"line":2,"character":0},"end":{"line":2,"character":1}}}]}]`))
	f.Add([]byte(`[{"from":{"name":"f","uri":"file:///ws/a","selectionRange":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}}},"fromRanges":[{"start":{"line":3,"character":1},"end":{"line":3,"character":2}}]}]`))
	f.Add([]byte(`{"contents":[{"language":"go","value":"func F()"},"doc \xff"]}`))
	f.Add([]byte(`{"documentChanges":[{"textDocument":{"uri":"file:///ws/a"},"edits":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}},"newText":"x"}]},{"kind":"create","uri":"file:///ws/b"}]}`))
	f.Add([]byte(`{"changes":{"file:///ws/a":[{"range":{"start":{"line":1099511627776,"character":0},"end":{"line":0,"character":0}},"newText":""}]}}`))
	f.Add([]byte(`[{"title":"fix","kind":"quickfix","edit":{"changes":{}}},{"title":"cmd","command":"x"}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		for i, w := range []wireLocs{decodeLocations(data, fuzzWS), decodeSymbols(data, "file:///ws/doc", fuzzWS), decodeCalls(data, true, fuzzWS), decodeCalls(data, false, fuzzWS)} {
			if len(w.items) > maxWireItems || w.bad < 0 || w.extra < 0 || w.outside < 0 {
				t.Fatalf("decoder %d: %d items, counts %d %d %d", i, len(w.items), w.bad, w.extra, w.outside)
			}
			for _, l := range w.items {
				if !l.Range.valid() || !under(l.URI, fuzzWS) || len(l.Name) > maxNameBytes || len(l.Container) > maxNameBytes {
					t.Fatalf("decoder %d kept %+v", i, l)
				}
			}
		}
		items, bad := decodeCallItems(data)
		for _, it := range items {
			if it.SelectionRange == nil || !it.SelectionRange.valid() || !json.Valid(it.raw) || bad < 0 {
				t.Fatalf("call item %+v", it)
			}
		}
		if h := decodeHover(data); len(h) > maxHoverBytes || !utf8.ValidString(h) {
			t.Fatalf("hover of %d bytes, valid %v", len(h), utf8.ValidString(h))
		}
		if e, err := decodeWorkspaceEdit(data); err == nil {
			n := 0
			for _, u := range e.uris {
				for _, te := range e.edits[u] {
					if te.Range == nil || te.NewText == nil || !te.Range.valid() {
						t.Fatalf("kept a text edit %+v", te)
					}
					n++
				}
			}
			if len(e.uris) > maxEditFiles || n > maxEditChanges || len(e.edits) != len(e.uris) {
				t.Fatalf("an edit of %d files, %d changes", len(e.uris), n)
			}
		} else if err.Code != CodeBadEdit {
			t.Fatalf("refused with %v", err)
		}
		acts, total, _ := decodeActions(data)
		if len(acts) > total || len(acts) > maxWireItems {
			t.Fatalf("%d actions of %d", len(acts), total)
		}
	})
}

// FuzzTextPositions: for any content, a server's position maps to a
// byte offset within it, and Loom's own (line, column) of an offset maps
// back to that offset, so a previewed change lands where it was planned.
func FuzzTextPositions(f *testing.F) {
	f.Add([]byte("a\nb\r\nc"), int64(1), int64(1))
	f.Add([]byte("\xef\xbb\xbfé😀x\n"), int64(0), int64(3))
	f.Add([]byte(""), int64(0), int64(0))
	f.Add([]byte("\n\n"), int64(2), int64(0))
	f.Fuzz(func(t *testing.T, content []byte, line, ch int64) {
		tx := newText(content)
		off, ok := tx.offset(wirePos{Line: line, Character: ch})
		if !ok {
			if line >= 0 && line < int64(tx.lines()) && ch >= 0 {
				t.Fatalf("line %d of %d refused", line, tx.lines())
			}
			return
		}
		if off < 0 || off > len(content) {
			t.Fatalf("offset %d of %d bytes", off, len(content))
		}
		l, c := tx.position(off)
		back, ok := tx.offsetOf(l, c)
		if !ok || back != off {
			t.Fatalf("offset %d is (%d, %d), which maps to %d (%v); content %q", off, l, c, back, ok, content)
		}
		if after, err := applyChanges(content, []Change{{Line: l, Column: c, EndLine: l, EndColumn: c, NewText: "X"}}); err != nil ||
			!bytes.Equal(after, append(append(bytes.Clone(content[:off]), 'X'), content[off:]...)) {
			t.Fatalf("inserting at (%d, %d): %q %v", l, c, after, err)
		}
	})
}
