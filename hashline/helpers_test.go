package hashline

import (
	"bytes"
)

// refTo returns a ref to line n of content carrying the line's real anchor,
// or an arbitrary well-formed anchor when content has no line n.
func refTo(content string, n int) *Ref {
	lines := Annotate([]byte(content))
	if n >= 1 && n <= len(lines) {
		return &Ref{Line: n, Anchor: lines[n-1].Anchor}
	}
	return &Ref{Line: n, Anchor: "00000000"}
}

// scanAll is scan keeping every line's span.
func scanAll(content []byte) *lineIndex {
	wanted := make([]int, countLines(content))
	for i := range wanted {
		wanted[i] = i + 1
	}
	return scan(content, wanted)
}

// fataler is what rejoin needs of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// rejoin rebuilds content from its annotation and each line's own break,
// checking on the way that scan, annotate and Digest agree.
func rejoin(t fataler, content []byte) []byte {
	t.Helper()
	lines := Annotate(content)
	x := scanAll(content)
	bomLen, spans, digest := x.skip, x.spans, x.digest
	if x.n != len(spans) || x.n != countLines(content) {
		t.Fatalf("scan counted %d lines, kept %d spans, countLines %d", x.n, len(spans), countLines(content))
	}
	if got, want := formatDigest(digest, len(content)), Digest(content); got != want {
		t.Fatalf("scan digest %s, Digest %s", got, want)
	}
	if _, d := annotate(content); formatDigest(d, len(content)) != Digest(content) {
		t.Fatalf("annotate digest %s, Digest %s", formatDigest(d, len(content)), Digest(content))
	}
	if len(lines) != len(spans) {
		t.Fatalf("Annotate gave %d lines, split %d", len(lines), len(spans))
	}
	var b bytes.Buffer
	b.Write(content[:bomLen])
	for i, l := range lines {
		if l.Number != i+1 {
			t.Fatalf("line %d numbered %d", i+1, l.Number)
		}
		if l.Anchor != AnchorOf(l.Text) {
			t.Fatalf("line %d anchor %q, AnchorOf(text) = %q", i+1, l.Anchor, AnchorOf(l.Text))
		}
		b.WriteString(l.Text)
		b.Write(content[spans[i].textEnd:spans[i].end])
	}
	return b.Bytes()
}

// parseRendered is the inverse of RenderLine, used to check round trips.
func parseRendered(s string) (Line, bool) {
	if !HasDisplayPrefix(s) {
		return Line{}, false
	}
	colon := bytes.IndexByte([]byte(s), ':')
	r, err := ParseRef(s[:colon+1+AnchorLen])
	if err != nil {
		return Line{}, false
	}
	return Line{Number: r.Line, Anchor: r.Anchor, Text: s[colon+1+AnchorLen+1:]}, true
}
