package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"time"

	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/history/internal/packed"
	"github.com/agentloom/loom/tool"
)

// rowsPerInsert is how many entries one INSERT statement carries in a
// batch; SQLite's bound-parameter limit is far above rowsPerInsert*7.
const rowsPerInsert = 64

// MaxBatchEntries bounds one IndexBatch call: one transaction.
const MaxBatchEntries = 20_000

// Index adds one entry to the index. It is IndexBatch of one entry.
func (s *Store) Index(ctx context.Context, e history.Entry) error {
	_, err := s.IndexBatch(ctx, []history.Entry{e})
	return err
}

// IndexBatch adds entries in one transaction and answers how many were
// new. Either the whole batch is indexed or none of it. Indexing is
// idempotent: an entry whose (Session, ID) is already indexed is skipped
// and keeps its first text, so a host may re-feed its log after a crash.
// A batch of more than MaxBatchEntries entries is refused
// history.CodeIndexRefused. So is, naming it, an entry with an empty
// Session, ID or Kind, the reserved Kind history.KindNote, or a field over
// its bound (history.MaxIDBytes, history.MaxKindBytes,
// history.MaxEntryTextBytes).
func (s *Store) IndexBatch(ctx context.Context, entries []history.Entry) (int, error) {
	if len(entries) > MaxBatchEntries {
		return 0, refuse(history.CodeIndexRefused, "a batch holds at most %d entries, not %d", MaxBatchEntries, len(entries))
	}
	for i := range entries {
		if err := entries[i].Check(); err != nil {
			return 0, err
		}
	}
	if len(entries) == 0 {
		return 0, nil
	}
	now := time.Now()
	stored := storedTexts(entries)
	return s.write(ctx, history.CodeIndexBusy, history.CodeIndexUnavailable, "indexing", func(tx *sql.Tx) (int, error) {
		return s.insertEntries(ctx, tx, entries, stored, now)
	})
}

// storedTexts answers the stored form of each entry's text (see
// storedText), compressing on all cores before the write lock is taken.
// A note's text is stored as it is.
func storedTexts(entries []history.Entry) []any {
	out := make([]any, len(entries))
	fill := func(i int) {
		if entries[i].Kind == history.KindNote {
			out[i] = entries[i].Text
		} else {
			out[i] = storedText(entries[i].Text)
		}
	}
	packed.Each(len(entries), fill)
	return out
}

// write runs fn in one immediate transaction on the writer, serialised
// with every other write of this process, and classifies its failure with
// the caller's codes. Words fn stored in the vocabulary (s.pending) are
// remembered once the transaction commits, and the entries it counted go
// towards the next background checkpoint (see checkpointer).
func (s *Store) write(ctx context.Context, busy, unavailable tool.Code, what string, fn func(*sql.Tx) (int, error)) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return 0, refuse(unavailable, "the index is closed")
	}
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return 0, classify(err, busy, unavailable, "", what)
	}
	defer tx.Rollback()
	s.pending = s.pending[:0]
	n, err := fn(tx)
	if err != nil {
		return 0, classify(err, busy, unavailable, "", what)
	}
	if err := tx.Commit(); err != nil {
		return 0, classify(err, busy, unavailable, "", what)
	}
	s.known.remember(s.pending)
	s.pending = s.pending[:0]
	s.checkpoint.added(n)
	return n, nil
}

// insertEntries stores entries (skipping known ones), their texts as
// stored (storedTexts), feeds every row the
// transaction added to the word index in one statement, which is far
// cheaper than a trigger per row, and adds their words to the vocabulary.
// It runs under s.mu, inside write. The batch's new vocabulary words are
// gathered on another goroutine while SQLite stores the entries; s.known
// changes only after fn returns, so that goroutine's reads of it are safe.
func (s *Store) insertEntries(ctx context.Context, tx *sql.Tx, entries []history.Entry, stored []any, now time.Time) (int, error) {
	var words []any
	var gather sync.WaitGroup
	if s.substrings {
		gather.Go(func() { words = newWords(entries, s.known) })
		defer gather.Wait()
	}
	var last int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM entry_rows`).Scan(&last); err != nil {
		return 0, err
	}
	var full *sql.Stmt
	defer func() {
		if full != nil {
			full.Close()
		}
	}()
	args := make([]any, 0, 6*rowsPerInsert)
	added := 0
	for start := 0; start < len(entries); start += rowsPerInsert {
		chunk := entries[start:min(start+rowsPerInsert, len(entries))]
		args = args[:0]
		for i, e := range chunk {
			at := e.Time
			if at.IsZero() {
				at = now
			}
			args = append(args, e.Session, e.ID, e.Kind, e.Role, at.UnixMilli(), stored[start+i])
		}
		var res sql.Result
		var err error
		if len(chunk) == rowsPerInsert {
			if full == nil {
				if full, err = tx.PrepareContext(ctx, insertSQL(rowsPerInsert)); err != nil {
					return 0, err
				}
			}
			res, err = full.ExecContext(ctx, args...)
		} else {
			res, err = tx.ExecContext(ctx, insertSQL(len(chunk)), args...)
		}
		if err != nil {
			return 0, err
		}
		n, _ := res.RowsAffected()
		added += int(n)
	}
	if added == 0 {
		return 0, nil
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO entries_words(rowid, text) SELECT seq, text FROM entries WHERE seq > ?`, last); err != nil {
		return 0, err
	}
	if s.substrings {
		gather.Wait()
		if err := insertVocabulary(ctx, tx, words); err != nil {
			return 0, err
		}
		s.pending = append(s.pending, words...)
	}
	return added, nil
}

func insertSQL(rows int) string {
	var b strings.Builder
	b.WriteString(`INSERT OR IGNORE INTO entry_rows(session, entry, kind, role, at, text) VALUES `)
	for i := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?,?,?)")
	}
	return b.String()
}
