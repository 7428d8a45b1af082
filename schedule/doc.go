// Package schedule is a model's door onto scheduled messages: a message
// delivered to a strand once, at an instant, or on a cadence. It holds
// the Schedules seam a host fills, the vocabulary that crosses it
// (Spec, Request, Timing, Created, Listed, Row, Cadence, Wake, Limits),
// the total decoding of a request (Decode), and the three tools over
// the seam, returned as one list (Tools): schedule_create, schedule_list
// and schedule_cancel. The reference seam, durable in SQLite, is package
// schedule/sqlite.
//
// # What it owns
//
//   - Decoding. A request carries exactly one timing of every_seconds,
//     cron, at (RFC 3339) and in_seconds, checked before anything else
//     (Spec.CheckShape, which code mode applies to a program's request
//     before the host sees it). utc_offset is allowed only beside cron,
//     and it is a fixed offset, [+-]HH:MM, not a time zone: nothing here
//     follows a daylight-saving change. Decode is total: every mistake
//     is a *Refusal with its own code.
//   - The one cron grammar of the module (ParseCron): five fields on
//     github.com/robfig/cron/v3, no seconds, no @descriptors, no time
//     zone prefix. No calendar arithmetic is written here.
//   - Who may be a target (Admits): the calling strand, or a strand it
//     spawned, read from the minted name "sub:{parent}/..." that carries
//     a sub-agent's lineage. Anything else is refused with
//     agent.CodeNotDescendant.
//   - The model's half of the tools: schemas derived from Spec, wording,
//     the note on waking, and in-band refusals.
//
// # What it refuses to own
//
// Limits are the host's: the seam reports them (Schedules.Limits) and
// enforces them, the tools only read them, to state them and to refuse
// early. What the host's policy grants (Created.Wake) is the host's:
// under a steer-only policy a create succeeds and says that its fires
// will only steer, rather than refusing a request the model could not
// make succeed. Delivering a fire, and what a fire does to a strand,
// are the host's. So is the clock of a fire: the tools read the call's
// clock (tool.Call.Clock) only to decode.
//
// # Invariants
//
//   - Identity comes from the call: a request's Strand is
//     tool.Call.Strand, never an argument, so no model schedules into an
//     unrelated strand, and a listing and a cancel see only what the
//     caller or a strand it spawned created.
//   - The writers are never replayed and run exclusively
//     (tool.ReplayNever, tool.Exclusive); schedule_list is ReplaySafe,
//     Concurrent and read-only.
//   - Created and every Row carry a structured Cadence beside the
//     sentence that describes it (Cadence.String), so a program never
//     parses prose.
//   - A self-targeted schedule that did not ask to wake is told that it
//     will not start a run, and how to ask; a schedule on a sub-agent is
//     told nothing of the kind.
//   - Every answer is bounded: a listing shows at most MaxListed rows,
//     each message cut to MaxListedMessageBytes; a refusal quotes at
//     most tool.MaxQuotedBytes of any value.
package schedule
