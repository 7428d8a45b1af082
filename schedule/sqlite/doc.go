// Package sqlite is the reference schedule.Schedules: schedules kept in
// one SQLite file on the pure-Go modernc.org/sqlite driver, fired
// through a host callback (Options.Fire) against an injectable clock
// (Options.Now). A host keeps the file beside its history index, outside
// the workspace, opens it with Open, hands the Scheduler to
// schedule.Tools, and runs Run (or calls Tick from its own loop).
//
// It is a package of its own, as history's indexes are, so a host that
// brings its own scheduler links no SQLite driver; package schedule
// keeps only the vocabulary, the decoder and the one cron grammar.
//
// It owns durability, the live counts per target and per creating
// strand (Limits.MaxLive, counted in the same transaction as the
// insert), what the policy
// grants (Options.Wake), and planning: an interval fires on whole
// multiples of its period since the Unix epoch, a cron when its fields
// match the clock shifted by its fixed offset, a one-shot at its
// instant. It refuses to own what a fire does to a strand (the host's
// callback decides), and any calendar arithmetic: cron is
// github.com/robfig/cron/v3 through schedule.ParseCron.
//
// Invariants:
//   - A fire is recorded (its count raised and its next fire planned, or
//     the schedule removed after its last) and committed before the
//     callback hears of it, so a fire is delivered at most once: the
//     same file reopened after a crash or a Close never repeats it. A
//     process that dies between the commit and the callback loses that
//     one fire.
//   - No fire comes before its time, none at or after its schedule's
//     expiry, never more than max_fires, a one-shot once, and two fires
//     of one schedule are at least Limits.MinInterval apart.
//   - Fires missed while the host was down are coalesced: the schedule
//     fires once, late (Fire.Due says when it was due), then keeps its
//     cadence from the clock.
//   - A strand sees and cancels only the schedules it or a strand it
//     spawned created; any other id is schedule.CodeUnknownSchedule.
//   - Every failure is a *schedule.Refusal: a call whose context ended
//     is tool.CodeCancelled, a closed Scheduler and a failing file
//     schedule.CodeSchedulesUnavailable.
package sqlite
