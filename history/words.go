package history

import (
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
// is literal except the quote, which is doubled. NUL ends a string early
// in some FTS5 code paths, so it is replaced by a space (both separate
// tokens, so the meaning is unchanged); so are bytes of invalid UTF-8, which
// the tokenizer would otherwise read as it pleases.
func quoteFTS5(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1, r == 0:
			b.WriteByte(' ')
		case r == '"':
			b.WriteString(`""`)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
	return b.String()
}

// fts5 renders the plan for the word index: every term a quoted string,
// groups joined by AND, alternatives by OR inside parentheses.
func (p wordsPlan) fts5() string {
	var b strings.Builder
	for i, g := range p.groups {
		if i > 0 {
			b.WriteString(" AND ")
		}
		if len(g) > 1 {
			b.WriteByte('(')
		}
		for j, t := range g {
			if j > 0 {
				b.WriteString(" OR ")
			}
			b.WriteString(quoteFTS5(t.text))
			if t.prefix {
				b.WriteByte('*')
			}
		}
		if len(g) > 1 {
			b.WriteByte(')')
		}
	}
	return b.String()
}

// substringFTS5 renders the plan for the trigram index, where a quoted
// word matches wherever it occurs as a substring and a prefix mark means
// nothing more. It answers false when some word is shorter than
// MinSubstringRunes, which the trigram index cannot find.
func (p wordsPlan) substringFTS5() (string, bool) {
	for _, g := range p.groups {
		for _, t := range g {
			if utf8.RuneCountInString(t.text) < MinSubstringRunes {
				return "", false
			}
		}
	}
	q := p
	q.groups = make([][]term, len(p.groups))
	for i, g := range p.groups {
		q.groups[i] = make([]term, len(g))
		for j, t := range g {
			q.groups[i][j] = term{text: t.text}
		}
	}
	return q.fts5(), true
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

// WordsToFTS5 translates a words-syntax query (see Words) into an FTS5
// query expression with the same meaning: every word becomes a quoted
// FTS5 string, so quotes, parentheses, column filters, NEAR, NOT and every
// other FTS5 operator in text are searched for as text and can never cause
// a syntax error. The result is for the word index (a unicode61
// tokenizer); it refuses blank text and more than MaxQueryTerms words with
// IndexRefused.
func WordsToFTS5(text string) (string, error) {
	p, err := planWords(text)
	if err != nil {
		return "", err
	}
	return p.fts5(), nil
}

func planWords(text string) (wordsPlan, error) {
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
