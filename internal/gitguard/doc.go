// Package gitguard is the broker's git guard: it neutralises what a
// jailed command leaves in a writable root's git state, so the host's
// own later git, run outside any jail, never runs a program or writes
// outside the roots because of it. SECURITY.md ("What a command leaves
// behind: git") is its threat model.
//
// The broker drives it: Fences.Enter before each command and
// Hold.Settle once the command's tree is gone (or Hold.Abandon when it
// never ran), Fences.ToolWrite after a harness-side tool wrote a file,
// Fences.Unfence and Fences.Fenced for a fenced
// workspace, Stamps for a primed helper's re-validation. Protected lists
// a workspace's paths a jail keeps read-only, and SafeEnv and SafeEnvFor
// are the environment for the host's own git. Package tool runs
// ToolWriteAlone after a write when its call has no broker, and Refusal
// turns the guard's errors into the jail's denials for both.
package gitguard
