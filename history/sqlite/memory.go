package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/agentloom/loom/history"
)

// Remember stores n as an entry of kind history.KindNote (its role is the
// note's kind, its text the title, description and note), after
// history.PrepareNote has redacted and checked it, and counts it against
// history.MaxNotes in the same transaction. At the ceiling it is refused
// history.CodeMemoryCeilingReached.
func (s *Store) Remember(ctx context.Context, n history.Note) error {
	n, err := history.PrepareNote(n)
	if err != nil {
		return err
	}
	if n.Time.IsZero() {
		n.Time = time.Now()
	}
	_, err = s.write(ctx, history.CodeMemoryBusy, history.CodeMemoryUnavailable, "remembering", func(tx *sql.Tx) (int, error) {
		var count int
		if err := tx.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = 'notes'`).Scan(&count); err != nil {
			return 0, err
		}
		if count >= history.MaxNotes {
			return 0, refuse(history.CodeMemoryCeilingReached, "%d notes are stored, the lifetime ceiling; no more can be remembered", history.MaxNotes)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE settings SET value = value + 1 WHERE name = 'notes'`); err != nil {
			return 0, err
		}
		e := history.Entry{
			Session: n.Session,
			ID:      fmt.Sprintf("note-%d", count+1),
			Kind:    history.KindNote,
			Role:    string(n.Kind),
			Text:    n.Title + "\n" + n.Description + "\n\n" + n.Text,
			Time:    n.Time,
		}
		return s.insertEntries(ctx, tx, []history.Entry{e}, n.Time)
	})
	return err
}

// Notes answers how many notes the store holds: the count history.MaxNotes
// bounds.
func (s *Store) Notes(ctx context.Context) (int, error) {
	if err := s.check(history.CodeMemoryUnavailable); err != nil {
		return 0, err
	}
	var n int
	err := s.readers.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = 'notes'`).Scan(&n)
	return n, classify(err, history.CodeMemoryBusy, history.CodeMemoryUnavailable, "", "counting notes")
}
