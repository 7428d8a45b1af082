package tool

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentloom/loom/sandbox"
)

// SubjectKind says what a Subject's text is.
type SubjectKind string

// The kinds of Subject the module's tools raise. A host's own tool may
// use another kind; Describe shows it escaped.
const (
	// SubjectCommand: Text is a shell command line, run as the shell's
	// -c argument in Dir.
	SubjectCommand SubjectKind = "command"
	// SubjectProgram: Text is a program's whole source, exactly as it is
	// built and run; Path is the file it was read from ("" when the call
	// gave it inline).
	SubjectProgram SubjectKind = "program"
	// SubjectContent: Text is the whole content a file tool writes;
	// Path is the file it replaces or creates.
	SubjectContent SubjectKind = "content"
)

// Subject is what a raised refusal's grants would act on, as the tool
// will run it: the tool's own snapshot, taken before the raise and never
// read again after the answer, so what an operator is shown is what
// runs. Only Text runs; Path and Dir say where it came from and where it
// runs.
type Subject struct {
	Kind SubjectKind
	// Text is the exact command line or source that runs.
	Text string
	// Path is the file a program was read from, as the file tools show
	// it (relative to the workspace when under it), or the file content
	// is written to (absolute); "" for an inline program or a command.
	Path string
	// Dir is the directory a command runs in; "" for a program.
	Dir string
}

// Digest is the hex SHA-256 of Text: what an operator compares with a
// file (sha256sum) or a log to know the text shown is the text that runs.
func (s *Subject) Digest() string {
	sum := sha256.Sum256([]byte(s.Text))
	return hex.EncodeToString(sum[:])
}

// QuoteWidth is the most columns of model text one line of Quote holds
// after its two-column gutter, counting every rune outside ASCII as two:
// longer lines are folded, so a display at least QuoteWidth+2 columns
// wide never wraps a line of model text onto a line of its own.
const QuoteWidth = 78

// The marks Quote and Escape write around model text. The gutters open
// every line of a block; the cut line closes a block that was cut.
const (
	quoteGutter = "│ " // opens each line of the text
	foldGutter  = "┆ " // continues a line folded at QuoteWidth
	cutMark     = "┄ " // opens the line saying where a block was cut
)

// Bounds of what Describe shows besides the text that runs.
const (
	// describedWhereBytes bounds the block naming a program's file or a
	// command's directory.
	describedWhereBytes = 512
	// describedReasonBytes bounds the block quoting the denial's reason.
	describedReasonBytes = 512
	// describedMinTextBytes is the least of a long text Describe shows:
	// with less room it describes nothing.
	describedMinTextBytes = 256
	// maxMarks is how many combining marks in a row pass unescaped; more
	// could be stacked to draw over neighbouring lines.
	maxMarks = 2
)

// Escape renders s on one line an operator can read without being
// misled: printable runes known safe pass (ASCII from space to tilde;
// letters, marks, numbers, punctuation and symbols elsewhere, less the
// default-ignorable ones, the blank braille cell, the halfwidth and
// fullwidth forms and more than two combining marks in a row), a
// tab is shown as "→" and three spaces, and every other rune or invalid
// byte is written visibly between guillemets: «LF», «CR», «ESC», «NUL»,
// «DEL», «U+202E», «0xFF». So no control sequence, line or paragraph
// separator, bidirectional control or invisible rune survives, and "«"
// and "→" in s are escaped too, which keeps the rendering one-to-one:
// distinct strings never render alike.
func Escape(s string) string {
	var b strings.Builder
	for t := range pieces(s) {
		b.WriteString(t.out)
	}
	return b.String()
}

// Quote renders s as a block of at most maxBytes bytes an operator reads
// in a terminal or a dialog, no line of which can pass for the host's
// own: each line of s opens with the gutter "│ ", is escaped as Escape
// escapes it (a line feed ends the line instead), and is folded past
// QuoteWidth columns onto lines opening with "┆ ". Every line of the
// block, the last included, ends with a line feed. When the whole does
// not fit, the block holds as many whole runes as fit and ends with a
// line opening "┄ " that says how many bytes of s are shown; when not
// even one rune of s fits with that line, Quote returns "".
func Quote(s string, maxBytes int) string {
	b, _ := quote(s, maxBytes)
	return b
}

// quote is Quote, saying how many bytes of s the block shows.
func quote(s string, maxBytes int) (string, int) { return quoteText(s, maxBytes, false) }

// quoteText is quote; with ascii, every rune outside printable ASCII is
// escaped, as a shell command is shown: a shell splits words and reads
// its syntax in ASCII only, so any other rune there is data that may
// look like syntax (U+FF03 like "#", U+2800 like a blank).
func quoteText(s string, maxBytes int, ascii bool) (string, int) {
	q := quoter{first: quoteGutter}
	for t := range piecesOf(s, ascii) {
		q.add(t)
	}
	q.close()
	if q.b.Len() <= maxBytes {
		return q.b.String(), len(s)
	}
	q = quoter{first: quoteGutter, room: maxBytes - len(cutLine(len(s), len(s))), bounded: true}
	shown := 0
	for t := range piecesOf(s, ascii) {
		if !q.add(t) {
			break
		}
		shown = t.end
	}
	if shown == 0 {
		return "", 0
	}
	q.close()
	return q.b.String() + cutLine(shown, len(s)), shown
}

// cutLine says that shown of total bytes are above it.
func cutLine(shown, total int) string {
	return cutMark + "cut: the first " + strconv.Itoa(shown) + " of " + strconv.Itoa(total) + " bytes are shown\n"
}

// Describe renders r for an operator asked to approve it, in at most
// maxBytes: every grant wanted on a line of its own, then what runs (the
// Subject's kind, size and SHA-256, the file it was read from or the
// directory it runs in, and its text), then why it was refused. Every
// value a model influences is escaped (Escape) and every text is a block
// (Quote), so no part of it can pass for a line of the host's own; a
// command's text shows printable ASCII only, every other rune escaped. A text
// too long for the room left is cut, saying where, and its digest names
// the whole; the reason is left out before the text is cut further. ok
// is false when the grants do not fit, or what runs does not with at
// least its first 256 bytes: nobody should be asked to grant what is not
// shown, nor for work that is not shown.
func (r RaisedRefusal) Describe(maxBytes int) (string, bool) {
	var grants strings.Builder
	if r.Denial != nil {
		for _, g := range r.Denial.Wanted {
			grants.WriteString(grantLine(g))
		}
	}
	room := maxBytes - grants.Len()
	if room < 0 {
		return "", false
	}
	reason := ""
	if r.Denial != nil && r.Denial.Reason != "" {
		if q := Quote(r.Denial.Reason, describedReasonBytes); q != "" {
			reason = "Why it was refused:\n" + q
		}
	}
	if r.Subject == nil {
		if len(reason) > room {
			reason = ""
		}
		return grants.String() + reason, true
	}
	if len(reason) <= room {
		if s, whole, ok := r.Subject.describe(room - len(reason)); ok && whole {
			return grants.String() + s + reason, true
		}
	}
	s, _, ok := r.Subject.describe(room)
	if !ok {
		return "", false
	}
	return grants.String() + s, true
}

// grantLine is g as a line of its own: "- " and its kind, then its path
// escaped and folded.
func grantLine(g sandbox.Grant) string {
	head := "- " + Escape(string(g.Kind))
	if g.Path == "" {
		return head + "\n"
	}
	q := quoter{first: head + " ", lead: columns(head) - 1}
	for t := range pieces(g.Path) {
		t.nl = false // shown as «LF»: a grant is one line
		q.add(t)
	}
	q.close()
	return q.b.String()
}

// describe is s in at most room bytes: its header, where it came from
// and its text, the text cut to fit (whole says it was not); ok is false
// when the header, the where block and a cut text's last line do not
// all fit.
func (s *Subject) describe(room int) (d string, whole, ok bool) {
	head, where, label := s.parts()
	used := len(head) + len(label)
	if where != "" {
		w := Quote(where, min(describedWhereBytes, room-used))
		if w == "" {
			return "", false, false
		}
		head += w
		used += len(w)
	}
	text, shown := quoteText(s.Text, room-used, s.Kind == SubjectCommand)
	if shown < min(len(s.Text), describedMinTextBytes) || text == "" {
		return "", false, false
	}
	return head + label + text, shown == len(s.Text), true
}

// parts are s's header line, the value of its where block ("" for none)
// and the label of its text block.
func (s *Subject) parts() (head, where, label string) {
	size := fmt.Sprintf("(%d bytes, sha256 %s)", len(s.Text), s.Digest())
	switch {
	case s.Kind == SubjectCommand && s.Dir != "":
		return "What runs is this command " + size + ", in the directory:\n", s.Dir, "The command:\n"
	case s.Kind == SubjectCommand:
		return "What runs is this command " + size + ":\n", "", ""
	case s.Kind == SubjectProgram && s.Path != "":
		return "What runs is this program " + size + ", as read from the file:\n", s.Path,
			"The program (this text runs, whatever the file holds now):\n"
	case s.Kind == SubjectProgram:
		return "What runs is this program " + size + ", given inline:\n", "", ""
	case s.Kind == SubjectContent:
		return "What is written is this content " + size + ", to the file:\n", s.Path,
			"The content (this text lands, whatever the file holds now):\n"
	}
	head = "What runs (" + Escape(string(s.Kind)) + ", " + size[1:] + ":\n"
	switch {
	case s.Path != "":
		return head, s.Path, "Its text:\n"
	case s.Dir != "":
		return head, s.Dir, "Its text:\n"
	}
	return head, "", ""
}

// piece is one rune of model text (or one invalid byte) as rendered.
type piece struct {
	end  int    // offset just past it in the text
	out  string // its rendering on one line
	cols int    // the columns out takes, non-ASCII runes counted as two
	nl   bool   // a line feed: Quote ends the line instead of writing out
}

// pieces yields s a rune (or an invalid byte) at a time, each rendered
// as Escape renders it.
func pieces(s string) func(yield func(piece) bool) { return piecesOf(s, false) }

// piecesOf is pieces; with ascii, every rune outside printable ASCII is
// escaped.
func piecesOf(s string, ascii bool) func(yield func(piece) bool) {
	return func(yield func(piece) bool) {
		marks := 0
		for i := 0; i < len(s); {
			r, size := utf8.DecodeRuneInString(s[i:])
			out := ""
			switch {
			case r == utf8.RuneError && size == 1:
				out = fmt.Sprintf("«0x%02X»", s[i])
			case r == '\t':
				out = "→   "
			case ascii && r >= utf8.RuneSelf:
				out = escapeRune(r)
			case safe(r) && (marks < maxMarks || !unicode.Is(unicode.M, r)):
				out = s[i : i+size]
			default:
				out = escapeRune(r)
			}
			if unicode.Is(unicode.M, r) {
				marks++
			} else {
				marks = 0
			}
			i += size
			if !yield(piece{end: i, out: out, cols: columns(out), nl: r == '\n'}) {
				return
			}
		}
	}
}

// safe reports whether r is known to print as itself on one line.
func safe(r rune) bool {
	switch {
	case r >= 0x20 && r < 0x7f:
		return true
	case r < utf8.RuneSelf, r == '«', r == '→':
		return false
	case unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r), unicode.Is(unicode.Variation_Selector, r):
		return false
	case r == 0x2800, r >= 0xff00 && r <= 0xffef:
		// A blank braille cell prints as a space; the halfwidth and
		// fullwidth forms print as the ASCII they copy.
		return false
	}
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S)
}

// runeNames are the escapes written by name.
var runeNames = map[rune]string{0: "NUL", '\n': "LF", '\r': "CR", 0x1b: "ESC", 0x7f: "DEL"}

// escapeRune is r written visibly between guillemets.
func escapeRune(r rune) string {
	if n, ok := runeNames[r]; ok {
		return "«" + n + "»"
	}
	return fmt.Sprintf("«U+%04X»", r)
}

// columns is how many columns s takes at most: one per ASCII rune, two
// for any other.
func columns(s string) int {
	n := 0
	for _, r := range s {
		if r < utf8.RuneSelf {
			n++
		} else {
			n += 2
		}
	}
	return n
}

// quoter writes pieces as lines opening with first, folded at QuoteWidth;
// when bounded, within room bytes.
type quoter struct {
	b       strings.Builder
	first   string // the gutter of each line of the text
	lead    int    // columns first takes beyond a two-column gutter
	col     int    // columns of model text on the open line
	open    bool   // a line is open (its gutter written)
	room    int
	bounded bool
}

// add writes t, or reports false when bounded and it does not fit with
// the line feed that closes its line.
func (q *quoter) add(t piece) bool {
	var pre string
	switch {
	case !q.open:
		pre = q.first
	case !t.nl && q.col+t.cols > QuoteWidth:
		pre = "\n" + foldGutter
	}
	out := t.out
	if t.nl {
		out = "\n"
	}
	if q.bounded {
		need := len(pre) + len(out) + 1 // the line feed closing the line
		if t.nl {
			need = len(pre) + 1 + len(q.first) + 1 // this line closed, the next one opened and closed
		}
		if q.b.Len()+need > q.room {
			return false
		}
	}
	q.b.WriteString(pre)
	switch {
	case !q.open:
		q.col = q.lead
	case pre != "":
		q.col = 0
	}
	q.open = true
	if t.nl {
		q.b.WriteString("\n" + q.first)
		q.col = q.lead
		return true
	}
	q.b.WriteString(out)
	q.col += t.cols
	return true
}

// close ends the open line, opening one first when none is (an empty
// text is one empty line).
func (q *quoter) close() {
	if !q.open {
		q.b.WriteString(q.first)
	}
	q.b.WriteString("\n")
	q.open = false
}
