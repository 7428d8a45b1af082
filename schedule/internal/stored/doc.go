// Package stored is a schedule as the durable stores (schedule/sqlite,
// schedule/postgres) keep it: one row of their schedules table, read
// with Scan in the order of Columns; the id a model sees, "sch-{n}"
// (FormatID, ParseID); what a row answers (Row.Admitted, Row.Listed) and
// plans (Row.Fire); admission of a request (Admit); and the refusals a
// store answers, so each sentence is written once.
//
// It owns no connection and no SQL but Columns, which both schemas
// share. Each store keeps its dialect, placeholders, locks, driver
// errors and the types its driver writes.
//
// Guarantees:
//   - Scan reads back what the stores write: a one-shot's instant (at_ns
//     0 means none), whole seconds of a period or offset, times in UTC.
//   - ParseID answers true exactly for the ids FormatID writes for a
//     positive key, and reads each back; it never panics.
//   - Admit answers no row whose first fire is zero, and none but a
//     one-shot whose first fire is at or after its expiry; the row's Wake
//     is at most the grant.
//   - Every refusal is a *schedule.Refusal with the stores' codes, and a
//     quoted value is cut to tool.MaxQuotedBytes.
package stored
