// Package postgres is the index of package history that many hosts share:
// one PostgreSQL schema that is both a history.History and a
// history.Memory, on github.com/jackc/pgx/v5. It behaves as the SQLite
// reference (history/sqlite) does, held to it by the conformance suite
// both run (history/historytest).
//
// A host opens it with Open(ctx, url, Options{Schema: ...}), hands the
// Store to history.SearchTool and history.RememberTool, and feeds it with
// Index or IndexBatch as its session log grows. Every host opening the
// same schema shares its entries, its notes and its note ceiling.
//
// Words are split and folded in Go (runs of letters, numbers, private-use
// characters and combining marks, lowercased, diacritics removed, as
// SQLite's unicode61 tokenizer does), stored as a tsvector with positions
// under a GIN index, and searched with a tsquery built from quoted
// lexemes, so neither the server's locale nor its text-search parser
// changes what a query means. The substring fallback is a vocabulary of
// indexed words under a pg_trgm GIN index, as in the SQLite index. Raw
// queries are read as the FTS5 syntax of one column: words, quoted
// phrases, trailing stars, AND, OR, NOT, parentheses, '+' and the column
// filter "text:"; NEAR, '^' and other columns are refused. An entry's
// text is stored DEFLATE-compressed (the column packed) when that saves
// an eighth, compressed and inflated in Go. The schema is versioned in
// its schema_version table and migrated under an advisory lock.
//
// It owns durability, concurrency across hosts, the translation of both
// query syntaxes into tsquery, the note counter behind history.MaxNotes,
// and the mapping of PostgreSQL's errors onto history's codes.
//
// It refuses to own: the model-facing tools (package history), the note
// rules (history.PrepareNote, applied before every write), the database
// server, its roles and its connection security (the URL's), the session
// log, and any form of deleting or editing an entry or a note.
//
// Invariants:
//   - Every failure is a *history.Refusal coded with history's codes. A
//     write that waited past the busy timeout for another host's writer
//     is history.CodeIndexBusy (history.CodeMemoryBusy for notes); a call
//     whose context ended is tool.CodeCancelled; a server starting up or
//     recovering is history.CodeIndexNotReady; a raw query this package
//     cannot read is history.CodeIndexRefused saying "syntax error".
//     Anything else, a closed Store included, is
//     history.CodeIndexUnavailable (history.CodeMemoryUnavailable).
//   - Writes to one schema, from every Store on it, are serialised by a
//     transaction-scoped advisory lock: seq is dense, unique, and follows
//     commit order, so paging with Before neither skips nor repeats.
//   - Indexing is idempotent per (session, entry id), across hosts; a
//     batch (at most MaxBatchEntries entries) lands whole or not at all.
//   - Searches answer newest first by seq, at most history.MaxLimit hits,
//     each snippet at most history.MaxSnippetBytes bytes, cut from at most
//     the first 64 KiB of the entry.
//   - At most history.MaxNotes notes are ever stored in one schema,
//     counted in the same transaction as the write under the same lock,
//     so the ceiling holds across hosts. A note identical to one stored
//     is answered history.Remembered.AlreadyStored, neither stored nor
//     counted.
//   - A schema newer than this library's is refused, never written.
//   - PostgreSQL text holds no NUL byte and no invalid UTF-8: an entry's
//     text keeps U+FFFD in their place, and a session, id, kind or role
//     holding them is refused history.CodeIndexRefused. An entry's words
//     past PostgreSQL's tsvector bounds (256 positions of one word, about
//     900 KiB of distinct words) are not indexed.
package postgres
