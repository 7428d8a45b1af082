package postgres

import (
	"context"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentloom/loom/history/internal/packed"

	"github.com/jackc/pgx/v5"

	"github.com/agentloom/loom/history"
)

// MaxBatchEntries bounds one IndexBatch call: one transaction.
const MaxBatchEntries = 20_000

// rowsPerInsert is how many entries one INSERT statement carries.
const rowsPerInsert = 1000

// insertEntries is the INSERT of one chunk: the chunk's entries not yet
// indexed, each (session, entry) once (its first occurrence), numbered
// after $1 in batch order.
const insertEntriesSQL = `INSERT INTO entries(seq, session, entry, kind, role, at, text, packed, words)
SELECT $1::bigint + row_number() OVER (ORDER BY ord), session, entry, kind, role, at, text, packed, words::tsvector
FROM (
	SELECT DISTINCT ON (u.session, u.entry) u.*
	FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[], $8::bytea[], $9::text[])
		WITH ORDINALITY AS u(session, entry, kind, role, at, text, packed, words, ord)
	WHERE NOT EXISTS (SELECT 1 FROM entries e WHERE e.session = u.session AND e.entry = u.entry)
	ORDER BY u.session, u.entry, u.ord
) fresh`

// Index adds one entry to the index. It is IndexBatch of one entry.
func (s *Store) Index(ctx context.Context, e history.Entry) error {
	_, err := s.IndexBatch(ctx, []history.Entry{e})
	return err
}

// IndexBatch adds entries in one transaction and answers how many were
// new. Either the whole batch is indexed or none of it. Indexing is
// idempotent: an entry whose (Session, ID) is already indexed, by this
// host or another, is skipped and keeps its first text. A batch of more
// than MaxBatchEntries entries is refused history.CodeIndexRefused. So
// is, naming it, an entry with an empty Session, ID or Kind, the reserved
// Kind history.KindNote, a field over its bound (history.MaxIDBytes,
// history.MaxKindBytes, history.MaxEntryTextBytes), or a session, id,
// kind or role that is not valid UTF-8 or holds a NUL byte (PostgreSQL
// text cannot). In a text, invalid UTF-8 and NUL bytes are stored as
// U+FFFD.
func (s *Store) IndexBatch(ctx context.Context, entries []history.Entry) (int, error) {
	if len(entries) > MaxBatchEntries {
		return 0, refuse(history.CodeIndexRefused, "a batch holds at most %d entries, not %d", MaxBatchEntries, len(entries))
	}
	for i := range entries {
		if err := checkEntry(&entries[i]); err != nil {
			return 0, err
		}
	}
	if len(entries) == 0 {
		return 0, nil
	}
	rows := prepareRows(entries, time.Now())
	var stored []string
	n, err := s.write(ctx, history.CodeIndexBusy, history.CodeIndexUnavailable, "indexing", func(tx pgx.Tx) (int, error) {
		return s.insertEntries(ctx, tx, rows, &stored)
	})
	if err == nil {
		s.known.remember(stored)
	}
	return n, err
}

// checkEntry refuses an entry that breaks a bound (Entry.Check) or that
// PostgreSQL text cannot hold.
func checkEntry(e *history.Entry) error {
	if err := e.Check(); err != nil {
		return err
	}
	if !storable(e.Session) || !storable(e.ID) || !storable(e.Kind) || !storable(e.Role) {
		return refuse(history.CodeIndexRefused, "entry %.64q: the session, id, kind and role must be valid UTF-8 without NUL bytes", e.ID)
	}
	return nil
}

// storable reports whether PostgreSQL text can hold s unchanged.
func storable(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// storableText answers text as PostgreSQL text can hold it.
func storableText(text string) string {
	if storable(text) {
		return text
	}
	return strings.ReplaceAll(strings.ToValidUTF8(text, "\uFFFD"), "\x00", "\uFFFD")
}

// rowSet is a batch as the INSERT's arrays. text holds each entry's
// text as indexed; stored, what the column text keeps ("" when packed
// holds the text compressed).
type rowSet struct {
	session, entry, kind, role, text, stored, words []string
	packed                                          [][]byte
	at                                              []int64
}

// prepareRows builds the arrays of entries, tokenizing and compressing on
// all cores: they are most of an ingest's CPU.
func prepareRows(entries []history.Entry, now time.Time) rowSet {
	n := len(entries)
	r := rowSet{session: make([]string, n), entry: make([]string, n), kind: make([]string, n), role: make([]string, n),
		text: make([]string, n), stored: make([]string, n), words: make([]string, n), packed: make([][]byte, n), at: make([]int64, n)}
	fill := func(i int) {
		e := &entries[i]
		at := e.Time
		if at.IsZero() {
			at = now
		}
		text := storableText(e.Text)
		r.session[i], r.entry[i], r.kind[i], r.role[i], r.at[i], r.text[i] = e.Session, e.ID, e.Kind, e.Role, at.UnixMilli(), text
		r.words[i] = vector(text)
		r.stored[i] = text
		if e.Kind != history.KindNote {
			if r.packed[i] = packed.Pack(text); r.packed[i] != nil {
				r.stored[i] = ""
			}
		}
	}
	packed.Each(n, fill)
	return r
}

// insertEntries stores the rows not yet indexed, after the largest seq,
// and adds their new words to the vocabulary, answering them in stored
// for the caller to remember once the transaction commits. It runs inside
// write, so it is the schema's only writer.
func (s *Store) insertEntries(ctx context.Context, tx pgx.Tx, r rowSet, stored *[]string) (int, error) {
	var vocab []string
	var gather sync.WaitGroup
	if s.substrings {
		gather.Go(func() { vocab = s.known.newWords(r.text) })
	}
	defer gather.Wait()
	var last int64
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM entries`).Scan(&last); err != nil {
		return 0, err
	}
	added := 0
	for lo := 0; lo < len(r.text); lo += rowsPerInsert {
		hi := min(lo+rowsPerInsert, len(r.text))
		tag, err := tx.Exec(ctx, insertEntriesSQL, last+int64(added),
			r.session[lo:hi], r.entry[lo:hi], r.kind[lo:hi], r.role[lo:hi], r.at[lo:hi], r.stored[lo:hi], r.packed[lo:hi], r.words[lo:hi])
		if err != nil {
			return 0, err
		}
		added += int(tag.RowsAffected())
	}
	if added == 0 || !s.substrings {
		return added, nil
	}
	gather.Wait()
	if len(vocab) > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO vocabulary(word) SELECT w FROM unnest($1::text[]) w ON CONFLICT (word) DO NOTHING`, vocab); err != nil {
			return 0, err
		}
	}
	*stored = vocab
	return added, nil
}
