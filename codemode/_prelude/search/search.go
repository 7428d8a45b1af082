// Package search finds files and lines in the workspace. It only reads:
// importing it instead of cap/fs says so, and the host holds it to that.
//
// Hidden and .gitignore'd files are skipped, as the grep tool skips
// them. Results are bounded by the host; Truncated says a bound cut them
// short. A bad pattern fails with code "invalid_pattern" or
// "invalid_glob"; a path outside the workspace with "outside_roots".
// Safe to call from many goroutines at once.
//
// Example:
//
//	g, err := search.Grep(ctx, `func Test\w+`, search.GrepOptions{Glob: "*_test.go"})
//	if err != nil {
//		panic(err)
//	}
//	for _, m := range g.Matches {
//		fmt.Printf("%s:%d: %s\n", m.Path, m.Line, m.Text)
//	}
package search

import (
	"context"

	"cap/internal/client"
)

// Error is the error every cap package returns: search.Error, fs.Error
// and the rest are one type. Fields: Cap (e.g. "search.grep"), Code (a
// stable snake_case word to switch on), Message. See fs.Error for the
// codes.
type Error = client.Error

// GlobResult is the paths a glob matched.
type GlobResult struct {
	Paths     []string // workspace-relative paths of files
	Truncated bool     // true when the host's bound cut the list short
}

// Glob returns the files under path ("" is the workspace root) whose
// path matches pattern, such as "**/*.go" or "cmd/*/main.go".
func Glob(ctx context.Context, pattern, path string) (GlobResult, error) {
	const name = "search.glob"
	args := map[string]any{"pattern": pattern}
	if path != "" {
		args["path"] = path
	}
	m, err := client.Call(ctx, name, args)
	if err != nil {
		return GlobResult{}, err
	}
	r := client.Read(m)
	g := GlobResult{Paths: r.Strings("paths"), Truncated: r.Bool("truncated")}
	return g, r.Err(name)
}

// GrepOptions narrow a Grep. The zero value searches the whole
// workspace, case-sensitively, up to the host's default result bound.
type GrepOptions struct {
	Path       string // a file or directory to search in; "" is the workspace root
	Glob       string // only files whose name matches, e.g. "*.go"; "" is all
	IgnoreCase bool
	MaxResults int // at most this many matches; 0 is the host's default
}

// Match is one matching line.
type Match struct {
	Path string // workspace-relative
	Line int    // 1-based line number
	Text string // the line, without its newline
}

// GrepResult is the lines a Grep matched, in path then line order.
type GrepResult struct {
	Matches   []Match
	Truncated bool // true when MaxResults or the host's bound cut it short
}

// Grep returns the lines matching the regular expression pattern (RE2
// syntax, as Go's regexp).
func Grep(ctx context.Context, pattern string, o GrepOptions) (GrepResult, error) {
	const name = "search.grep"
	args := map[string]any{"pattern": pattern}
	if o.Path != "" {
		args["path"] = o.Path
	}
	if o.Glob != "" {
		args["glob"] = o.Glob
	}
	if o.IgnoreCase {
		args["ignore_case"] = true
	}
	if o.MaxResults != 0 {
		args["max_results"] = o.MaxResults
	}
	m, err := client.Call(ctx, name, args)
	if err != nil {
		return GrepResult{}, err
	}
	r := client.Read(m)
	g := GrepResult{Truncated: r.Bool("truncated")}
	r.Maps("matches", func(f *client.Fields) {
		g.Matches = append(g.Matches, Match{Path: f.Str("path"), Line: f.Int("line"), Text: f.Str("text")})
	})
	return g, r.Err(name)
}
