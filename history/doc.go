// Package history gives a model a memory of what it and earlier sessions in
// the same repository wrote, and one door for leaving durable notes.
//
// It owns two seams a host fills, and the model-facing tools over them:
//
//   - History: full-text search over indexed session entries (Search), a
//     browse of the calling session's newest entries (Recent), and a read of
//     one entry with its neighbours (Read). The history_search tool is a thin
//     shell over it.
//   - Memory: Remember, which stores one redacted note. The remember tool is
//     a thin shell over it. There is deliberately no tool that reads memory
//     back: notes are indexed entries of kind "note" and are found with
//     history_search kind=note, so there is no second read path to poison.
//
// SQLite (opened with OpenSQLite) is the reference implementation of both
// seams, on the pure-Go modernc.org/sqlite driver: WAL journal, one writer
// and many readers, an FTS5 word index (unicode61, no stemming), an
// optional trigram index over the vocabulary of indexed words used as a
// substring fallback (it also finds pieces of CJK runs, which the word
// index keeps whole), a schema versioned with PRAGMA user_version, and a
// background checkpointer that copies the WAL of batched ingest back into
// the database file on its own connection while the writer goes on.
// A host feeds it with Index or IndexBatch as its session log grows.
//
// The tools own the model's half: schemas, the limit and around clamps (a
// negative SQL LIMIT means "no limit" to SQLite, so a clamp here is what
// keeps a whole repository out of a context), the empty-query rule, and
// the fence. Everything a search or read returns was written by some model,
// possibly in another session; it is rendered between fence lines carrying
// a fresh random nonce per call, under a header saying it is quoted data,
// and any fence-like text inside is broken first.
//
// The package refuses to own: the session log itself (the host's), the
// choice of which session a call belongs to (taken from the tool.Call,
// never from model arguments), and any form of note deletion or editing.
//
// Invariants:
//   - Every failure of a seam is a *Refusal with a stable Code; IndexBusy,
//     IndexNotReady and MemoryBusy are transient and their text says to
//     send the same call again.
//   - The words syntax quotes every term (SQLite.WordsToFTS5 shows the
//     result), so no user text can produce an FTS5 syntax error or an
//     operator the user did not ask for; a fuzz test holds every
//     translation to the rows a reference predicate selects.
//   - Secrets (API keys, bearer tokens, private keys, KEY=value secrets) are
//     redacted from a note before it is checked against its bounds and
//     before it is stored (Redact, PrepareNote).
//   - Indexing is idempotent per (session, entry id): a host may re-feed its
//     log after a crash, and a batch lands whole or not at all.
//   - Searches answer newest first, so paging with before (the smallest
//     seq of the previous page) neither skips nor repeats a hit.
//   - At most MaxNotes notes are ever stored in one database: a durable
//     lifetime ceiling, counted in the same transaction as the write.
//   - history_search asks the broker for nothing and is ReplaySafe and
//     Concurrent; remember is ReplayNever (a replay would store the note
//     twice) and Exclusive.
package history
