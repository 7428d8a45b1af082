package postgres

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/agentloom/loom/history"
)

// Bounds of the word index. PostgreSQL's tsvector keeps at most 256
// positions per lexeme, positions up to 16383, lexemes under 2 KiB and
// values under 1 MiB; an entry's words past these bounds are not indexed.
const (
	maxPositions    = 256
	maxPosition     = 16383
	maxLexemeBytes  = 2046
	maxVectorBytes  = 900 << 10
	snippetTokens   = 24
	snippetFetchLen = 64 << 10
)

// The tokenizer. Words are split and folded here, in Go, not by
// PostgreSQL's text-search parser, so the index means the same on every
// server whatever its locale, and the same as the SQLite index: a word is
// a run of letters, numbers, private-use characters and combining marks
// (the unicode61 tokenizer's classes), lowercased, with diacritics
// removed. PostgreSQL stores the lexemes verbatim (tsvector and tsquery
// input syntax) and never parses the text.

func wordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return r != utf8.RuneError && unicode.In(r, unicode.L, unicode.N, unicode.Co, unicode.Mn)
}

// token is one word of a text: its byte span and folded form.
type token struct {
	start, end int
	word       string
}

// eachToken calls fn with every word of text in order; fn answers false
// to stop.
func eachToken(text string, fn func(token) bool) {
	start := -1
	for i, r := range text {
		if wordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			if w := fold(text[start:i]); w != "" && !fn(token{start, i, w}) {
				return
			}
			start = -1
		}
	}
	if start >= 0 {
		if w := fold(text[start:]); w != "" {
			fn(token{start, len(text), w})
		}
	}
}

// words answers the folded words of text.
func words(text string) []string {
	var out []string
	eachToken(text, func(t token) bool { out = append(out, t.word); return true })
	return out
}

// fold lowercases w and removes its diacritics (combining marks after
// canonical decomposition).
func fold(w string) string {
	ascii := true
	for i := 0; i < len(w); i++ {
		if w[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(w)
	}
	var b strings.Builder
	for _, r := range norm.NFD.String(w) {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// quoteLexeme renders w in tsvector and tsquery input syntax.
func quoteLexeme(w string) string {
	if strings.ContainsAny(w, `'\`) {
		w = lexemeEscaper.Replace(w)
	}
	return "'" + w + "'"
}

var lexemeEscaper = strings.NewReplacer(`\`, `\\`, `'`, `''`)

// vector renders the word index value of text in tsvector input syntax:
// every word with its positions.
func vector(text string) string {
	pos := map[string][]int{}
	var order []string
	size, n := 0, 0
	eachToken(text, func(t token) bool {
		n++
		if len(t.word) > maxLexemeBytes {
			return true
		}
		p, ok := pos[t.word]
		if !ok {
			if size += len(t.word) + 8; size > maxVectorBytes {
				return false
			}
			order = append(order, t.word)
		}
		if len(p) < maxPositions {
			size += 2
			pos[t.word] = append(p, min(n, maxPosition))
		}
		return true
	})
	var b strings.Builder
	for i, w := range order {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(quoteLexeme(w))
		for j, p := range pos[w] {
			if j == 0 {
				b.WriteByte(':')
			} else {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(p))
		}
	}
	return b.String()
}

// phrase renders the words of one term as a tsquery: one lexeme, or a
// phrase of lexemes (<->); prefix makes the last a prefix. It answers ""
// for a term without words.
func phrase(ws []string, prefix bool) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = quoteLexeme(w)
	}
	if len(parts) == 0 {
		return ""
	}
	if prefix {
		parts[len(parts)-1] += ":*"
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, " <-> ") + ")"
}

// tsquery renders a words query: groups joined by &, alternatives by |.
// Every term holds at least one word (planWords pruned the others).
func tsquery(q history.WordsQuery) string {
	groups := make([]string, len(q.Groups))
	for i, g := range q.Groups {
		alts := make([]string, len(g))
		for j, t := range g {
			alts[j] = phrase(words(t.Text), t.Prefix)
		}
		groups[i] = "(" + strings.Join(alts, " | ") + ")"
	}
	return strings.Join(groups, " & ")
}

// planWords parses text, checks its bounds and drops the terms without a
// word and the groups left empty: what cannot be searched.
func planWords(text string) (history.WordsQuery, error) {
	q, err := history.ParseWords(text)
	if err != nil {
		return history.WordsQuery{}, err
	}
	var out history.WordsQuery
	for _, g := range q.Groups {
		var kept []history.Term
		for _, t := range g {
			if len(words(t.Text)) > 0 {
				kept = append(kept, t)
			}
		}
		if len(kept) > 0 {
			out.Groups = append(out.Groups, kept)
		}
	}
	if len(out.Groups) == 0 {
		return history.WordsQuery{}, refuse(history.CodeIndexRefused, "the query has no letters or digits to search for; use syntax=raw to search for punctuation")
	}
	return out, nil
}

// matcher tells the words of a query from others, for snippets.
type matcher struct {
	exact    map[string]bool
	prefixes []string
}

func (m *matcher) add(ws []string, prefix bool) {
	for i, w := range ws {
		if prefix && i == len(ws)-1 {
			m.prefixes = append(m.prefixes, w)
		} else {
			if m.exact == nil {
				m.exact = map[string]bool{}
			}
			m.exact[w] = true
		}
	}
}

func (m *matcher) match(w string) bool {
	if m.exact[w] {
		return true
	}
	for _, p := range m.prefixes {
		if strings.HasPrefix(w, p) {
			return true
		}
	}
	return false
}

// snippet answers an excerpt of text of at most snippetTokens words
// around the first matched word, matched words marked by **, and "…"
// where text was cut: the shape of FTS5's snippet().
func snippet(text string, m *matcher) string {
	var toks []token
	first := -1
	cut := false
	eachToken(text, func(t token) bool {
		if first < 0 && m.match(t.word) {
			first = len(toks)
		}
		if first >= 0 && len(toks) >= first+snippetTokens {
			cut = true
			return false
		}
		toks = append(toks, t)
		return true
	})
	if len(toks) == 0 {
		return ""
	}
	lo := 0
	if first > snippetTokens/4 {
		lo = first - snippetTokens/4
	}
	hi := min(len(toks), lo+snippetTokens)
	if hi-lo < snippetTokens {
		lo = max(0, hi-snippetTokens)
	}
	var b strings.Builder
	start := 0
	if lo > 0 {
		b.WriteString("…")
		start = toks[lo].start
	}
	at := start
	for _, t := range toks[lo:hi] {
		b.WriteString(text[at:t.start])
		if m.match(t.word) {
			b.WriteString("**" + text[t.start:t.end] + "**")
		} else {
			b.WriteString(text[t.start:t.end])
		}
		at = t.end
	}
	if hi < len(toks) || cut {
		b.WriteString("…")
	} else {
		b.WriteString(text[at:])
	}
	return b.String()
}
