package sqlite

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/agentloom/loom/history"
)

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

// fts5 renders q for the word index. Every term is a quoted string.
// Groups of one term are juxtaposed (FTS5's implicit AND, which also drops
// a string that turns out to hold no token); groups of several
// alternatives are parenthesised ORs joined to the rest by an explicit
// AND, which FTS5 does not allow to be implicit.
func fts5(q history.WordsQuery) string {
	var singles []string
	var parts []string
	for _, g := range q.Groups {
		if len(g) == 1 {
			singles = append(singles, termFTS5(g[0]))
		}
	}
	if len(singles) > 0 {
		parts = append(parts, strings.Join(singles, " "))
	}
	for _, g := range q.Groups {
		if len(g) > 1 {
			alts := make([]string, len(g))
			for i, t := range g {
				alts[i] = termFTS5(t)
			}
			parts = append(parts, "("+strings.Join(alts, " OR ")+")")
		}
	}
	return strings.Join(parts, " AND ")
}

func termFTS5(t history.Term) string {
	if t.Prefix {
		return quoteFTS5(t.Text) + "*"
	}
	return quoteFTS5(t.Text)
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
func searchableOnly(ctx context.Context, q history.WordsQuery, probe *tokenProbe) (history.WordsQuery, error) {
	var ask []string
	for _, g := range q.Groups {
		for _, t := range g {
			if !isASCII(t.Text) {
				ask = append(ask, strings.ReplaceAll(t.Text, "\x00", " "))
			}
		}
	}
	var verdicts []bool
	if len(ask) > 0 {
		v, err := probe.searchable(ctx, ask)
		if err != nil {
			return history.WordsQuery{}, err
		}
		verdicts = v
	}
	var out history.WordsQuery
	k := 0
	for _, g := range q.Groups {
		var kept []history.Term
		for _, t := range g {
			ok := false
			if isASCII(t.Text) {
				ok = asciiSearchable(t.Text)
			} else {
				ok = verdicts[k]
				k++
			}
			if ok {
				kept = append(kept, t)
			}
		}
		if len(kept) > 0 {
			out.Groups = append(out.Groups, kept)
		}
	}
	return out, nil
}

// WordsToFTS5 translates a words-syntax query (see history.Words) into the
// FTS5 query expression Search runs against the word index, with the same
// meaning. Every word becomes a quoted FTS5 string: quotes, parentheses,
// column filters, NEAR, NOT and every other FTS5 operator in text are
// searched for as text and can never cause a syntax error. Words the
// index's tokenizer keeps nothing of (punctuation alone) are left out. It
// refuses, history.CodeIndexRefused, what history.ParseWords refuses and
// text with nothing left to search for.
func (s *Store) WordsToFTS5(ctx context.Context, text string) (string, error) {
	q, err := s.planWords(ctx, text)
	if err != nil {
		return "", err
	}
	return fts5(q), nil
}

// planWords parses text, checks its bounds and prunes what cannot be
// searched.
func (s *Store) planWords(ctx context.Context, text string) (history.WordsQuery, error) {
	q, err := history.ParseWords(text)
	if err != nil {
		return history.WordsQuery{}, err
	}
	q, err = searchableOnly(ctx, q, s.probe)
	if err != nil {
		return history.WordsQuery{}, classify(err, history.CodeIndexBusy, history.CodeIndexUnavailable, "", "reading the query")
	}
	if len(q.Groups) == 0 {
		return history.WordsQuery{}, refuse(history.CodeIndexRefused, "the query has no letters or digits to search for; use syntax=raw to search for punctuation")
	}
	return q, nil
}
