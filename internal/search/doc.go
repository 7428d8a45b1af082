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
// The Go engine runs in the host process, where no jail confines it, so
// it confines itself: it opens the search root one component at a time
// from "/" without following links (the caller resolved and authorized
// it first), then every directory and file relative to its parent's
// descriptor with O_NOFOLLOW and O_NONBLOCK, and reads regular files only
// (fstat on what it opened). A symbolic link is never followed, a FIFO,
// device or socket never read or waited on (a .gitignore included), and
// nothing is read outside the root and the directories between
// Options.IgnoreRoot and it. Outside unix it holds an *os.Root per
// directory instead, which refuses every escape but may follow a link
// that stays inside.
//
// Invariants:
//   - Both engines select the same files as ripgrep run with RipgrepArgs
//     (or pinned, with RipgrepArgsFor and NewRipgrepCollectorFor),
//     for the rule subset documented on Options, and produce hits that
//     sort, bound and render identically.
//   - Validate (pattern and glob) refuses exactly what would make the
//     engines differ before either runs: a glob ripgrep refuses, or one
//     its versions read differently.
//   - Every bound is a named constant; no input makes the package hold
//     more than MaxScanMatches matches or MaxLineBytes of one line.
//   - Nothing here panics on any input; parse failures are errors.
package search
