// Package history gives a model a memory of what it and earlier sessions in
// the same repository wrote, and one door for leaving durable notes.
//
// It owns the seams a host fills, and the model-facing tools over them:
//
//   - History: full-text search over indexed session entries (Search), a
//     browse of the calling session's newest entries (Recent), and a read of
//     one entry with its neighbours (Read). The history_search tool
//     (SearchTool) is a thin shell over it.
//   - Memory: Remember, which stores one redacted note, or finds an
//     identical one already stored and says so. The remember tool
//     (RememberTool) is a thin shell over it. There is deliberately no tool
//     that reads memory back: notes are indexed entries of kind "note" and
//     are found with history_search kind=note, so there is no second read
//     path to poison.
//   - NoteLister: the stored notes' headings, newest first. IndexNotes
//     renders them as the notes index a host shows a model at the start
//     of every run (examples/agent puts it in the system prompt): title,
//     kind and description of the newest notes, fenced as quoted data,
//     at most MaxNotesIndexBytes, saying how many older ones it leaves
//     out. It is the model's way to know what is remembered; the text of
//     a note is still found only with history_search.
//
// Beside the seams it owns their vocabulary: the Query, Hit, Entry and
// Note types and their bounds, the words syntax (ParseWords), the note
// rules every Memory applies (PrepareNote), the Refusal error and
// the codes it carries.
//
// The reference implementation of both seams is package history/sqlite,
// on the pure-Go modernc.org/sqlite driver. It lives in a package of its
// own, so a host that brings its own index and imports history for its
// tools links no SQLite driver (a test holds go list -deps of this package
// free of it). Package history/postgres is the index many hosts share,
// on PostgreSQL; package historytest is the conformance suite both run.
//
// The tools own the model's half: schemas, the limit and around clamps,
// the empty-query rule, the snippet bound, and the fence. The clamps are
// what keeps a whole repository out of a context: a negative SQL LIMIT
// means "no limit" to SQLite. Everything a search or read returns was
// written by some model, possibly in another session. It is rendered
// between fence lines carrying a fresh random nonce per call, under a
// header saying it is quoted data, and any fence-like text inside is
// broken first. A read longer than blob.OverflowThreshold spills to the
// call's blob store.
//
// The package refuses to own any index or store: the seams' implementers
// own durability, concurrency and the lifetime count. Nor does it own the
// session log (the host's), the choice of which session a call belongs to
// (taken from the tool.Call through a SessionOf, never from model
// arguments), or any form of note deletion or editing.
//
// Invariants:
//   - Every failure of a seam is a *Refusal whose Code is one of this
//     package's tool.Code constants (CodeIndexBusy,
//     CodeMemoryCeilingReached, ...), or tool.CodeCancelled when the
//     call's own context ended before the seam finished. Every failing
//     outcome of its tools carries that code in Outcome.Code (a read that
//     cannot spill carries tool.CodeSpillFailed; a bad argument the
//     registry's code). CodeIndexBusy, CodeIndexNotReady and
//     CodeMemoryBusy are transient (Transient), and their text says to
//     send the same call again.
//   - The words syntax (ParseWords) has no operator but OR between words
//     and a trailing star, so no user text can mean what the user did not
//     ask for. The SQLite index quotes every term, and a fuzz test holds
//     every translation to the rows a reference predicate selects.
//   - Secrets (API keys, bearer tokens, private keys, KEY=value secrets) are
//     redacted from a note before it is checked against its bounds and
//     before it is stored (PrepareNote).
//   - Searches answer newest first, so paging with before (the smallest
//     seq of the previous page) neither skips nor repeats a hit.
//   - The tool holds every answer to its bounds whatever a History
//     answers: at most the clamped limit of hits, each snippet at most
//     MaxSnippetBytes bytes (ClipSnippet). A query, kind, session or entry
//     over the seam's bound for it is refused CodeIndexRefused before any
//     History is asked, and an answer quotes a value the model sent cut
//     to tool.MaxQuotedBytes, never whole.
//   - At most MaxNotes notes are ever stored in one memory store: a
//     durable lifetime ceiling every Memory implementation keeps. A
//     Memory that finds a note already stored (Remembered.AlreadyStored)
//     stores and counts nothing, so the ceiling counts distinct notes.
//   - Every number a tool's description or schema states comes from its
//     constant.
//   - history_search asks the broker for nothing and is ReplaySafe and
//     Concurrent; remember is ReplayNever and Exclusive (RememberTool says
//     why).
package history
