package history

import (
	"context"
	"strings"
	"unicode/utf8"
)

// term is one word of a words-syntax query.
type term struct {
	text   string // the word as typed, without trailing stars
	prefix bool   // typed with a trailing *
}

// wordsPlan is a parsed words-syntax query: every group must match, and a
// group matches when any of its alternatives does.
type wordsPlan struct {
	groups [][]term
}

// parseWords reads text as words-syntax. Words are separated by Unicode
// white space. A word that is exactly OR, standing between two words, joins
// them as alternatives (the word after it is always a word, even if it is
// OR again). A word ending in * is a prefix of that word without the
// stars; a word of stars alone is literal. Everything else is literal.
func parseWords(text string) wordsPlan {
	fields := strings.Fields(text)
	var p wordsPlan
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if f == "OR" && len(p.groups) > 0 && i+1 < len(fields) {
			i++
			g := &p.groups[len(p.groups)-1]
			*g = append(*g, toTerm(fields[i]))
			continue
		}
		p.groups = append(p.groups, []term{toTerm(f)})
	}
	return p
}

func toTerm(f string) term {
	stem := strings.TrimRight(f, "*")
	if stem == "" || stem == f {
		return term{text: f}
	}
	return term{text: stem, prefix: true}
}

func (p wordsPlan) terms() int {
	n := 0
	for _, g := range p.groups {
		n += len(g)
	}
	return n
}

// quoteFTS5 renders s as one FTS5 string: inside double quotes every byte
// is literal except the quote, which is doubled. A NUL byte would end the
// query early inside FTS5, so it becomes a space: both separate tokens,
// so the meaning is unchanged. Invalid UTF-8 passes through as it is, so
// the query tokenizes exactly as indexed text does.
func quoteFTS5(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case 0:
			b.WriteByte(' ')
		case '"':
			b.WriteString(`""`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// fts5 renders the plan for the word index. Every term is a quoted
// string. Groups of one term are juxtaposed (FTS5's implicit AND, which
// also drops a string that turns out to hold no token); groups of several
// alternatives are parenthesised ORs joined to the rest by an explicit
// AND, which FTS5 does not allow to be implicit.
func (p wordsPlan) fts5() string {
	var singles []string
	var parts []string
	for _, g := range p.groups {
		if len(g) == 1 {
			singles = append(singles, g[0].fts5())
		}
	}
	if len(singles) > 0 {
		parts = append(parts, strings.Join(singles, " "))
	}
	for _, g := range p.groups {
		if len(g) > 1 {
			alts := make([]string, len(g))
			for i, t := range g {
				alts[i] = t.fts5()
			}
			parts = append(parts, "("+strings.Join(alts, " OR ")+")")
		}
	}
	return strings.Join(parts, " AND ")
}

func (t term) fts5() string {
	if t.prefix {
		return quoteFTS5(t.text) + "*"
	}
	return quoteFTS5(t.text)
}

// asciiSearchable reports whether an ASCII-only s holds a letter or
// digit: for ASCII, exactly what the unicode61 tokenizer keeps.
func asciiSearchable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// searchableOnly drops the terms the word index's tokenizer keeps nothing
// of, and the groups left without a term. FTS5 reads a string without a
// token as "match nothing", which as an operand of AND would void the
// whole query. ASCII terms are judged here; the others are asked of the
// tokenizer itself through probe (see tokenProbe).
func (p wordsPlan) searchableOnly(ctx context.Context, probe *tokenProbe) (wordsPlan, error) {
	var ask []string
	for _, g := range p.groups {
		for _, t := range g {
			if !isASCII(t.text) {
				ask = append(ask, strings.ReplaceAll(t.text, "\x00", " "))
			}
		}
	}
	var verdicts []bool
	if len(ask) > 0 {
		v, err := probe.searchable(ctx, ask)
		if err != nil {
			return wordsPlan{}, err
		}
		verdicts = v
	}
	var q wordsPlan
	k := 0
	for _, g := range p.groups {
		var kept []term
		for _, t := range g {
			ok := false
			if isASCII(t.text) {
				ok = asciiSearchable(t.text)
			} else {
				ok = verdicts[k]
				k++
			}
			if ok {
				kept = append(kept, t)
			}
		}
		if len(kept) > 0 {
			q.groups = append(q.groups, kept)
		}
	}
	return q, nil
}

// orVariant renders, in words syntax, the query with every word an
// alternative of every other: what a zero-hit answer suggests.
func (p wordsPlan) orVariant() string {
	var words []string
	for _, g := range p.groups {
		for _, t := range g {
			w := t.text
			if t.prefix {
				w += "*"
			}
			words = append(words, w)
		}
	}
	return strings.Join(words, " OR ")
}

// WordsToFTS5 translates a words-syntax query (see Words) into the FTS5
// query expression Search runs against the word index, with the same
// meaning: every word becomes a quoted FTS5 string, so quotes,
// parentheses, column filters, NEAR, NOT and every other FTS5 operator in
// text are searched for as text and can never cause a syntax error. Words
// the index's tokenizer keeps nothing of (punctuation alone) are left
// out. It refuses blank text, text with nothing left to search for, and
// more than MaxQueryTerms words with IndexRefused.
func (s *SQLite) WordsToFTS5(ctx context.Context, text string) (string, error) {
	p, err := s.planWords(ctx, text)
	if err != nil {
		return "", err
	}
	return p.fts5(), nil
}

// planWords parses text, checks its bounds and prunes what cannot be
// searched.
func (s *SQLite) planWords(ctx context.Context, text string) (wordsPlan, error) {
	p, err := parseBounded(text)
	if err != nil {
		return wordsPlan{}, err
	}
	p, err = p.searchableOnly(ctx, s.probe)
	if err != nil {
		return wordsPlan{}, classify(err, IndexBusy, IndexUnavailable, "", "reading the query")
	}
	if len(p.groups) == 0 {
		return wordsPlan{}, refuse(IndexRefused, "the query has no letters or digits to search for; use syntax=raw to search for punctuation")
	}
	return p, nil
}

// parseBounded parses text and refuses it when blank or over a bound.
func parseBounded(text string) (wordsPlan, error) {
	if len(text) > MaxQueryBytes {
		return wordsPlan{}, refuse(IndexRefused, "the query is %d bytes; at most %d are accepted", len(text), MaxQueryBytes)
	}
	p := parseWords(text)
	if len(p.groups) == 0 {
		return wordsPlan{}, refuse(IndexRefused, "the query is blank")
	}
	if n := p.terms(); n > MaxQueryTerms {
		return wordsPlan{}, refuse(IndexRefused, "the query has %d words; at most %d are accepted", n, MaxQueryTerms)
	}
	return p, nil
}
