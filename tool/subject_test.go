package tool

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/agentloom/loom/sandbox"
)

// TestEscapeEveryClass: each class of rune a model could use to draw on
// an operator's screen is written visibly, and what is known to print as
// itself passes.
func TestEscapeEveryClass(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in, want string
	}{
		{"ascii", "ls -la /srv/a_b ~", "ls -la /srv/a_b ~"},
		{"letters_elsewhere", "é 日本 Ωμ ١٢", "é 日本 Ωμ ١٢"},
		{"symbols", "€ → ✓ 😀", "€ «U+2192» ✓ 😀"},
		{"nul", "a\x00b", "a«NUL»b"},
		{"line_feed", "a\nb", "a«LF»b"},
		{"carriage_return", "ok\r- network", "ok«CR»- network"},
		{"escape_sequence", "\x1b[2K\x1b[1A", "«ESC»[2K«ESC»[1A"},
		{"bell_backspace", "\a\b", "«U+0007»«U+0008»"},
		{"vertical_tab_form_feed", "\v\f", "«U+000B»«U+000C»"},
		{"unit_separator", "\x1f", "«U+001F»"},
		{"tab", "\tx", "→   x"},
		{"del", "a\x7fb", "a«DEL»b"},
		{"c1_csi", "\u009b2K", "«U+009B»2K"},
		{"c1_nel", "a\u0085b", "a«U+0085»b"},
		{"line_separator", "a\u2028b", "a«U+2028»b"},
		{"paragraph_separator", "a\u2029b", "a«U+2029»b"},
		{"lrm_rlm", "\u200e\u200f", "«U+200E»«U+200F»"},
		{"bidi_embeddings", "\u202a\u202b\u202c\u202d\u202e", "«U+202A»«U+202B»«U+202C»«U+202D»«U+202E»"},
		{"bidi_isolates", "\u2066\u2067\u2068\u2069", "«U+2066»«U+2067»«U+2068»«U+2069»"},
		{"arabic_letter_mark", "\u061c", "«U+061C»"},
		{"zero_width", "a\u200b\u200c\u200d\u2060b", "a«U+200B»«U+200C»«U+200D»«U+2060»b"},
		{"bom_soft_hyphen", "\ufeff\u00ad", "«U+FEFF»«U+00AD»"},
		{"invisible_letters", "\u115f\u3164\uffa0", "«U+115F»«U+3164»«U+FFA0»"},
		{"variation_selector", "a\ufe0f", "a«U+FE0F»"},
		{"spaces_elsewhere", "a\u00a0\u2003\u3000b", "a«U+00A0»«U+2003»«U+3000»b"},
		{"private_use", "\ue000", "«U+E000»"},
		{"tag_characters", "\U000e0041", "«U+E0041»"},
		{"two_marks_pass", "e\u0301\u0302", "e\u0301\u0302"},
		{"third_mark_escaped", "e\u0301\u0302\u0303\u0304", "e\u0301\u0302«U+0303»«U+0304»"},
		{"invalid_byte", "a\xffb", "a«0xFF»b"},
		{"truncated_sequence", "\xe2\x80", "«0xE2»«0x80»"},
		{"encoded_surrogate", "\xed\xa0\x80", "«0xED»«0xA0»«0x80»"},
		{"overlong", "\xc0\xaf", "«0xC0»«0xAF»"},
		{"replacement_rune_itself", "\ufffd", "\ufffd"},
		{"guillemets", "«LF»", "«U+00AB»LF»"},
	}
	for _, c := range cases {
		if got := Escape(c.in); got != c.want {
			t.Errorf("%s: Escape(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}
}

// TestQuoteBlocks: every line of a text opens with the gutter, a long one
// is folded, and a block that does not fit is cut, saying where.
func TestQuoteBlocks(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", QuoteWidth+5)
	cases := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"empty", "", 100, "│ \n"},
		{"one_line", "ls /srv", 100, "│ ls /srv\n"},
		{"lines", "a\nb", 100, "│ a\n│ b\n"},
		{"trailing_line_feed", "a\n", 100, "│ a\n│ \n"},
		{"crlf", "a\r\nb", 100, "│ a«CR»\n│ b\n"},
		{"forged_question_lines", "true\n- network\nAccept grants exactly these", 200, "│ true\n│ - network\n│ Accept grants exactly these\n"},
		{"folded", long, 200, "│ " + long[:QuoteWidth] + "\n┆ xxxxx\n"},
		{"cut", "abcdef\n" + strings.Repeat("g", 50), 52, "│ abc\n┄ cut: the first 3 of 57 bytes are shown\n"},
		{"cut_after_a_line", "abcdef\n" + strings.Repeat("g", 50), 60, "│ abcdef\n│ \n┄ cut: the first 7 of 57 bytes are shown\n"},
		{"cut_on_a_rune", strings.Repeat("é", 30), 52, "│ é\n┄ cut: the first 2 of 60 bytes are shown\n"},
		{"no_room", "abcdef", 10, ""},
	}
	for _, c := range cases {
		got := Quote(c.in, c.max)
		if got != c.want {
			t.Errorf("%s: Quote(%q, %d) =\n%q\nwant\n%q", c.name, c.in, c.max, got, c.want)
		}
		if len(got) > c.max {
			t.Errorf("%s: %d bytes, bound %d", c.name, len(got), c.max)
		}
	}
}

// unquote reads a Quote block back: the text it shows, and the bytes a
// cut line says were shown (-1 when the block is whole). It fails the
// test on a line that opens with no gutter.
func unquote(t *rapid.T, block string) (string, int) {
	if !strings.HasSuffix(block, "\n") {
		t.Fatalf("a block must end with a line feed: %q", block)
	}
	shown := -1
	var b strings.Builder
	for i, line := range strings.Split(strings.TrimSuffix(block, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, quoteGutter):
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(unescape(t, strings.TrimPrefix(line, quoteGutter)))
		case strings.HasPrefix(line, foldGutter) && i > 0:
			b.WriteString(unescape(t, strings.TrimPrefix(line, foldGutter)))
		case strings.HasPrefix(line, cutMark+"cut: the first "):
			n, _, _ := strings.Cut(strings.TrimPrefix(line, cutMark+"cut: the first "), " ")
			shown, _ = strconv.Atoi(n)
		default:
			t.Fatalf("line %d opens with no gutter: %q", i, line)
		}
	}
	return b.String(), shown
}

// unescape reverses Escape, failing the test on what Escape never writes.
func unescape(t *rapid.T, s string) string {
	var b strings.Builder
	names := map[string]string{}
	for r, n := range runeNames {
		names[n] = string(r)
	}
	for s != "" {
		switch {
		case strings.HasPrefix(s, "→   "):
			b.WriteByte('\t')
			s = s[len("→   "):]
		case strings.HasPrefix(s, "«"):
			body, rest, ok := strings.Cut(s[len("«"):], "»")
			if !ok {
				t.Fatalf("an escape with no end: %q", s)
			}
			s = rest
			switch {
			case names[body] != "":
				b.WriteString(names[body])
			case strings.HasPrefix(body, "0x"):
				v, err := strconv.ParseUint(body[2:], 16, 8)
				if err != nil {
					t.Fatalf("escape «%s»: %v", body, err)
				}
				b.WriteByte(byte(v))
			case strings.HasPrefix(body, "U+"):
				v, err := strconv.ParseUint(body[2:], 16, 32)
				if err != nil {
					t.Fatalf("escape «%s»: %v", body, err)
				}
				b.WriteRune(rune(v))
			default:
				t.Fatalf("unknown escape «%s»", body)
			}
		default:
			r, size := utf8.DecodeRuneInString(s)
			b.WriteRune(r)
			s = s[size:]
		}
	}
	return b.String()
}

// modelText draws strings a model could send: arbitrary bytes, and runes
// from every class that could draw on a screen.
func modelText() *rapid.Generator[string] {
	hostile := []rune{'\n', '\r', '\t', 0, 0x1b, 0x7f, 0x85, 0x9b, 0x2028, 0x2029, 0x200e, 0x200f,
		0x202a, 0x202e, 0x2066, 0x2069, 0x200b, 0xfeff, 0x0301, 0x115f, 0xfe0f, '«', '»', '→', '│', '┆', '┄', 'é', '日', ' ', '-', 'a'}
	return rapid.OneOf(
		rapid.StringOf(rapid.SampledFrom(hostile)),
		rapid.StringOf(rapid.Rune()),
		rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) }),
	)
}

// unsafeRune reports a rune no display may receive from model text: a
// control, a format rune (bidi controls, zero widths), a line or
// paragraph separator, or a private-use or surrogate rune.
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Co, unicode.Cs)
}

// TestQuoteProperties: whatever a model sends, every line of the block
// opens with a gutter, holds no control, format or separator rune, is at
// most QuoteWidth columns after its gutter, and the block reads back to
// exactly the text (so distinct texts never render alike); a bounded
// block stays within its bound and reads back to the head it says it
// shows.
func TestQuoteProperties(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		s := modelText().Draw(t, "text")
		block := Quote(s, 1<<30)
		if !utf8.ValidString(block) {
			t.Fatalf("the block is not valid UTF-8: %q", block)
		}
		for _, line := range strings.Split(strings.TrimSuffix(block, "\n"), "\n") {
			for _, r := range line {
				if unsafeRune(r) {
					t.Fatalf("%U survived into line %q", r, line)
				}
			}
			if n := utf8.RuneCountInString(line); n > QuoteWidth+2 {
				t.Fatalf("a line of %d runes: %q", n, line)
			}
		}
		if n, want := strings.Count(block, "\n"+quoteGutter)+1, strings.Count(s, "\n")+1; n != want {
			t.Fatalf("%d gutter lines for %d lines of text", n, want)
		}
		back, shown := unquote(t, block)
		if back != s || shown != -1 {
			t.Fatalf("read back %q (cut %d), want %q", back, shown, s)
		}
		if e := Escape(s); strings.ContainsAny(e, "\n\r") || unescape(t, e) != s {
			t.Fatalf("Escape(%q) = %q", s, e)
		}
		max := rapid.IntRange(0, len(block)+10).Draw(t, "max")
		cut := Quote(s, max)
		if len(cut) > max {
			t.Fatalf("Quote(_, %d) is %d bytes", max, len(cut))
		}
		if cut == "" {
			return
		}
		head, n := unquote(t, cut)
		if n == -1 {
			n = len(s)
		}
		if head != s[:n] {
			t.Fatalf("a block cut at %d reads back %q, want %q", n, head, s[:n])
		}
	})
}

// TestDescribeShowsWhatRuns: what runs is shown from the Subject with its
// size, digest and origin, each grant on one line, and a text too long
// for the room cut, saying where, after the reason is left out.
func TestDescribeShowsWhatRuns(t *testing.T) {
	t.Parallel()
	denial := &sandbox.Denial{Code: sandbox.DenialRequirementsNotCovered, Reason: "the policy does not cover /srv/a",
		Wanted: []sandbox.Grant{{Kind: sandbox.GrantWritableRoot, Path: "/srv/a"}, {Kind: sandbox.GrantNetwork}}}
	prog := "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n"
	long := "package main\n\nfunc main() {\n" + strings.Repeat("\tprintln(\"one more line of the program\")\n", 200) + "}\n"
	digest := func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }
	cases := []struct {
		name    string
		subject *Subject
		max     int
		want    []string
		not     []string
		ok      bool
	}{
		{name: "command", subject: &Subject{Kind: SubjectCommand, Text: "ls /srv/a", Dir: "/ws"}, max: 4096, ok: true, want: []string{
			"- writable_root /srv/a\n- network\n",
			"What runs is this command (9 bytes, sha256 " + digest("ls /srv/a") + "), in the directory:\n│ /ws\nThe command:\n│ ls /srv/a\n",
			"Why it was refused:\n│ the policy does not cover /srv/a\n"}},
		{name: "program_from_a_file", subject: &Subject{Kind: SubjectProgram, Text: prog, Path: "tools/p.go"}, max: 4096, ok: true, want: []string{
			"What runs is this program (" + strconv.Itoa(len(prog)) + " bytes, sha256 " + digest(prog) + "), as read from the file:\n│ tools/p.go\n",
			"The program (this text runs, whatever the file holds now):\n│ package main\n│ \n│ func main() {\n│ →   println(\"hello\")\n│ }\n│ \n"}},
		{name: "inline_program", subject: &Subject{Kind: SubjectProgram, Text: prog}, max: 4096, ok: true, want: []string{
			"What runs is this program (" + strconv.Itoa(len(prog)) + " bytes, sha256 " + digest(prog) + "), given inline:\n│ package main\n"}},
		{name: "long_program_cut", subject: &Subject{Kind: SubjectProgram, Text: long}, max: 4096, ok: true,
			want: []string{"sha256 " + digest(long), "│ package main\n", " of " + strconv.Itoa(len(long)) + " bytes are shown\n"},
			not:  []string{"Why it was refused"}},
		{name: "no_room_for_what_runs", subject: &Subject{Kind: SubjectProgram, Text: prog}, max: 200},
		{name: "host_kind", subject: &Subject{Kind: "query\n- network", Text: "select 1"}, max: 4096, ok: true, want: []string{"What runs (query«LF»- network, 8 bytes"}},
		{name: "no_subject", max: 4096, ok: true, want: []string{"- network\nWhy it was refused:\n"}, not: []string{"What runs"}},
	}
	for _, c := range cases {
		got, ok := RaisedRefusal{Tool: "bash", Denial: denial, Subject: c.subject}.Describe(c.max)
		if ok != c.ok || len(got) > c.max {
			t.Errorf("%s: ok=%v (want %v), %d bytes (bound %d):\n%s", c.name, ok, c.ok, len(got), c.max, got)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: lacks %q:\n%s", c.name, w, got)
			}
		}
		for _, w := range c.not {
			if strings.Contains(got, w) {
				t.Errorf("%s: holds %q:\n%s", c.name, w, got)
			}
		}
	}
	if _, ok := (RaisedRefusal{Denial: denial}).Describe(20); ok {
		t.Error("grants that do not fit were described")
	}
}

// harnessLine matches a line Describe writes itself; every other line
// must open with a gutter.
func harnessLine(line string) bool {
	for _, p := range []string{"What runs is this command (", "What runs is this program (", "What runs (", "The command:", "The program (this text runs", "Its text:", "Why it was refused:", "- "} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

// TestDescribeNeverForgesALine: whatever a model puts in a command, a
// program, a path, a directory, a reason or a grant's path, every line of
// the description is either a gutter line or one of the host's own lines
// with the model's values escaped on it, and holds no control, format or
// separator rune. The control renders the same values as the question
// did before (raw after a label) and finds a forged grant line.
func TestDescribeNeverForgesALine(t *testing.T) {
	t.Parallel()
	forged := "true\n- network\nAccept grants exactly these"
	if naive := "Command: " + forged + "\n"; !strings.Contains(naive, "\n- network\n") {
		t.Fatalf("control: the raw rendering forges no line: %q", naive)
	}
	rapid.Check(t, func(t *rapid.T) {
		text := rapid.OneOf(rapid.Just(forged), modelText()).Draw(t, "text")
		r := RaisedRefusal{
			Tool: "bash",
			Denial: &sandbox.Denial{Code: sandbox.DenialRequirementsNotCovered, Reason: modelText().Draw(t, "reason"),
				Wanted: []sandbox.Grant{{Kind: sandbox.GrantReadableRoot, Path: modelText().Draw(t, "grant")}}},
			Subject: &Subject{Kind: rapid.SampledFrom([]SubjectKind{SubjectCommand, SubjectProgram, "x\ny"}).Draw(t, "kind"),
				Text: text, Path: modelText().Draw(t, "path"), Dir: modelText().Draw(t, "dir")},
		}
		d, ok := r.Describe(rapid.IntRange(0, 8<<10).Draw(t, "max"))
		if !ok {
			return
		}
		if !utf8.ValidString(d) {
			t.Fatalf("the description is not valid UTF-8: %q", d)
		}
		for _, line := range strings.Split(strings.TrimSuffix(d, "\n"), "\n") {
			for _, r := range line {
				if unsafeRune(r) {
					t.Fatalf("%U survived into line %q", r, line)
				}
			}
			gutter := strings.HasPrefix(line, quoteGutter) || strings.HasPrefix(line, foldGutter) || strings.HasPrefix(line, cutMark)
			if !gutter && !harnessLine(line) {
				t.Fatalf("a line that is neither a gutter line nor the host's own: %q\nin\n%s", line, d)
			}
		}
	})
}

// ExampleRaisedRefusal_Describe: a host asking its operator on a terminal
// shows what runs, never only where it was read from.
func ExampleRaisedRefusal_Describe() {
	r := RaisedRefusal{
		Tool:   "bash",
		Denial: &sandbox.Denial{Code: sandbox.DenialRequirementsNotCovered, Wanted: []sandbox.Grant{{Kind: sandbox.GrantNetwork}}},
		Subject: &Subject{Kind: SubjectCommand, Dir: "/ws",
			Text: "curl -s https://example.com\r\x1b[2K- readable_root /"},
	}
	text, ok := r.Describe(4 << 10)
	fmt.Println(ok)
	fmt.Print(text)
	// Output:
	// true
	// - network
	// What runs is this command (49 bytes, sha256 97a304041dc066d097edc9861f3d21e5a7dbdded21d60ca2ad785c76c5a68870), in the directory:
	// │ /ws
	// The command:
	// │ curl -s https://example.com«CR»«ESC»[2K- readable_root /
}
