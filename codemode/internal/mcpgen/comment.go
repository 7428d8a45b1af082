package mcpgen

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// commentLines renders text as the lines of a // comment, each without
// its marker: at most max bytes of it (cut at a rune with an ellipsis),
// invalid UTF-8 replaced, control and format runes (bidirectional
// overrides, zero-width) dropped, other spaces made plain, line and
// paragraph separators made line breaks, trailing space trimmed, runs of
// blank lines made one, and "*/", "/*" and a line-leading "+build"
// broken with a space. The emitter writes each line after "// " (an
// empty one as "//"), so no line's text right after its marker can
// start "go:" or "line ": no comment it writes is a directive.
func commentLines(text string, max int) []string {
	text = strings.ToValidUTF8(text, "\uFFFD")
	var b strings.Builder
	prev := rune(0)
	for _, r := range text {
		crlf := prev == '\r' && r == '\n'
		prev = r
		switch {
		case crlf:
		case r == '\n' || r == '\u2028' || r == '\u2029' || r == '\r' || r == '\v' || r == '\f' || r == '\u0085':
			b.WriteByte('\n')
		case r == '\t':
			b.WriteString("    ")
		case unicode.IsSpace(r):
			b.WriteByte(' ')
		case !unicode.IsPrint(r):
			// control, format, private use, unassigned, surrogate
		default:
			b.WriteRune(r)
		}
	}
	s := b.String()
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	s = strings.ReplaceAll(s, "*/", "* /")
	s = strings.ReplaceAll(s, "/*", "/ *")
	var out []string
	blank := true // drop leading blank lines
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimRightFunc(line, unicode.IsSpace)
		if line == "" {
			if !blank {
				out = append(out, "")
			}
			blank = true
			continue
		}
		blank = false
		if t := strings.TrimLeft(line, " "); strings.HasPrefix(t, "+build") {
			line = line[:len(line)-len(t)] + "+ build" + t[len("+build"):]
		}
		out = append(out, line)
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// oneLine renders text as one line of comment text: commentLines joined
// by spaces.
func oneLine(text string, max int) string {
	return strings.Join(commentLines(text, max), " ")
}
