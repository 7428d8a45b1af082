package search

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

const (
	// MaxContext is the most context lines shown before and after a match.
	MaxContext = 10
	// MaxScanMatches is the most matching lines a search collects; past
	// it the search stops and Result.Stopped is set. Which matches are
	// found before it stops may then vary between runs.
	MaxScanMatches = 10_000
	// MaxLineBytes bounds the text kept of one line; a longer line is cut
	// on a rune boundary and marked with how many bytes were dropped.
	MaxLineBytes = 1_000
	// MaxFileBytes bounds the files the Go engine reads; larger files are
	// skipped and counted in Result.SkippedLarge (ripgrep has no such
	// bound, so only such files can make the engines differ).
	MaxFileBytes = 64 << 20
)

// Options is one search. The file-selection rules both engines apply:
//   - an explicitly named root is searched whatever its name: no glob,
//     ignore or hidden rule applies to a file root, or to a directory
//     root itself (only to what lies beneath it); a binary file root
//     yields nothing;
//   - beneath a directory root, entries are matched first against Glob
//     (relative to the root, gitignore syntax), which only narrows:
//     "!glob" skips the files and directories it matches, a plain glob
//     skips the files it does not match, and neither admits an entry
//     the later rules skip; then against the .rgignore files and then
//     the .gitignore files (those in the root and below it, and in its
//     ancestors up to IgnoreRoot; within each kind deeper files win and
//     the last matching line wins, and any .rgignore rule that matches
//     decides before any .gitignore rule; "!" re-includes and also
//     admits a hidden entry); then hidden entries (names starting with
//     '.') are skipped. Ripgrep's .ignore files are not honoured;
//   - symlinks are not followed, only regular files are read, subtrees at
//     or under a Protected entry are skipped, and a file holding a NUL
//     byte is binary and yields nothing.
type Options struct {
	Pattern         string
	CaseInsensitive bool
	Glob            string
	// Context is the number of lines shown before and after each match,
	// 0 to MaxContext.
	Context int
	// Protected lists absolute paths whose subtrees are never searched.
	Protected []string
	// IgnoreRoot is the directory whose .gitignore, and those of the
	// directories between it and the search root, apply above the root.
	// Empty means only .gitignore files at or below the root apply.
	IgnoreRoot string
}

// Hit is one line of a result: a match, or a context line around one.
type Hit struct {
	Path  string // absolute
	Line  int    // 1-based
	Text  string // without the line terminator; valid UTF-8; at most MaxLineBytes plus a marker
	Match bool   // false for a context line
}

// Result is what a search found.
type Result struct {
	Hits    []Hit // sorted by Less
	Matches int   // matching lines found
	Files   int   // files with at least one match
	Stopped bool  // MaxScanMatches was reached
	// Left counts the matching lines the search found past
	// MaxScanMatches and did not keep (at least 1 when Stopped; a lower
	// bound on what it left, since it stopped looking there).
	Left         int
	SkippedLarge int // files over MaxFileBytes (Go engine only)
	// Unconfirmed counts the hits (matches and context lines) Confirm
	// dropped because the file, read again, did not hold them.
	Unconfirmed int
}

// PatternError is a pattern that does not compile. Error names the
// problem and the offending text, each quoted to at most MaxQuotedBytes.
type PatternError struct {
	Pattern string
	Err     error
}

// Error names the pattern and why it was refused.
func (e *PatternError) Error() string {
	var se *syntax.Error
	if errors.As(e.Err, &se) {
		return fmt.Sprintf("invalid regular expression %s: %s in %s (RE2 syntax: no look-around or backreferences)", quoteShort(e.Pattern), se.Code, quoteShort(se.Expr))
	}
	return fmt.Sprintf("invalid regular expression %s: %v", quoteShort(e.Pattern), e.Err)
}

// Unwrap returns the underlying error, if any.
func (e *PatternError) Unwrap() error { return e.Err }

// Compile validates o's pattern and returns the line regexp both engines
// agree on (multi-line mode so ^ and $ match at line ends, case folded
// when asked), or a *PatternError. An empty pattern is refused.
func Compile(o Options) (*regexp.Regexp, error) {
	if o.Pattern == "" {
		return nil, &PatternError{Pattern: o.Pattern, Err: fmt.Errorf("empty pattern")}
	}
	if len(o.Pattern) > MaxPatternBytes {
		return nil, &PatternError{Pattern: o.Pattern, Err: fmt.Errorf("the pattern is %d bytes; at most %d are accepted", len(o.Pattern), MaxPatternBytes)}
	}
	flags := "(?m)"
	if o.CaseInsensitive {
		flags = "(?mi)"
	}
	re, err := regexp.Compile(flags + o.Pattern)
	if err != nil {
		// Report the error against the pattern as given, not our prefix.
		if _, err2 := regexp.Compile(o.Pattern); err2 != nil {
			err = err2
		}
		return nil, &PatternError{Pattern: o.Pattern, Err: err}
	}
	return re, nil
}

// Less orders hits by path, compared component by component (so "a/b"
// sorts before "a.txt", as a directory walk visits them), then by line.
func Less(a, b Hit) bool { return Compare(a, b) < 0 }

// Compare is the three-way form of Less.
func Compare(a, b Hit) int {
	if c := ComparePaths(a.Path, b.Path); c != 0 {
		return c
	}
	return a.Line - b.Line
}

// ComparePaths compares two slash-separated paths component by component.
func ComparePaths(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		if ca == '/' {
			return -1
		}
		if cb == '/' {
			return 1
		}
		if ca < cb {
			return -1
		}
		return 1
	}
	return len(a) - len(b)
}

// lineText turns one raw line into Hit.Text: the terminator ("\n" and a
// preceding "\r") dropped, invalid UTF-8 replaced, and cut to
// MaxLineBytes on a rune boundary with a marker naming the dropped bytes.
func lineText(raw []byte) string {
	raw = trimEOL(raw)
	cut := len(raw)
	if cut > MaxLineBytes {
		cut = MaxLineBytes
		for cut > 0 && !utf8.RuneStart(raw[cut]) {
			cut--
		}
	}
	s := strings.ToValidUTF8(string(raw[:cut]), "\uFFFD")
	if cut < len(raw) {
		s += " [… " + strconv.Itoa(len(raw)-cut) + " more bytes of this line]"
	}
	return s
}

func trimEOL(raw []byte) []byte {
	if n := len(raw); n > 0 && raw[n-1] == '\n' {
		raw = raw[:n-1]
	}
	if n := len(raw); n > 0 && raw[n-1] == '\r' {
		raw = raw[:n-1]
	}
	return raw
}

// Bound keeps the first maxMatches matches of sorted hits and the context
// lines within context lines of a kept match in the same file. It reports
// whether any match was dropped.
func Bound(hits []Hit, maxMatches, context int) ([]Hit, bool) {
	kept := 0
	last := -1 // index of the last kept match
	for i, h := range hits {
		if h.Match {
			if kept == maxMatches {
				break
			}
			kept++
			last = i
		}
	}
	if last < 0 {
		return nil, countMatches(hits) > 0
	}
	out := slices.Clone(hits[:last+1])
	lm := hits[last]
	for _, h := range hits[last+1:] {
		if h.Match || h.Path != lm.Path || h.Line > lm.Line+context {
			break
		}
		out = append(out, h)
	}
	return out, countMatches(hits) > kept
}

func countMatches(hits []Hit) int {
	n := 0
	for _, h := range hits {
		if h.Match {
			n++
		}
	}
	return n
}

// Render writes hits one per line: "path:line:text" for a match and
// "path-line-text" for a context line, with "--" between groups that are
// not adjacent when context is positive. display maps an absolute path
// to what the model sees (relative to the workspace, say); nil keeps it.
func Render(hits []Hit, context int, display func(string) string) string {
	var b strings.Builder
	var prev *Hit
	for i := range hits {
		h := &hits[i]
		if context > 0 && prev != nil && (prev.Path != h.Path || h.Line > prev.Line+1) {
			b.WriteString("--\n")
		}
		p := h.Path
		if display != nil {
			p = display(p)
		}
		sep := byte('-')
		if h.Match {
			sep = ':'
		}
		b.WriteString(p)
		b.WriteByte(sep)
		b.WriteString(strconv.Itoa(h.Line))
		b.WriteByte(sep)
		b.WriteString(h.Text)
		b.WriteByte('\n')
		prev = h
	}
	return b.String()
}

// sortHits sorts hits by Less and drops exact duplicates (a line reported
// both as context and as a match keeps the match).
func sortHits(hits []Hit) []Hit {
	slices.SortStableFunc(hits, func(a, b Hit) int {
		if c := Compare(a, b); c != 0 {
			return c
		}
		switch {
		case a.Match == b.Match:
			return 0
		case a.Match:
			return -1
		default:
			return 1
		}
	})
	return slices.CompactFunc(hits, func(a, b Hit) bool { return a.Path == b.Path && a.Line == b.Line })
}
