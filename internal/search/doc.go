// Package search is the engine behind Loom's grep tool: a pure-Go
// line-oriented regular-expression search over a directory tree, and the
// parser for ripgrep's --json event stream, both producing the same Hit
// values so the tool renders identical output whichever engine ran.
//
// It owns: the file-selection rules (hidden entries and symlinks skipped,
// nested .gitignore files with negations honoured, one ripgrep-style glob,
// protected subtrees skipped, files holding a NUL byte skipped as binary),
// line splitting and per-line bounds, the deterministic order of hits
// (by path compared component by component, then by line), context
// windows, truncation to a match budget, and rendering.
//
// It does not own: path authorization (package tool resolves and
// authorizes the search root first), running ripgrep (package tool does,
// jailed through package broker) or overflow of long output (package
// blob).
//
// Invariants:
//   - Both engines select the same files as ripgrep run with RipgrepArgs,
//     for the rule subset documented on Options, and produce hits that
//     sort, bound and render identically.
//   - Every bound is a named constant; no input makes the package hold
//     more than MaxScanMatches matches or MaxLineBytes of one line.
//   - Nothing here panics on any input; parse failures are errors.
package search
