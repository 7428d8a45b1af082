// Package handles keeps the entries each owner holds under a handle,
// with a ceiling on how many may be live at once: job.Plane keeps its
// jobs in a Table, code mode its launched executions. An owner is a
// strand's name; an entry is whatever the caller keeps (a job, an
// execution).
//
// It owns the bookkeeping both need: admission against the owner's
// live ceiling, an admission ordinal the caller mints each handle from,
// lookup by handle restricted to the owner, the owner's entries oldest
// first, forgetting ended entries past a bound, and close. It does not
// own what an entry is, what ends one, or how a refusal reads to a
// model: the caller turns Closed and AtCeiling into its own codes and
// sentences.
//
// It refuses:
//   - Admit once the owner holds maxLive live entries (AtCeiling), and
//     after Close (Closed);
//   - Begin after Close (Closed).
//
// It guarantees:
//   - An owner never holds more than maxLive live entries. An entry is
//     live from Admit until End or Drop.
//   - Keys are unique among the entries held: a minted key already held
//     is minted again from the next ordinal, never overwritten.
//   - Lookup finds an entry only for its owner: another owner's key
//     answers exactly as one never minted or already forgotten.
//   - An owner keeps at most maxEnded ended entries. Past it, the ones
//     that ended longest ago are forgotten, never the one ending (an
//     entry started first and ending last is kept).
//   - Entries and Keys list an owner's entries in admission order.
//   - After Close nothing is admitted or begun, so Wait cannot miss work
//     that begins while it waits.
//
// A Table is not safe for concurrent use on its own: its caller guards
// it with the lock that guards its entries (so a live entry's state and
// the table never disagree), except Done and Wait, which take no lock
// of the caller's and must be called without it when the work being
// waited for needs that lock to finish.
package handles
