// Package search is the engine behind Loom's grep tool: a pure-Go
// line-oriented regular-expression search over a directory tree, and the
// parser for ripgrep's --json event stream, both producing the same Hit
// values so the tool renders identical output whichever engine ran.
//
// It owns: the file-selection rules (hidden entries and symlinks skipped,
// nested .gitignore and .rgignore files with negations honoured, one
// ripgrep-style glob that only narrows, protected subtrees skipped, files
// holding a NUL byte skipped as binary, UTF-16 and other encodings read
// as the bytes they are), the meaning of a pattern on a line (ripgrep's:
// nothing matches onto a byte that is not valid UTF-8), line splitting
// and per-line bounds, the deterministic order of hits (by path compared
// component by component, then by line), context windows, truncation to
// a match budget, rendering, and confirming another engine's hits against
// the files (Confirm).
//
// The Go engine looks for a run of bytes every match must pass through
// (a literal, case-folded letters, ASCII classes: a prefilter derived
// from the pattern) and runs the regexp only on the lines holding one;
// a pattern with no such run is searched over the whole file buffer.
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
//     for the rule subset documented on Options, match the same lines,
//     and produce hits that sort, bound and render identically
//     (held to each other on the Go source tree by a differential test).
//   - Validate (pattern and glob) refuses exactly what would make the
//     engines differ before either runs: a glob ripgrep refuses, or one
//     its versions read differently.
//   - Every bound is a named constant; no input makes the package hold
//     more than MaxScanMatches matches or MaxLineBytes of one line.
//   - Nothing here panics on any input; parse failures are errors.
package search
