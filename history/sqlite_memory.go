package history

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Remember stores n as an entry of kind KindNote (its role is the note's
// kind, its text the title, description and note), after PrepareNote has
// redacted and checked it, and counts it against MaxNotes in the same
// transaction. At the ceiling it is refused CeilingReached.
func (s *SQLite) Remember(ctx context.Context, n Note) error {
	n, err := PrepareNote(n)
	if err != nil {
		return err
	}
	if n.Time.IsZero() {
		n.Time = time.Now()
	}
	_, err = s.write(ctx, MemoryBusy, MemoryUnavailable, "remembering", func(tx *sql.Tx) (int, error) {
		var count int
		if err := tx.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = 'notes'`).Scan(&count); err != nil {
			return 0, err
		}
		if count >= MaxNotes {
			return 0, refuse(CeilingReached, "%d notes are stored, the lifetime ceiling; no more can be remembered", MaxNotes)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE settings SET value = value + 1 WHERE name = 'notes'`); err != nil {
			return 0, err
		}
		e := Entry{
			Session: n.Session,
			ID:      fmt.Sprintf("note-%d", count+1),
			Kind:    KindNote,
			Role:    string(n.Kind),
			Text:    n.Title + "\n" + n.Description + "\n\n" + n.Text,
			Time:    n.Time,
		}
		return s.insertEntries(ctx, tx, []Entry{e}, n.Time)
	})
	return err
}

// Notes answers how many notes the store holds: the count MaxNotes bounds.
func (s *SQLite) Notes(ctx context.Context) (int, error) {
	if err := s.check(MemoryUnavailable); err != nil {
		return 0, err
	}
	var n int
	err := s.readers.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = 'notes'`).Scan(&n)
	return n, classify(err, MemoryBusy, MemoryUnavailable, "", "counting notes")
}
