package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"sync"
)

// tokenProbe asks SQLite's own unicode61 tokenizer, configured as the
// word index is, which terms it keeps a token of. Go's Unicode tables are
// newer than SQLite's, and SQLite counts a character its table does not
// know as part of a word, so only the tokenizer itself can say for
// certain whether a non-ASCII term is searchable. It runs on a private
// in-memory database over one pinned connection.
type tokenProbe struct {
	mu   sync.Mutex
	db   *sql.DB
	conn *sql.Conn
}

func openProbe(ctx context.Context) (*tokenProbe, error) {
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	for _, q := range []string{
		`CREATE VIRTUAL TABLE probe USING fts5(text, tokenize='unicode61 remove_diacritics 2')`,
		`CREATE VIRTUAL TABLE probe_terms USING fts5vocab(probe, 'instance')`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			conn.Close()
			db.Close()
			return nil, err
		}
	}
	return &tokenProbe{db: db, conn: conn}, nil
}

func (p *tokenProbe) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conn.Close()
	return p.db.Close()
}

// searchable answers, for each text, whether the tokenizer keeps at least
// one token of it.
func (p *tokenProbe) searchable(ctx context.Context, texts []string) ([]bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.conn.ExecContext(ctx, `DELETE FROM probe`); err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString(`INSERT INTO probe(rowid, text) VALUES `)
	args := make([]any, 0, 2*len(texts))
	for i, t := range texts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?)")
		args = append(args, i, t)
	}
	if _, err := p.conn.ExecContext(ctx, b.String(), args...); err != nil {
		return nil, err
	}
	rows, err := p.conn.QueryContext(ctx, `SELECT DISTINCT doc FROM probe_terms`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]bool, len(texts))
	for rows.Next() {
		var i int
		if err := rows.Scan(&i); err != nil {
			return nil, err
		}
		if i >= 0 && i < len(out) {
			out[i] = true
		}
	}
	return out, rows.Err()
}
