// Package sqlite is the reference index of package history: one SQLite
// database that is both a history.History and a history.Memory, on the
// pure-Go modernc.org/sqlite driver (no cgo).
//
// A host opens it with Open(path, Options{}), hands the Store to
// history.SearchTool and history.RememberTool, and feeds it with Index or
// IndexBatch as its session log grows.
//
// The database keeps a WAL journal with one writer and at most eight read
// connections. Words are indexed by FTS5 (unicode61, no stemming). An
// optional trigram index over the vocabulary of indexed words is the
// substring fallback; it also finds pieces of CJK runs, which the word
// index keeps whole. An entry's text is stored DEFLATE-compressed when
// that saves an eighth; the view entries, which FTS5 reads, inflates it
// through an SQL function this package registers with the driver, so the
// file is read through this package. The schema is versioned with PRAGMA
// user_version. A
// background checkpointer copies the WAL of batched ingest back into the
// database file on its own connection while the writer goes on.
//
// It owns durability, concurrency, the translation of the words syntax
// into FTS5 (WordsToFTS5), the note counter behind history.MaxNotes, and
// the mapping of SQLite's errors onto history's codes.
//
// It refuses to own: the model-facing tools, their clamps, wording and
// fences (package history), the note rules (history.PrepareNote, applied
// here before every write), the session log (the host's), and any form
// of deleting or editing an entry or a note.
//
// Invariants:
//   - Every failure is a *history.Refusal coded with history's codes.
//     SQLite busy or locked past the busy timeout is history.CodeIndexBusy
//     (history.CodeMemoryBusy for notes). A call whose context ended
//     (cancelled, or past its deadline) is tool.CodeCancelled, which is
//     not transient. A recovering database is history.CodeIndexNotReady;
//     a raw query FTS5 rejects is history.CodeIndexRefused with FTS5's
//     message. Anything else, a closed Store included, is
//     history.CodeIndexUnavailable (history.CodeMemoryUnavailable).
//   - The words syntax quotes every term (WordsToFTS5 shows the result),
//     so no user text can produce an FTS5 syntax error or an operator the
//     user did not ask for. A fuzz test holds every translation to the
//     rows a reference predicate over SQLite's own tokens selects.
//   - Indexing is idempotent per (session, entry id): a host may re-feed
//     its log after a crash, and a batch (at most MaxBatchEntries entries)
//     lands whole or not at all, also when the writer is killed mid-batch.
//   - Searches answer newest first by seq, at most history.MaxLimit hits,
//     each snippet at most history.MaxSnippetBytes bytes.
//   - At most history.MaxNotes notes are ever stored in one database: a
//     durable lifetime ceiling, counted in the same transaction as the
//     write and never reset. A note identical to one stored is answered
//     history.Remembered.AlreadyStored, and neither stored nor counted.
//   - A database with a schema newer than this library's is refused, never
//     written.
package sqlite
