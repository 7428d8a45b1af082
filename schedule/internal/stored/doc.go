// Package stored is a schedule as the durable stores (schedule/sqlite,
// schedule/postgres) keep it: one row of their schedules table, read
// with Scan in the order of Columns; the id a model sees, "sch-{n}"
// (FormatID, ParseID); what Create and List answer for a row
// (Row.Admitted, Row.Listed); the next fire after one (Row.Fire);
// admission of a request (Admit); and the refusals, so both stores
// answer the same words.
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
//   - Admit refuses (schedule.CodeExpiryOutOfBounds) a request with no
//     first fire and, unless it is a one-shot, one whose first fire is at
//     or after its expiry; its row wakes the target only when both the
//     request and the grant say so.
//   - Every refusal is a *schedule.Refusal with the stores' codes, and a
//     quoted value is cut to tool.MaxQuotedBytes.
package stored
