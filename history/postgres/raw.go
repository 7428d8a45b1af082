package postgres

import (
	"strings"
	"unicode/utf8"

	"github.com/agentloom/loom/history"
)

// The raw syntax. history.Raw is FTS5's query syntax; this index reads
// the part of it a query over one text column uses, and translates it
// into a tsquery with the same meaning:
//
//	query   := or
//	or      := and ("OR" and)*
//	and     := not (["AND"] not)*        (juxtaposition is AND)
//	not     := primary ("NOT" primary)*  (a NOT b: a and not b)
//	primary := "(" query ")" | ["text" ":"] phrase ["*"]
//	phrase  := string | bareword ("+" string | bareword)*
//
// A string is double-quoted, "" standing for a quote; a bareword is a run
// of ASCII letters, digits, '_', 0x1A and non-ASCII characters. Both are
// split into words as indexed text is, and a phrase matches its words in
// sequence. Column filters other than the one column "text", NEAR
// groups, '^' and '{...}' are refused CodeIndexRefused, like every
// syntax error, with a message saying "syntax error" and where.

type rawParser struct {
	s   string
	i   int
	m   *matcher
	err error
}

// rawToTSQuery translates a raw query and adds its words to m.
func rawToTSQuery(s string, m *matcher) (string, error) {
	p := &rawParser{s: s, m: m}
	q := p.or()
	p.space()
	if p.err == nil && p.i < len(p.s) {
		p.fail()
	}
	if p.err != nil {
		return "", p.err
	}
	return q, nil
}

func (p *rawParser) fail() {
	if p.err != nil {
		return
	}
	near := p.s[p.i:]
	if len(near) > 32 {
		near = near[:32]
	}
	p.err = refuse(history.CodeIndexRefused, "the raw query has a syntax error near %q (FTS5 syntax)", near)
}

func (p *rawParser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\n\r\f\v", p.s[p.i]) >= 0 {
		p.i++
	}
}

func bareRune(c byte) bool {
	return c >= utf8.RuneSelf || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == 0x1a
}

// peekBare answers the bareword at the cursor without consuming it.
func (p *rawParser) peekBare() string {
	p.space()
	j := p.i
	for j < len(p.s) && bareRune(p.s[j]) {
		j++
	}
	return p.s[p.i:j]
}

// keyword consumes kw when it is the next bareword.
func (p *rawParser) keyword(kw string) bool {
	if p.peekBare() == kw {
		p.i += len(kw)
		return true
	}
	return false
}

func (p *rawParser) or() string {
	parts := []string{p.and()}
	for p.err == nil && p.keyword("OR") {
		parts = append(parts, p.and())
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, " | ") + ")"
}

func (p *rawParser) and() string {
	parts := []string{p.not()}
	for p.err == nil {
		p.space()
		if p.i >= len(p.s) || p.s[p.i] == ')' {
			break
		}
		if w := p.peekBare(); w == "OR" || w == "NOT" {
			break
		}
		p.keyword("AND")
		parts = append(parts, p.not())
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, " & ") + ")"
}

func (p *rawParser) not() string {
	q := p.primary()
	for p.err == nil && p.keyword("NOT") {
		q = "(" + q + " & !" + p.primary() + ")"
	}
	return q
}

// nothing is a tsquery that matches no entry: a phrase without words
// means that in FTS5.
const nothing = "('x' & !'x')"

func (p *rawParser) primary() string {
	if p.err != nil {
		return nothing
	}
	p.space()
	if p.i >= len(p.s) {
		p.fail()
		return nothing
	}
	if p.s[p.i] == '(' {
		p.i++
		q := p.or()
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ')' {
			p.fail()
			return nothing
		}
		p.i++
		return q
	}
	switch w := p.peekBare(); w {
	case "AND", "OR", "NOT":
		p.fail()
		return nothing
	case "NEAR":
		if p.i+4 < len(p.s) && p.s[p.i+4] == '(' {
			p.fail()
			return nothing
		}
	}
	if w := p.peekBare(); w != "" {
		j := p.i + len(w)
		for j < len(p.s) && p.s[j] == ' ' {
			j++
		}
		if j < len(p.s) && p.s[j] == ':' {
			if w != "text" {
				p.err = refuse(history.CodeIndexRefused, "the raw query names no such column: %q (the one column is text)", w)
				return nothing
			}
			p.i = j + 1
		}
	}
	var ws []string
	for {
		part, ok := p.phrasePart()
		if !ok {
			p.fail()
			return nothing
		}
		ws = append(ws, words(part)...)
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '+' {
			p.i++
			continue
		}
		break
	}
	prefix := false
	if p.i < len(p.s) && p.s[p.i] == '*' {
		p.i++
		prefix = true
	}
	p.m.add(ws, prefix)
	if q := phrase(ws, prefix); q != "" {
		return q
	}
	return nothing
}

// phrasePart consumes one string or bareword.
func (p *rawParser) phrasePart() (string, bool) {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '"' {
		var b strings.Builder
		for j := p.i + 1; j < len(p.s); j++ {
			if p.s[j] == '"' {
				if j+1 < len(p.s) && p.s[j+1] == '"' {
					b.WriteByte('"')
					j++
					continue
				}
				p.i = j + 1
				return b.String(), true
			}
			b.WriteByte(p.s[j])
		}
		return "", false
	}
	w := p.peekBare()
	if w == "" {
		return "", false
	}
	p.i += len(w)
	return w, true
}
