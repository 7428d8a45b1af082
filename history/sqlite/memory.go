package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentloom/loom/history"
)

// Remember stores n as an entry of kind history.KindNote (its role is the
// note's kind, its text the title, description and note), after
// history.PrepareNote has redacted and checked it, and counts it against
// history.MaxNotes in the same transaction. A note identical to one
// stored is answered AlreadyStored (see history.Remembered), at the
// ceiling too. A new note at the ceiling is refused
// history.CodeMemoryCeilingReached.
func (s *Store) Remember(ctx context.Context, n history.Note) (history.Remembered, error) {
	n, err := history.PrepareNote(n)
	if err != nil {
		return history.Remembered{}, err
	}
	if n.Time.IsZero() {
		n.Time = time.Now()
	}
	// Title and description are single lines, so this text keeps the
	// three fields apart: equal texts are equal notes.
	text := n.Title + "\n" + n.Description + "\n\n" + n.Text
	var found bool
	_, err = s.write(ctx, history.CodeMemoryBusy, history.CodeMemoryUnavailable, "remembering", func(tx *sql.Tx) (int, error) {
		err := tx.QueryRowContext(ctx, findNote, string(n.Kind), text).Scan(new(int))
		switch {
		case err == nil:
			found = true
			return 0, nil
		case !errors.Is(err, sql.ErrNoRows):
			return 0, err
		}
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
			Text:    text,
			Time:    n.Time,
		}
		es := []history.Entry{e}
		return s.insertEntries(ctx, tx, es, storedTexts(es), n.Time)
	})
	if err != nil {
		return history.Remembered{}, err
	}
	return history.Remembered{AlreadyStored: found}, nil
}

// findNote finds a stored note by kind and text. The note kind is written
// into the query, not bound, so SQLite can prove the partial index
// entries_notes covers it.
var findNote = fmt.Sprintf(`SELECT 1 FROM entry_rows WHERE kind = '%s' AND role = ? AND text = ? LIMIT 1`, history.KindNote)

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

// headingChars is how much of a note's stored text NoteHeadings reads, in
// characters: more than its title and description lines can hold.
const headingChars = 300

// NoteHeadings implements history.NoteLister: the stored notes' headings,
// newest first, at most limit (clamped to [0, history.MaxNotes]). It reads
// the notes through the partial index entries_notes, so its cost is the
// notes', not the whole history's.
func (s *Store) NoteHeadings(ctx context.Context, limit int) ([]history.NoteHeading, error) {
	if err := s.check(history.CodeMemoryUnavailable); err != nil {
		return nil, err
	}
	limit = clampInt(limit, 0, history.MaxNotes)
	rows, err := s.readers.QueryContext(ctx, noteHeadings, limit)
	if err != nil {
		return nil, classify(err, history.CodeMemoryBusy, history.CodeMemoryUnavailable, "", "listing notes")
	}
	defer rows.Close()
	hs := []history.NoteHeading{}
	for rows.Next() {
		var session, role, text string
		var at int64
		if err := rows.Scan(&session, &role, &at, &text); err != nil {
			return nil, classify(err, history.CodeMemoryBusy, history.CodeMemoryUnavailable, "", "listing notes")
		}
		hs = append(hs, history.HeadingOf(session, role, text, time.UnixMilli(at)))
	}
	return hs, classify(rows.Err(), history.CodeMemoryBusy, history.CodeMemoryUnavailable, "", "listing notes")
}

// noteHeadings lists the notes newest first. The kind is written into the
// query so SQLite can use the partial index entries_notes.
var noteHeadings = fmt.Sprintf(`SELECT session, role, at, substr(text, 1, %d) FROM entry_rows INDEXED BY entries_notes WHERE kind = '%s' ORDER BY seq DESC LIMIT ?`, headingChars, history.KindNote)
