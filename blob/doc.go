// Package blob is Loom's content-addressed store and its overflow
// decision: where output too large to show a model inline goes, and what
// of it the model sees instead.
//
// It owns four things:
//
//   - The store (Store, Put, Read, Writer): blobs named by the lowercase
//     hex SHA-256 of their bytes (Ref), laid out as root/ab/abcdef...
//   - Its bounds (Options, OpenWith): a budget for the whole store
//     (DefaultMaxBytes, 1 GiB), kept by evicting the least recently used
//     blobs no open session holds, and one per session, that is per
//     opened Store (DefaultSessionBytes, 256 MiB), past which a write is
//     refused with CodeSpillBudget. The bookkeeping lives in root/ledger:
//     a usage record that is also the store-wide lock, and one lease per
//     open Store listing the blobs it holds.
//   - The overflow decision (Bound, Spool): output of at most
//     OverflowThreshold (64 KiB) bytes stays inline; longer output is
//     stored whole and replaced by an Overflow carrying its ref, path,
//     size and head and tail excerpts of at most ExcerptBytes (2 KiB).
//     Spool makes the same decision for a stream in bounded memory.
//   - The rendering a model reads for spilled output (Overflow.Text) and
//     the rune-safe excerpts it is built from (Excerpts).
//
// It does not own what output means, who may read a blob, or when output
// is exempt from overflow (fs_read is): package tool decides those, and
// its path discipline is what lets a model fs_read a blob's Path. It holds
// no global state and knows nothing of tools, policies or jails.
//
// Invariants:
//
//   - Nothing is read or written outside the root, whatever links appear:
//     Open pins the root directory (refusing a root that is a link), and
//     every later operation goes through that pinned descriptor one name
//     at a time; a shard directory is used only once confirmed a real
//     directory of the store, so a link swapped in for the root or a
//     shard, even mid-write, is refused (CodeLinkRefused), never
//     followed. Keep the root out of every tree a jailed command can
//     write; DefaultRoot (the user cache directory) is.
//   - A blob is established by a rename, never by a write. Bytes are
//     staged in the store root under a name unique to that write
//     ("stage-<random>.tmp"), fsynced, made read-only (0444) and
//     renamed to their address, so nothing is ever reachable under a ref
//     but the whole content it names. A crash before the rename leaves
//     only a staged file, which nothing reads and Sweep removes.
//   - Writes are idempotent: the same bytes get the same ref and are
//     stored once, however many writers race to store them.
//   - Read never returns bytes under a name that is not theirs: it
//     re-hashes what it read and refuses a mismatch as CodeCorrupt.
//   - A Ref is exactly 64 lowercase hex characters; ParseRef refuses
//     everything else, and no method resolves a malformed Ref to a path.
//   - Output is never silently clipped: when a spill cannot be stored the
//     caller gets an error, not a truncated text; when the session's
//     budget refuses it, the error comes with an Overflow holding both
//     excerpts and saying the output was not kept, and why (NotKept).
//   - A blob an open Store holds (it stored or read it) is never evicted,
//     whichever process evicts: every Store keeps its lease locked
//     (flock) until Close, an eviction skips every ref a locked lease
//     names, and holding a blob and evicting exclude each other through
//     the store-wide lock. A lease nobody holds locked is stale (its
//     process ended without Close) and is removed.
//   - Eviction removes only regular files named by a well-formed ref in
//     that ref's shard directory, opened beneath the pinned root without
//     following a link; staged files, the ledger and anything else in the
//     root are never evicted.
//   - The store's bytes stay within Options.MaxBytes after every write,
//     except while the blobs open Stores hold exceed it on their own;
//     the store is then counted again after at most MaxBytes/8 more
//     bytes, or when a Store closes. Each Store holds at most
//     Options.SessionBytes of blobs it wrote. Blobs are charged in whole
//     BlockBytes. Where the platform has no flock (Windows, AIX) there
//     is no ledger and no eviction; the session budget still holds.
//   - Every failure is an *Error with a stable code (the Code* constants).
package blob
