package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentloom/loom/history"
)

// Remember stores n as an entry of kind history.KindNote (its role is the
// note's kind, its text the title, description and note), after
// history.PrepareNote has redacted and checked it, and counts it against
// history.MaxNotes in the same transaction, under the schema's writer
// lock: the ceiling holds across every host sharing the schema. A note
// identical to one stored is answered AlreadyStored (see
// history.Remembered), at the ceiling too. A new note at the ceiling is
// refused history.CodeMemoryCeilingReached.
func (s *Store) Remember(ctx context.Context, n history.Note) (history.Remembered, error) {
	n, err := history.PrepareNote(n)
	if err != nil {
		return history.Remembered{}, err
	}
	if n.Time.IsZero() {
		n.Time = time.Now()
	}
	if !storable(n.Session) {
		return history.Remembered{}, refuse(history.CodeMemoryFieldInvalid, "the note's session must be valid UTF-8 without NUL bytes")
	}
	text := storableText(n.Title + "\n" + n.Description + "\n\n" + n.Text)
	var found bool
	var stored []string
	_, err = s.write(ctx, history.CodeMemoryBusy, history.CodeMemoryUnavailable, "remembering", func(tx pgx.Tx) (int, error) {
		err := tx.QueryRow(ctx, findNote, string(n.Kind), text).Scan(new(int))
		switch {
		case err == nil:
			found = true
			return 0, nil
		case !errors.Is(err, pgx.ErrNoRows):
			return 0, err
		}
		var count int
		if err := tx.QueryRow(ctx, `UPDATE settings SET value = value + 1 WHERE name = 'notes' RETURNING value - 1`).Scan(&count); err != nil {
			return 0, err
		}
		if count >= history.MaxNotes {
			return 0, refuse(history.CodeMemoryCeilingReached, "%d notes are stored, the lifetime ceiling; no more can be remembered", history.MaxNotes)
		}
		e := []history.Entry{{
			Session: n.Session,
			ID:      fmt.Sprintf("note-%d", count+1),
			Kind:    history.KindNote,
			Role:    string(n.Kind),
			Text:    text,
			Time:    n.Time,
		}}
		return s.insertEntries(ctx, tx, prepareRows(e, n.Time), &stored)
	})
	if err != nil {
		return history.Remembered{}, err
	}
	s.known.remember(stored)
	return history.Remembered{AlreadyStored: found}, nil
}

// findNote finds a stored note by kind and text through the partial index
// entries_notes (role, md5(text)); the text comparison settles a hash
// collision.
var findNote = fmt.Sprintf(`SELECT 1 FROM entries WHERE kind = '%s' AND role = $1 AND md5(text) = md5($2) AND text = $2 LIMIT 1`, history.KindNote)

// Notes answers how many notes the index holds: the count
// history.MaxNotes bounds.
func (s *Store) Notes(ctx context.Context) (int, error) {
	if err := s.check(history.CodeMemoryUnavailable); err != nil {
		return 0, err
	}
	var n int
	err := s.pool.QueryRow(ctx, `SELECT value FROM settings WHERE name = 'notes'`).Scan(&n)
	return n, classify(ctx, err, history.CodeMemoryBusy, history.CodeMemoryUnavailable, "counting notes")
}

// headingChars is how much of a note's stored text NoteHeadings reads, in
// characters: more than its title and description lines can hold.
const headingChars = 300

// NoteHeadings implements history.NoteLister: the stored notes' headings,
// newest first, at most limit (clamped to [0, history.MaxNotes]). The
// kind is written into the query so PostgreSQL can use the partial index
// entries_notes.
func (s *Store) NoteHeadings(ctx context.Context, limit int) ([]history.NoteHeading, error) {
	if err := s.check(history.CodeMemoryUnavailable); err != nil {
		return nil, err
	}
	q := fmt.Sprintf(`SELECT session, role, at, left(text, %d) FROM entries WHERE kind = '%s' ORDER BY seq DESC LIMIT $1`, headingChars, history.KindNote)
	rows, err := s.pool.Query(ctx, q, clampInt(limit, 0, history.MaxNotes))
	if err != nil {
		return nil, classify(ctx, err, history.CodeMemoryBusy, history.CodeMemoryUnavailable, "listing notes")
	}
	defer rows.Close()
	hs := []history.NoteHeading{}
	for rows.Next() {
		var session, role, text string
		var at int64
		if err := rows.Scan(&session, &role, &at, &text); err != nil {
			return nil, classify(ctx, err, history.CodeMemoryBusy, history.CodeMemoryUnavailable, "listing notes")
		}
		hs = append(hs, history.HeadingOf(session, role, text, time.UnixMilli(at)))
	}
	return hs, classify(ctx, rows.Err(), history.CodeMemoryBusy, history.CodeMemoryUnavailable, "listing notes")
}
