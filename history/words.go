package history

import "strings"

// Term is one word of a words-syntax query (see Words).
type Term struct {
	// Text is the word as typed, without the trailing stars of a prefix.
	Text string
	// Prefix is true for a word typed with a trailing *: it matches every
	// word that starts with Text.
	Prefix bool
}

// WordsQuery is a words-syntax query as ParseWords reads it: an entry
// matches when every group matches, and a group matches when any of its
// terms does. An index translates it into its own query language.
type WordsQuery struct {
	// Groups are the groups in the order typed; ParseWords answers at
	// least one, each of at least one term.
	Groups [][]Term
}

// ParseWords reads text as words syntax (see Words). Words are separated
// by Unicode white space. A word that is exactly OR, standing between two
// words, joins them as alternatives (the word after it is always a word,
// even if it is OR again). A word ending in * is a prefix of that word
// without the stars; a word of stars alone is literal. Everything else is
// literal: no text can be an operator the user did not write as one.
// Text over MaxQueryBytes bytes, blank text and text of more than
// 32 words are refused CodeIndexRefused.
func ParseWords(text string) (WordsQuery, error) {
	if len(text) > MaxQueryBytes {
		return WordsQuery{}, refuse(CodeIndexRefused, "the query is %d bytes; at most %d are accepted", len(text), MaxQueryBytes)
	}
	q := parseWords(text)
	if len(q.Groups) == 0 {
		return WordsQuery{}, refuse(CodeIndexRefused, "the query is blank")
	}
	if n := q.Terms(); n > maxQueryTerms {
		return WordsQuery{}, refuse(CodeIndexRefused, "the query has %d words; at most %d are accepted", n, maxQueryTerms)
	}
	return q, nil
}

// parseWords is ParseWords without its bounds.
func parseWords(text string) WordsQuery {
	fields := strings.Fields(text)
	var q WordsQuery
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if f == "OR" && len(q.Groups) > 0 && i+1 < len(fields) {
			i++
			g := &q.Groups[len(q.Groups)-1]
			*g = append(*g, toTerm(fields[i]))
			continue
		}
		q.Groups = append(q.Groups, []Term{toTerm(f)})
	}
	return q
}

func toTerm(f string) Term {
	stem := strings.TrimRight(f, "*")
	if stem == "" || stem == f {
		return Term{Text: f}
	}
	return Term{Text: stem, Prefix: true}
}

// Terms returns how many terms q holds, over all its groups.
func (q WordsQuery) Terms() int {
	n := 0
	for _, g := range q.Groups {
		n += len(g)
	}
	return n
}

// orVariant renders, in words syntax, the query with every word an
// alternative of every other: what a zero-hit answer suggests.
func orVariant(q WordsQuery) string {
	var words []string
	for _, g := range q.Groups {
		for _, t := range g {
			w := t.Text
			if t.Prefix {
				w += "*"
			}
			words = append(words, w)
		}
	}
	return strings.Join(words, " OR ")
}
