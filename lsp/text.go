package lsp

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentloom/loom/hashline"
	"github.com/agentloom/loom/internal/pinnedfs"
	"github.com/agentloom/loom/tool"
)

// maxReadBytes bounds what one answer reads of the workspace's files to
// anchor its sites; a site in a file past it has no anchor.
const maxReadBytes = 64 << 20

// text is one file's content cut into lines the way hashline cuts it: a
// line ends at LF, a CR before it belongs to the terminator, and a
// leading byte-order mark belongs to no line. A server's positions are
// read against these lines (a lone CR, a line break to LSP, is not one
// here).
type text struct {
	content []byte
	skip    int   // the byte-order mark's length
	starts  []int // each line's first byte
}

func newText(content []byte) *text {
	t := &text{content: content}
	if bytes.HasPrefix(content, []byte("\xef\xbb\xbf")) {
		t.skip = 3
	}
	for pos := t.skip; pos < len(content); {
		t.starts = append(t.starts, pos)
		i := bytes.IndexByte(content[pos:], '\n')
		if i < 0 {
			break
		}
		pos += i + 1
	}
	return t
}

// lines is the number of lines.
func (t *text) lines() int { return len(t.starts) }

// line returns line i's (0-based) text, without its terminator.
func (t *text) line(i int) string {
	start := t.starts[i]
	end := len(t.content)
	if i+1 < len(t.starts) {
		end = t.starts[i+1] - 1
		if end > start && t.content[end-1] == '\r' {
			end--
		}
	}
	return string(t.content[start:end])
}

// offset returns the byte offset of the LSP position p (0-based line,
// UTF-16 character), a character past its line's end taken as the end
// (as LSP says), the position just past the last line taken as the
// content's end; ok is false for a line past that, or a negative one.
func (t *text) offset(p wirePos) (int, bool) {
	n := int64(len(t.starts))
	switch {
	case p.Line < 0 || p.Character < 0:
		return 0, false
	case p.Line < n:
		l := t.line(int(p.Line))
		return t.starts[p.Line] + byteOfUTF16(l, p.Character), true
	case p.Line == n || (n == 0 && p.Line == 0):
		return len(t.content), true
	}
	return 0, false
}

// byteOfUTF16 is the byte offset in s of the UTF-16 offset ch, at most
// len(s); a character cut in two is taken at its start.
func byteOfUTF16(s string, ch int64) int {
	var u int64
	for i, r := range s {
		w := int64(1)
		if r >= 0x10000 {
			w = 2
		}
		if u+w > ch {
			return i
		}
		u += w
	}
	return len(s)
}

// runeColumn is the 1-based column, in characters (runes), of the
// UTF-16 offset ch in s, at most one past its last character.
func runeColumn(s string, ch int64) int {
	return utf8.RuneCountInString(s[:byteOfUTF16(s, ch)]) + 1
}

// utf16Of is the UTF-16 offset of the 1-based character column col in
// s, at most s's length.
func utf16Of(s string, col int) int64 {
	var u int64
	n := 1
	for _, r := range s {
		if n >= col {
			break
		}
		if r >= 0x10000 {
			u += 2
		} else {
			u++
		}
		n++
	}
	return u
}

// files reads workspace files for one answer, through a root the
// workspace is opened as: a link out of it is never followed, a name
// that is not a regular file is refused, and all it reads together is
// bounded by maxReadBytes.
type files struct {
	ws    string
	root  *os.Root
	err   error
	read  int
	texts map[string]*text
	errs  map[string]error
}

func (p *Plane) files() *files {
	f := &files{ws: p.ws, texts: map[string]*text{}, errs: map[string]error{}}
	f.root, f.err = os.OpenRoot(p.ws)
	return f
}

func (f *files) close() {
	if f.root != nil {
		f.root.Close()
	}
}

// errReadBound is returned once an answer read maxReadBytes.
var errReadBound = errors.New("the answer read as much of the workspace as it may")

// text returns the content of the file at the absolute path abs under the
// workspace.
func (f *files) text(abs string) (*text, error) {
	if t := f.texts[abs]; t != nil {
		return t, nil
	}
	if err := f.errs[abs]; err != nil {
		return nil, err
	}
	if f.err != nil {
		return nil, f.err
	}
	rel, err := filepath.Rel(f.ws, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, errors.New("not under the workspace")
	}
	if f.read >= maxReadBytes {
		return nil, errReadBound
	}
	data, err := pinnedfs.ReadRegular(f.root, rel, min(tool.MaxFileBytes, int64(maxReadBytes-f.read)))
	if err != nil {
		f.errs[abs] = err
		return nil, err
	}
	f.read += len(data)
	t := newText(data)
	f.texts[abs] = t
	return t, nil
}

// site makes the Site of l (its uri already found under the workspace,
// at abs): the 1-based line and column, and the line's anchor and text
// when the file reads and holds the line.
func (f *files) site(abs string, l wireLoc) Site {
	s := Site{
		Path:   f.rel(abs),
		Line:   int(l.Range.Start.Line) + 1,
		Column: int(l.Range.Start.Character) + 1,
		Name:   l.Name,
		Kind:   symbolKind(l.Kind),
	}
	if l.Name != "" {
		s.Container = l.Container
	}
	if t, err := f.text(abs); err == nil && l.Range.Start.Line < int64(t.lines()) {
		line := t.line(int(l.Range.Start.Line))
		s.Column = runeColumn(line, l.Range.Start.Character)
		s.Anchor = hashline.AnchorOf(line)
		s.Text = oneLine(strings.TrimSpace(line), maxSiteTextBytes)
	}
	return s
}

// rel is abs relative to the workspace, slash-separated.
func (f *files) rel(abs string) string {
	r, err := filepath.Rel(f.ws, abs)
	if err != nil {
		return abs
	}
	return filepath.ToSlash(r)
}

// symbolKinds names LSP's SymbolKinds (1 to 26).
var symbolKinds = [...]string{"", "file", "module", "namespace", "package", "class", "method", "property", "field",
	"constructor", "enum", "interface", "function", "variable", "constant", "string", "number", "boolean", "array",
	"object", "key", "null", "enum_member", "struct", "event", "operator", "type_parameter"}

func symbolKind(k int64) string {
	if k >= 1 && k < int64(len(symbolKinds)) {
		return symbolKinds[k]
	}
	return ""
}

// position is the 1-based line and character column of the byte offset
// off (not inside a line's terminator); the content's end after a final
// line break is one past the last line, column 1.
func (t *text) position(off int) (line, col int) {
	i, found := slices.BinarySearch(t.starts, off)
	if !found {
		i--
	}
	if i < 0 {
		return 1, 1
	}
	if off == len(t.content) && i == len(t.starts)-1 && len(t.content) > t.starts[i] && t.content[len(t.content)-1] == '\n' {
		return len(t.starts) + 1, 1
	}
	return i + 1, utf8.RuneCount(t.content[t.starts[i]:off]) + 1
}

// offsetOf is the byte offset of the 1-based line and character column
// as position gives them; ok is false past the content.
func (t *text) offsetOf(line, col int) (int, bool) {
	switch {
	case line < 1 || col < 1:
		return 0, false
	case line > len(t.starts):
		if line == len(t.starts)+1 && col == 1 {
			return len(t.content), true
		}
		return 0, false
	}
	l := t.line(line - 1)
	if n := utf8.RuneCountInString(l); col > n+1 {
		return 0, false
	}
	return t.starts[line-1] + byteOfUTF16(l, utf16Of(l, col)), true
}

func digestOf(content []byte) string { return hashline.Digest(content) }

func anchorOf(line string) string { return hashline.AnchorOf(line) }
