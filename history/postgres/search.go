package postgres

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentloom/loom/history"
)

// Search answers the entries matching q, newest first. A words query that
// finds nothing is retried as substrings, when the index keeps the
// vocabulary and every word is at least history.MinSubstringRunes long:
// each word stands for the (at most 64 newest) indexed words containing
// it. Such hits have Substring set. A raw query is read as FTS5 syntax
// (see the package documentation).
func (s *Store) Search(ctx context.Context, q history.Query) ([]history.Hit, error) {
	if err := s.check(history.CodeIndexUnavailable); err != nil {
		return nil, err
	}
	if err := q.Check(); err != nil {
		return nil, err
	}
	limit := clampInt(q.Limit, history.MinLimit, history.MaxLimit)
	if !storable(q.Kind) || !storable(q.Session) {
		return []history.Hit{}, nil // no entry has such a kind or session
	}
	m := &matcher{}
	if q.Syntax == history.Raw {
		expr, err := rawToTSQuery(q.Text, m)
		if err != nil {
			return nil, err
		}
		return s.match(ctx, expr, m, q, limit)
	}
	plan, err := planWords(q.Text)
	if err != nil {
		return nil, err
	}
	hits, err := s.match(ctx, tsquery(plan), planMatcher(plan), q, limit)
	if err != nil || len(hits) > 0 || !s.substrings {
		return hits, err
	}
	sub, ok, err := s.substringPlan(ctx, plan)
	if err != nil || !ok {
		return hits, classify(ctx, err, history.CodeIndexBusy, history.CodeIndexUnavailable, "searching")
	}
	hits, err = s.match(ctx, tsquery(sub), planMatcher(sub), q, limit)
	for i := range hits {
		hits[i].Substring = true
	}
	return hits, err
}

func planMatcher(q history.WordsQuery) *matcher {
	m := &matcher{}
	for _, g := range q.Groups {
		for _, t := range g {
			m.add(words(t.Text), t.Prefix)
		}
	}
	return m
}

// match runs one tsquery against the word index, newest first, and cuts
// each hit's snippet from (the first 64 KiB of) its text.
func (s *Store) match(ctx context.Context, expr string, m *matcher, q history.Query, limit int) ([]history.Hit, error) {
	var b strings.Builder
	b.WriteString(`SELECT seq, session, entry, kind, role, at, left(text, ` + strconv.Itoa(snippetFetchLen) + `), ` + packedColumn("packed") + ` FROM entries WHERE words @@ $1::tsquery`)
	args := []any{expr}
	if q.Kind != "" {
		args = append(args, q.Kind)
		b.WriteString(` AND kind = $` + strconv.Itoa(len(args)))
	}
	if q.Scope == history.Session {
		args = append(args, q.Session)
		b.WriteString(` AND session = $` + strconv.Itoa(len(args)))
	}
	if q.Before > 0 {
		args = append(args, q.Before)
		b.WriteString(` AND seq < $` + strconv.Itoa(len(args)))
	}
	args = append(args, limit)
	b.WriteString(` ORDER BY seq DESC LIMIT $` + strconv.Itoa(len(args)))
	rows, err := s.pool.Query(ctx, b.String(), args...)
	if err != nil {
		return nil, classify(ctx, err, history.CodeIndexBusy, history.CodeIndexUnavailable, "searching")
	}
	return scanHits(ctx, rows, func(text string) string { return snippet(leftChars(text, snippetFetchLen), m) })
}

// Recent answers the newest entries of session, newest first.
func (s *Store) Recent(ctx context.Context, session string, limit int) ([]history.Hit, error) {
	if err := s.check(history.CodeIndexUnavailable); err != nil {
		return nil, err
	}
	if session == "" || len(session) > history.MaxIDBytes {
		return nil, refuse(history.CodeIndexRefused, "browsing needs the calling session (1 to %d bytes)", history.MaxIDBytes)
	}
	if !storable(session) {
		return []history.Hit{}, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT seq, session, entry, kind, role, at, left(text, $1), `+packedColumn("packed")+`
		FROM entries WHERE session = $2 ORDER BY seq DESC LIMIT $3`,
		history.MaxSnippetBytes, session, clampInt(limit, history.MinLimit, history.MaxLimit))
	if err != nil {
		return nil, classify(ctx, err, history.CodeIndexBusy, history.CodeIndexUnavailable, "browsing")
	}
	return scanHits(ctx, rows, func(text string) string { return leftChars(text, history.MaxSnippetBytes) })
}

// scanHits reads hits whose last two columns are a row's text (or its
// start) and packed, and cuts each snippet from the text with cut.
func scanHits(ctx context.Context, rows pgx.Rows, cut func(string) string) ([]history.Hit, error) {
	defer rows.Close()
	hits := []history.Hit{}
	for rows.Next() {
		var h history.Hit
		var at int64
		var text string
		var packed []byte
		err := rows.Scan(&h.Seq, &h.Session, &h.Entry, &h.Kind, &h.Role, &at, &text, &packed)
		text = unpack(text, packed)
		if err != nil {
			return nil, classify(ctx, err, history.CodeIndexBusy, history.CodeIndexUnavailable, "reading hits")
		}
		h.Time = time.UnixMilli(at).UTC()
		h.Snippet = history.ClipSnippet(cut(text))
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(ctx, err, history.CodeIndexBusy, history.CodeIndexUnavailable, "searching")
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
	if !storable(session) || !storable(entry) {
		return nil, refuse(history.CodeIndexRefused, "no entry %.80q in session %.80q; check the IDs", entry, session)
	}
	rows, err := s.pool.Query(ctx, `WITH target AS (SELECT seq FROM entries WHERE session = $1 AND entry = $2)
		SELECT * FROM (
			(SELECT e.seq, e.session, e.entry, e.kind, e.role, e.at, e.text, `+packedColumn("e.packed")+` FROM entries e, target
				WHERE e.session = $1 AND e.seq < target.seq ORDER BY e.seq DESC LIMIT $3)
			UNION ALL SELECT e.seq, e.session, e.entry, e.kind, e.role, e.at, e.text, `+packedColumn("e.packed")+` FROM entries e, target WHERE e.seq = target.seq
			UNION ALL (SELECT e.seq, e.session, e.entry, e.kind, e.role, e.at, e.text, `+packedColumn("e.packed")+` FROM entries e, target
				WHERE e.session = $1 AND e.seq > target.seq ORDER BY e.seq LIMIT $3)
		) around ORDER BY seq`, session, entry, around)
	if err != nil {
		return nil, classify(ctx, err, history.CodeIndexBusy, history.CodeIndexUnavailable, "reading")
	}
	defer rows.Close()
	var out []history.Entry
	for rows.Next() {
		var e history.Entry
		var at, seq int64
		var packed []byte
		err := rows.Scan(&seq, &e.Session, &e.ID, &e.Kind, &e.Role, &at, &e.Text, &packed)
		e.Text = unpack(e.Text, packed)
		if err != nil {
			return nil, classify(ctx, err, history.CodeIndexBusy, history.CodeIndexUnavailable, "reading")
		}
		e.Time = time.UnixMilli(at).UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(ctx, err, history.CodeIndexBusy, history.CodeIndexUnavailable, "reading")
	}
	if len(out) == 0 {
		return nil, refuse(history.CodeIndexRefused, "no entry %.80q in session %.80q; check the IDs", entry, session)
	}
	return out, nil
}

// clampInt answers v moved into [lo, hi].
func clampInt(v, lo, hi int) int {
	return max(lo, min(v, hi))
}
