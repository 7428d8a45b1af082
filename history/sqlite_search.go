package history

import (
	"context"
	"database/sql"
	"strings"
	"time"
	"unicode/utf8"
)

// snippetTokens is how many tokens FTS5's snippet() shows around a match.
const snippetTokens = 24

// Search answers the entries matching q, newest first. A words query that
// finds nothing is retried as substrings, when the database keeps the
// vocabulary index and every word is at least MinSubstringRunes long:
// each word stands for the (at most MaxSubstringWords newest) indexed
// words containing it. Such hits have Substring set.
func (s *SQLite) Search(ctx context.Context, q Query) ([]Hit, error) {
	if err := s.check(IndexUnavailable); err != nil {
		return nil, err
	}
	if err := checkQuery(q); err != nil {
		return nil, err
	}
	limit := clampInt(q.Limit, MinLimit, MaxLimit)
	if q.Syntax == Raw {
		return s.match(ctx, "entries_words", q.Text, q, limit, IndexRefused)
	}
	plan, err := s.planWords(ctx, q.Text)
	if err != nil {
		return nil, err
	}
	hits, err := s.match(ctx, "entries_words", plan.fts5(), q, limit, "")
	if err != nil || len(hits) > 0 || !s.substrings {
		return hits, err
	}
	sub, ok, err := s.substringPlan(ctx, plan)
	if err != nil || !ok {
		return hits, classify(err, IndexBusy, IndexUnavailable, "", "searching")
	}
	hits, err = s.match(ctx, "entries_words", sub.fts5(), q, limit, "")
	for i := range hits {
		hits[i].Substring = true
	}
	return hits, err
}

// checkQuery refuses a query that breaks a bound or names an unknown
// syntax or scope.
func checkQuery(q Query) error {
	switch {
	case strings.TrimSpace(q.Text) == "":
		return refuse(IndexRefused, "the query is blank")
	case len(q.Text) > MaxQueryBytes:
		return refuse(IndexRefused, "the query is %d bytes; at most %d are accepted", len(q.Text), MaxQueryBytes)
	case q.Syntax != "" && q.Syntax != Words && q.Syntax != Raw:
		return refuse(IndexRefused, "syntax %q is not words or raw", q.Syntax)
	case q.Scope != "" && q.Scope != Repository && q.Scope != Session:
		return refuse(IndexRefused, "scope %q is not repository or session", q.Scope)
	case q.Scope == Session && q.Session == "":
		return refuse(IndexRefused, "a session-scope search needs the calling session")
	case len(q.Kind) > MaxKindBytes:
		return refuse(IndexRefused, "the kind is %d bytes; at most %d are accepted", len(q.Kind), MaxKindBytes)
	case q.Before < 0:
		return refuse(IndexRefused, "before must be a positive position, not %d", q.Before)
	}
	return nil
}

// match runs one MATCH against an FTS5 table keyed by entries.seq.
func (s *SQLite) match(ctx context.Context, table, expr string, q Query, limit int, refusedSQL Code) ([]Hit, error) {
	var b strings.Builder
	b.WriteString(`SELECT e.seq, e.session, e.entry, e.kind, e.role, e.at, snippet(` + table + `, 0, '**', '**', '…', ` + itoa(snippetTokens) + `)
		FROM ` + table + ` JOIN entries e ON e.seq = ` + table + `.rowid
		WHERE ` + table + ` MATCH ?`)
	args := []any{expr}
	if q.Kind != "" {
		b.WriteString(` AND e.kind = ?`)
		args = append(args, q.Kind)
	}
	if q.Scope == Session {
		b.WriteString(` AND e.session = ?`)
		args = append(args, q.Session)
	}
	if q.Before > 0 {
		b.WriteString(` AND ` + table + `.rowid < ?`)
		args = append(args, q.Before)
	}
	b.WriteString(` ORDER BY ` + table + `.rowid DESC LIMIT ?`)
	args = append(args, limit)
	rows, err := s.readers.QueryContext(ctx, b.String(), args...)
	if err != nil {
		return nil, classify(err, IndexBusy, IndexUnavailable, refusedSQL, "searching")
	}
	return scanHits(rows, refusedSQL)
}

// Recent answers the newest entries of session, newest first.
func (s *SQLite) Recent(ctx context.Context, session string, limit int) ([]Hit, error) {
	if err := s.check(IndexUnavailable); err != nil {
		return nil, err
	}
	if session == "" || len(session) > MaxIDBytes {
		return nil, refuse(IndexRefused, "browsing needs the calling session (1 to %d bytes)", MaxIDBytes)
	}
	rows, err := s.readers.QueryContext(ctx, `SELECT seq, session, entry, kind, role, at, substr(text, 1, ?)
		FROM entries WHERE session = ? ORDER BY seq DESC LIMIT ?`,
		MaxSnippetBytes, session, clampInt(limit, MinLimit, MaxLimit))
	if err != nil {
		return nil, classify(err, IndexBusy, IndexUnavailable, "", "browsing")
	}
	return scanHits(rows, "")
}

func scanHits(rows *sql.Rows, refusedSQL Code) ([]Hit, error) {
	defer rows.Close()
	hits := []Hit{}
	for rows.Next() {
		var h Hit
		var at int64
		if err := rows.Scan(&h.Seq, &h.Session, &h.Entry, &h.Kind, &h.Role, &at, &h.Snippet); err != nil {
			return nil, classify(err, IndexBusy, IndexUnavailable, refusedSQL, "reading hits")
		}
		h.Time = time.UnixMilli(at).UTC()
		h.Snippet = clipBytes(h.Snippet, MaxSnippetBytes)
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(err, IndexBusy, IndexUnavailable, refusedSQL, "searching")
	}
	return hits, nil
}

// Read answers the entry (session, entry) and up to around neighbours of
// the same session on each side, oldest first.
func (s *SQLite) Read(ctx context.Context, session, entry string, around int) ([]Entry, error) {
	if err := s.check(IndexUnavailable); err != nil {
		return nil, err
	}
	around = clampInt(around, 0, MaxAround)
	var seq int64
	err := s.readers.QueryRowContext(ctx, `SELECT seq FROM entries WHERE session = ? AND entry = ?`, session, entry).Scan(&seq)
	if err == sql.ErrNoRows {
		return nil, refuse(IndexRefused, "no entry %.80q in session %.80q; check the IDs", entry, session)
	}
	if err != nil {
		return nil, classify(err, IndexBusy, IndexUnavailable, "", "reading")
	}
	rows, err := s.readers.QueryContext(ctx, `SELECT * FROM (
			SELECT seq, session, entry, kind, role, at, text FROM entries
			WHERE session = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3)
		UNION ALL SELECT seq, session, entry, kind, role, at, text FROM entries WHERE seq = ?2
		UNION ALL SELECT * FROM (
			SELECT seq, session, entry, kind, role, at, text FROM entries
			WHERE session = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3)
		ORDER BY seq`, session, seq, around)
	if err != nil {
		return nil, classify(err, IndexBusy, IndexUnavailable, "", "reading")
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var e Entry
		var at, sq int64
		if err := rows.Scan(&sq, &e.Session, &e.ID, &e.Kind, &e.Role, &at, &e.Text); err != nil {
			return nil, classify(err, IndexBusy, IndexUnavailable, "", "reading")
		}
		e.Time = time.UnixMilli(at).UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(err, IndexBusy, IndexUnavailable, "", "reading")
	}
	return out, nil
}

func clampInt(v, lo, hi int) int {
	return max(lo, min(v, hi))
}

// clipBytes cuts s to at most n bytes on a rune boundary, marking a cut
// with an ellipsis inside the bound.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var buf [20]byte
	i := len(buf)
	for n > 0 {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
	}
	return string(buf[i:])
}
