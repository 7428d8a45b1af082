package search

import (
	"bufio"
	"bytes"
	"regexp"
	"strings"
	"unicode/utf8"
)

const (
	// MaxIgnoreFileBytes bounds how much of one .gitignore is read.
	MaxIgnoreFileBytes = 1 << 20
	// MaxIgnorePatterns bounds the patterns taken from one .gitignore.
	MaxIgnorePatterns = 10_000
)

// verdict is what a rule set says about one path.
type verdict int

const (
	none      verdict = iota // no rule matched
	ignored                  // excluded
	whitelist                // explicitly included ("!pattern", or a glob)
)

// rule is one compiled gitignore-syntax pattern.
type rule struct {
	re      *regexp.Regexp
	negate  bool
	dirOnly bool
}

// ruleSet is the rules of one .gitignore (or one glob), matched against
// paths relative to dir.
type ruleSet struct {
	dir   string // absolute, clean
	rules []rule
}

// compileRule compiles one gitignore line; ok is false for blank lines,
// comments and patterns that cannot match anything.
func compileRule(line string) (rule, bool) {
	line = strings.TrimSuffix(line, "\r")
	// Trailing spaces are ignored unless escaped.
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
		line = line[:len(line)-1]
	}
	if line == "" || line[0] == '#' {
		return rule{}, false
	}
	var r rule
	if line[0] == '!' {
		r.negate = true
		line = line[1:]
	} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		// One trailing slash means "directories only", as to ripgrep.
		r.dirOnly = true
		line = line[:len(line)-1]
	}
	if line == "" || globProblem(line) != "" {
		// ripgrep skips (and warns about) a line it cannot parse.
		return rule{}, false
	}
	anchored := strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	expr := globRegexp(line)
	if !anchored {
		expr = "(?:.*/)?" + expr
	}
	re, err := regexp.Compile("^" + expr + "$")
	if err != nil {
		return rule{}, false
	}
	r.re = re
	return r, true
}

// globRegexp translates a glob that ValidateGlob accepts into a regexp
// body: "*" and "?" stay within a component, "**" spans components where
// it is a whole component, "[...]" is the class parseClass reads
// ("[!...]" negated), "{a,b}" is an alternation (as ripgrep's globs
// allow; a "}" or "," outside one is literal), "\x" is literal x. An
// invalid class or alternation is taken literally, so the function is
// total, but callers validate first.
func globRegexp(g string) string {
	var b strings.Builder
	inAlt := false
	for i := 0; i < len(g); i++ {
		c := g[i]
		switch {
		case c == '{' && !inAlt && strings.IndexByte(g[i:], '}') > 0:
			inAlt = true
			b.WriteString("(?:")
		case c == '}' && inAlt:
			inAlt = false
			b.WriteString(")")
		case c == ',' && inAlt:
			b.WriteString("|")
		case c == '*' && i+1 < len(g) && g[i+1] == '*' &&
			(i == 0 || g[i-1] == '/') && (i+2 == len(g) || g[i+2] == '/'):
			switch {
			case i+2 == len(g): // trailing "**": everything below
				b.WriteString(".*")
			default: // "**/": zero or more whole components
				b.WriteString("(?:.*/)?")
				i++ // the '/' after "**"
			}
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			cl, why := parseClass(g, i)
			if why != "" {
				b.WriteString(`\[`)
				continue
			}
			b.WriteByte('[')
			if cl.negated {
				b.WriteByte('^')
			}
			for _, r := range cl.ranges {
				b.WriteString(classChar(r[0]))
				if r[1] != r[0] {
					b.WriteByte('-')
					b.WriteString(classChar(r[1]))
				}
			}
			b.WriteByte(']')
			i = cl.end
		case c == '\\' && i+1 < len(g):
			_, n := utf8.DecodeRuneInString(g[i+1:])
			b.WriteString(regexp.QuoteMeta(g[i+1 : i+1+n]))
			i += n
		default:
			b.WriteString(regexp.QuoteMeta(g[i : i+1])) // a byte of a rune passes through whole
		}
	}
	if inAlt {
		b.WriteString(")")
	}
	return b.String()
}

// classChar spells r for use inside a regexp character class.
func classChar(r rune) string {
	if r < utf8.RuneSelf && strings.ContainsRune(`\]^-[`, r) {
		return `\` + string(r)
	}
	return string(r)
}

// Ignore files both engines honour, in the directory they sit in and
// below it. Rules from any rgignoreName file take precedence over every
// gitignoreName file (the deepest .rgignore with a matching rule decides
// first), as ripgrep orders them; ripgrep's .ignore files are honoured by
// neither.
const (
	gitignoreName = ".gitignore"
	rgignoreName  = ".rgignore"
)

// loadIgnore reads the ignore file name (gitignoreName or rgignoreName)
// of the pinned directory d: a regular file of at most
// MaxIgnoreFileBytes, opened without following a link or blocking.
// Anything else there (missing, a link, a FIFO, a device, too large,
// unreadable) is an empty set (nil).
func loadIgnore(d *pinnedDir, name string) *ruleSet {
	data, err := d.readAt(name, nil, MaxIgnoreFileBytes)
	if err != nil {
		return nil
	}
	return parseIgnore(d.path, data)
}

func parseIgnore(dir string, data []byte) *ruleSet {
	rs := &ruleSet{dir: dir}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), MaxIgnoreFileBytes)
	for sc.Scan() && len(rs.rules) < MaxIgnorePatterns {
		if r, ok := compileRule(sc.Text()); ok {
			rs.rules = append(rs.rules, r)
		}
	}
	if len(rs.rules) == 0 {
		return nil
	}
	return rs
}

// match returns the verdict of the last rule matching abs (a path at or
// below rs.dir).
func (rs *ruleSet) match(abs string, isDir bool) verdict {
	rel, ok := relBelow(rs.dir, abs)
	if !ok {
		return none
	}
	for i := len(rs.rules) - 1; i >= 0; i-- {
		r := rs.rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		if r.re.MatchString(rel) {
			if r.negate {
				return whitelist
			}
			return ignored
		}
	}
	return none
}

// relBelow returns p relative to dir when p is strictly below dir.
func relBelow(dir, p string) (string, bool) {
	if dir == "/" {
		return strings.TrimPrefix(p, "/"), len(p) > 1
	}
	if len(p) > len(dir) && p[len(dir)] == '/' && p[:len(dir)] == dir {
		return p[len(dir)+1:], true
	}
	return "", false
}

// globFilter is the Options.Glob rule, matched relative to the root. It
// only ever narrows: an excluding glob ("!glob") ignores the files and
// directories it matches; an admitting glob ignores the files it does
// not match. Neither admits anything the ignore files or the hidden rule
// skip.
type globFilter struct {
	set    ruleSet
	negate bool
}

func newGlobFilter(root, glob string) *globFilter {
	if glob == "" {
		return nil
	}
	g := &globFilter{set: ruleSet{dir: root}}
	if strings.HasPrefix(glob, "!") {
		g.negate = true
		glob = glob[1:]
		if strings.HasPrefix(glob, "!") || strings.HasPrefix(glob, "#") {
			// After the one "!", ripgrep takes these literally.
			glob = `\` + glob
		}
	}
	r, ok := compileRule(glob)
	if !ok {
		// A glob that cannot match: admits nothing (or excludes nothing).
		return g
	}
	r.negate = false
	g.set.rules = []rule{r}
	return g
}

// match gives the glob's verdict, ignored or none: an excluding glob
// ignores what it matches; an admitting glob ignores the files it does
// not match (directories are entered as the other rules say).
func (g *globFilter) match(abs string, isDir bool) verdict {
	m := g.set.match(abs, isDir) == ignored
	switch {
	case g.negate && m:
		return ignored
	case g.negate, isDir, m:
		return none
	default:
		return ignored
	}
}

// admits reports whether the glob lets the file abs, strictly below the
// root, be searched.
func (g *globFilter) admits(abs string) bool {
	return g == nil || g.match(abs, false) != ignored
}
