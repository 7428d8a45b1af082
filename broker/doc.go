// Package broker decides what a command may touch and runs it under that
// decision.
//
// It owns the policy vocabulary (Policy, Grant, Denial), composition of a
// session's base policy with a tool's requirements and an operator's
// grants, the budget ledger pooled per {operation, step}, and Clear, which
// runs one argv inside the Linux jail and reports every confinement layer
// as applied or skipped.
//
// It does not own what a tool means by its command, how output is shown to
// a model, or where output spills: those belong to package tool and blob.
//
// Invariants:
//   - The broker never restricts its own process; all confinement happens
//     in a re-executed helper child.
//   - A layer is reported applied only when the kernel applied it.
//   - An environment is built from Policy.EnvAllow only, never inherited.
package broker
