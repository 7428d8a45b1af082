// Package sandbox is the vocabulary of a jail: what a command may touch,
// what a caller asks for, and what came of it. It runs nothing and reads
// no workspace. Package broker is the reference jail that speaks it;
// tool.Broker says what any other jail owes the tools.
//
// It owns:
//   - Policy, the closed set of widenings an operator may approve
//     (Grant), and Compose, the meet of a base policy and a tool's
//     requirements widened by grants. A shortfall is a *Denial whose
//     Wanted is exactly the grants that would cover it.
//   - Validate, which refuses relative or unclean paths and
//     contradictions with a *PolicyError.
//   - Denial, every refusal a jail returns, with one stable code.
//   - The Ledger, which pools calls per {operation, step} (StepKey,
//     Budget) and cancels a whole step or operation.
//   - CallSpec, Execution and Settled: one command asked for, running,
//     and ended. A jail builds an Execution with NewExecution and feeds
//     it through its Feed.
//   - Enforcement and Layer: which confinement layers a command got. A
//     report never claims a layer the kernel did not apply.
//   - AuditEvent, Neutralisation and Quarantine: what a jail did to keep
//     a workspace safe.
//
// Invariants:
//   - Compose never widens past the base except by a Grant, and no Grant
//     touches Policy.Protected.
//   - Covers compares whole path components on cleaned forms and never
//     touches the filesystem.
//   - Every Execution settles exactly once; Output closes before Done.
//     A Feed never panics: a Send after Settle reports false.
//   - The package imports nothing but the standard library.
package sandbox
