package search

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

const (
	// MaxGlobBytes bounds Options.Glob; a longer glob is refused.
	MaxGlobBytes = 1024
	// MaxPatternBytes bounds Options.Pattern; a longer pattern is refused
	// before it is compiled (compiling and running a megabyte regexp
	// costs minutes, and no search needs one).
	MaxPatternBytes = 4096
	// MaxQuotedBytes bounds how much of a model's value (a pattern, a
	// glob) an error message quotes; a longer value is cut on a rune
	// boundary and marked with "…".
	MaxQuotedBytes = 80
)

// GlobError is a glob refused before any engine runs: one ripgrep would
// reject (so it would exit 2 without searching) or one past MaxGlobBytes.
// Error names the glob (shortened to MaxQuotedBytes), what is wrong with
// it and what is accepted.
type GlobError struct {
	Glob   string
	Reason string
}

// Error names the glob, the problem and the syntax that is accepted.
func (e *GlobError) Error() string {
	return fmt.Sprintf("invalid glob %s: %s; a glob is gitignore syntax (* and ? within a path component, ** across components, [abc] or [a-z] classes, [!a] negated, {a,b} alternatives, not nested, \\ escapes the next character) and a leading ! excludes instead", quoteShort(e.Glob), e.Reason)
}

// quoteShort quotes s for an error message, cut to MaxQuotedBytes.
func quoteShort(s string) string {
	if len(s) <= MaxQuotedBytes {
		return strconv.Quote(s)
	}
	cut := MaxQuotedBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + fmt.Sprintf("… (%d bytes)", len(s))
}

// ValidateGlob reports whether glob (Options.Glob, with its optional
// leading "!") is one both engines accept and mean the same by, as a
// *GlobError when it is not. It refuses exactly what ripgrep's glob
// parser refuses (an unclosed [class or {alternation, nested
// alternations, a range whose ends are reversed, a trailing lone
// backslash), a } that closes no alternation, a leading # (a comment to
// ripgrep), a blank glob, a lone "!", and globs longer than MaxGlobBytes. The empty glob means no
// glob and is accepted.
func ValidateGlob(glob string) error {
	if len(glob) > MaxGlobBytes {
		return &GlobError{Glob: glob, Reason: fmt.Sprintf("it is %d bytes, more than %d", len(glob), MaxGlobBytes)}
	}
	if glob == "" {
		return nil
	}
	body := glob
	if strings.HasPrefix(body, "#") {
		return &GlobError{Glob: glob, Reason: `ripgrep reads a glob starting with # as a comment and ignores it (write \# for a literal #)`}
	}
	if len(body) > 0 && body[0] == '!' {
		body = body[1:]
		if body == "" {
			return &GlobError{Glob: glob, Reason: "a leading ! must be followed by the glob to exclude"}
		}
	}
	if strings.TrimRight(body, " ") == "" {
		return &GlobError{Glob: glob, Reason: "it is blank once its trailing spaces are dropped, as ripgrep drops them"}
	}
	// ripgrep takes one trailing "/" to mean "directories only" and
	// parses the glob without it.
	body = strings.TrimSuffix(body, "/")
	if reason := globProblem(body); reason != "" {
		return &GlobError{Glob: glob, Reason: reason}
	}
	return nil
}

// globProblem returns why g is not a valid glob, or "". It reads g as
// ripgrep's parser does: "\x" is a literal x, "[" opens a class in which
// a first "]" (after an optional "!" or "^") and a first or last "-" are
// literal and no escape applies, "{" opens an alternation that must close
// before another opens, and a "," outside one is literal. A "}" outside
// an alternation is refused too: ripgrep 13 ends the glob there, later
// versions take it literally.
func globProblem(g string) string {
	inAlt := false
	for i := 0; i < len(g); {
		c := g[i]
		switch c {
		case '\\':
			if i+1 >= len(g) {
				return `it ends in a lone \ that escapes nothing`
			}
			_, n := utf8.DecodeRuneInString(g[i+1:])
			i += 1 + n
			continue
		case '{':
			if inAlt {
				return "it nests one {alternation} inside another"
			}
			inAlt = true
		case '}':
			if !inAlt {
				// ripgrep versions disagree on what this means.
				return "a } closes no alternation (write [}] for a literal })"
			}
			inAlt = false
		case '[':
			cl, reason := parseClass(g, i)
			if reason != "" {
				return reason
			}
			i = cl.end + 1
			continue
		}
		i++
	}
	if inAlt {
		return "a { opens an alternation that no } closes (write [{] for a literal {)"
	}
	return ""
}

// globClass is one parsed [class] of a glob.
type globClass struct {
	end     int // index of the closing ']'
	negated bool
	ranges  [][2]rune // inclusive; a single character is a range of one
}

// parseClass parses the class opened at g[open] as ripgrep's glob
// parser does, or returns why it is invalid: after an optional "!" or
// "^", a first "]" or "-" is literal; "x-y" extends the last range (a
// later "-z" extends it again, keeping its start); a "-" before the
// closing "]" is literal; a range whose end sorts before its start is
// refused; backslash is an ordinary character here.
func parseClass(g string, open int) (globClass, string) {
	var cl globClass
	i := open + 1
	if i < len(g) && (g[i] == '!' || g[i] == '^') {
		cl.negated = true
		i++
	}
	first, inRange := true, false
	extend := func(r rune) string {
		last := &cl.ranges[len(cl.ranges)-1]
		if r < last[0] {
			return fmt.Sprintf("the class range %c-%c runs backwards", last[0], r)
		}
		last[1] = r
		return ""
	}
	for i < len(g) {
		r, n := utf8.DecodeRuneInString(g[i:])
		switch {
		case r == ']' && !first:
			if inRange {
				cl.ranges = append(cl.ranges, [2]rune{'-', '-'})
			}
			cl.end = i
			return cl, ""
		case r == '-' && !first && !inRange:
			inRange = true
		case inRange:
			if why := extend(r); why != "" {
				return globClass{}, why
			}
			inRange = false
		default:
			cl.ranges = append(cl.ranges, [2]rune{r, r})
		}
		first = false
		i += n
	}
	return globClass{}, "a [ opens a character class that no ] closes (write [[] for a literal [)"
}
