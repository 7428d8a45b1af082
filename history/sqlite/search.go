package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/tool"
)

// snippetTokens is how many tokens FTS5's snippet() shows around a match.
const snippetTokens = 24

// Search answers the entries matching q, newest first. A words query that
// finds nothing is retried as substrings, when the database keeps the
// vocabulary index and every word is at least history.MinSubstringRunes long:
// each word stands for the (at most maxSubstringWords newest) indexed
// words containing it. Such hits have Substring set.
func (s *Store) Search(ctx context.Context, q history.Query) ([]history.Hit, error) {
	if err := s.check(history.CodeIndexUnavailable); err != nil {
		return nil, err
	}
	if err := q.Check(); err != nil {
		return nil, err
	}
	limit := clampInt(q.Limit, history.MinLimit, history.MaxLimit)
	if q.Syntax == history.Raw {
		return s.match(ctx, "entries_words", q.Text, q, limit, history.CodeIndexRefused)
	}
	plan, err := s.planWords(ctx, q.Text)
	if err != nil {
		return nil, err
	}
	hits, err := s.match(ctx, "entries_words", fts5(plan), q, limit, "")
	if err != nil || len(hits) > 0 || !s.substrings {
		return hits, err
	}
	sub, ok, err := s.substringPlan(ctx, plan)
	if err != nil || !ok {
		return hits, classify(err, history.CodeIndexBusy, history.CodeIndexUnavailable, "", "searching")
	}
	hits, err = s.match(ctx, "entries_words", fts5(sub), q, limit, "")
	for i := range hits {
		hits[i].Substring = true
	}
	return hits, err
}

// match runs one MATCH against an FTS5 table keyed by entries.seq.
func (s *Store) match(ctx context.Context, table, expr string, q history.Query, limit int, refusedSQL tool.Code) ([]history.Hit, error) {
	var b strings.Builder
	b.WriteString(`SELECT e.seq, e.session, e.entry, e.kind, e.role, e.at, snippet(` + table + `, 0, '**', '**', '…', ` + itoa(snippetTokens) + `)
		FROM ` + table + ` JOIN entry_rows e ON e.seq = ` + table + `.rowid
		WHERE ` + table + ` MATCH ?`)
	args := []any{expr}
	if q.Kind != "" {
		b.WriteString(` AND e.kind = ?`)
		args = append(args, q.Kind)
	}
	if q.Scope == history.Session {
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
		return nil, classify(err, history.CodeIndexBusy, history.CodeIndexUnavailable, refusedSQL, "searching")
	}
	return scanHits(rows, refusedSQL)
}

// Recent answers the newest entries of session, newest first.
func (s *Store) Recent(ctx context.Context, session string, limit int) ([]history.Hit, error) {
	if err := s.check(history.CodeIndexUnavailable); err != nil {
		return nil, err
	}
	if session == "" || len(session) > history.MaxIDBytes {
		return nil, refuse(history.CodeIndexRefused, "browsing needs the calling session (1 to %d bytes)", history.MaxIDBytes)
	}
	rows, err := s.readers.QueryContext(ctx, `SELECT seq, session, entry, kind, role, at, substr(`+textFunc+`(text), 1, ?)
		FROM entry_rows WHERE session = ? ORDER BY seq DESC LIMIT ?`,
		history.MaxSnippetBytes, session, clampInt(limit, history.MinLimit, history.MaxLimit))
	if err != nil {
		return nil, classify(err, history.CodeIndexBusy, history.CodeIndexUnavailable, "", "browsing")
	}
	return scanHits(rows, "")
}

func scanHits(rows *sql.Rows, refusedSQL tool.Code) ([]history.Hit, error) {
	defer rows.Close()
	hits := []history.Hit{}
	for rows.Next() {
		var h history.Hit
		var at int64
		if err := rows.Scan(&h.Seq, &h.Session, &h.Entry, &h.Kind, &h.Role, &at, &h.Snippet); err != nil {
			return nil, classify(err, history.CodeIndexBusy, history.CodeIndexUnavailable, refusedSQL, "reading hits")
		}
		h.Time = time.UnixMilli(at).UTC()
		h.Snippet = history.ClipSnippet(h.Snippet)
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(err, history.CodeIndexBusy, history.CodeIndexUnavailable, refusedSQL, "searching")
	}
	return hits, nil
}

// Read answers the entry (session, entry) and up to around neighbours of
// the same session on each side, oldest first.
func (s *Store) Read(ctx context.Context, session, entry string, around int) ([]history.Entry, error) {
	if err := s.check(history.CodeIndexUnavailable); err != nil {
		return nil, err
	}
	around = clampInt(around, 0, history.MaxAround)
	var seq int64
	err := s.readers.QueryRowContext(ctx, `SELECT seq FROM entry_rows WHERE session = ? AND entry = ?`, session, entry).Scan(&seq)
	if err == sql.ErrNoRows {
		return nil, refuse(history.CodeIndexRefused, "no entry %.80q in session %.80q; check the IDs", entry, session)
	}
	if err != nil {
		return nil, classify(err, history.CodeIndexBusy, history.CodeIndexUnavailable, "", "reading")
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
		return nil, classify(err, history.CodeIndexBusy, history.CodeIndexUnavailable, "", "reading")
	}
	defer rows.Close()
	var out []history.Entry
	for rows.Next() {
		var e history.Entry
		var at, sq int64
		if err := rows.Scan(&sq, &e.Session, &e.ID, &e.Kind, &e.Role, &at, &e.Text); err != nil {
			return nil, classify(err, history.CodeIndexBusy, history.CodeIndexUnavailable, "", "reading")
		}
		e.Time = time.UnixMilli(at).UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(err, history.CodeIndexBusy, history.CodeIndexUnavailable, "", "reading")
	}
	return out, nil
}

// clampInt answers v moved into [lo, hi].
func clampInt(v, lo, hi int) int {
	return max(lo, min(v, hi))
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
