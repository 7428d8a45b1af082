// Package postgres is a schedule.Schedules kept in one PostgreSQL schema
// over github.com/jackc/pgx/v5, with the behaviour of the reference
// schedule/sqlite (both run package scheduletest), for hosts that share
// one database: many Schedulers, in many processes on many hosts, may
// open one schema, and each fire is delivered by exactly one of them.
// A host opens it with Open (a URL) or OpenPool (a pool the host keeps
// for its own queries), hands the Scheduler to schedule.Tools, and runs
// Run (or calls Tick from its own loop).
//
// It owns durability, the live count per target (Limits.MaxLive,
// counted under a lock on the target in the same transaction as the
// insert, so two hosts creating at once cannot pass it), what the
// policy grants (Options.Wake), and planning, as schedule/sqlite does:
// an interval fires on whole multiples of its period since the Unix
// epoch, a cron when its fields match the clock shifted by its fixed
// offset, a one-shot at its instant. Times are read from Options.Now,
// never from the server's clock.
//
// Invariants:
//   - A fire is claimed and recorded in one transaction (the due rows
//     are selected FOR UPDATE SKIP LOCKED, their count raised and next
//     fire planned, or the row removed after its last) and committed
//     before the callback hears of it. Two hosts ticking at once never
//     claim one row: the second skips what the first holds, and once
//     the first commits the row is no longer due. So a fire is
//     delivered at most once across every host on the schema; a host
//     that dies between the commit and the callback loses that one
//     fire.
//   - No fire comes before its time, none at or after its schedule's
//     expiry, never more than max_fires, a one-shot once, and two fires
//     of one schedule are at least Limits.MinInterval apart.
//   - Fires missed while every host was down are coalesced: the
//     schedule fires once, late (Fire.Due says when it was due), then
//     keeps its cadence from the clock.
//   - A strand sees and cancels only the schedules it or a strand it
//     spawned created; any other id is schedule.CodeUnknownSchedule.
//   - The schema is versioned (table schedule_version): opening migrates
//     it under an advisory lock, so hosts opening one schema at once
//     migrate it once, and a newer schema is refused. Its tables are
//     named so that the schema may be the one history/postgres uses.
//   - Every failure is a *schedule.Refusal: a call whose context ended
//     is tool.CodeCancelled; a closed Scheduler, a failing database and
//     a lock held past Options.BusyTimeout are
//     schedule.CodeSchedulesUnavailable.
package postgres
