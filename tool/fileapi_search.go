package tool

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/agentloom/loom/internal/search"
	"github.com/agentloom/loom/sandbox"
)

// Glob lists the regular files under path (a directory or file under a
// readable root; "" is the workspace) that glob admits, by grep's rules:
// hidden and ignored entries are skipped, links are never followed,
// protected subtrees are left out. It answers at most max paths (≤ 0 or
// past 1000, maxGlobPaths, means 1000), shown as the file tools show
// paths, and whether more matched. It runs in the host on pinned
// descriptors, as grep's Go engine does, within grep's 60 s
// (grepTimeout).
func (c *Call) Glob(ctx context.Context, path, glob string, max int) (paths []string, more bool, err error) {
	if max <= 0 || max > maxGlobPaths {
		max = maxGlobPaths
	}
	opts := search.Options{Glob: glob}
	if err := search.ValidateGlob(glob); err != nil {
		return nil, false, &FileError{Code: CodeInvalidGlob, Message: err.Error()}
	}
	if path == "" {
		path = "."
	}
	root, fail := c.searchRoot(path, &opts)
	if fail != nil {
		return nil, false, fileError(*fail)
	}
	ctx, cancel := context.WithTimeout(ctx, grepTimeout)
	defer cancel()
	found, more, err := search.Files(ctx, root, opts, max)
	if err := searchError(path, err); err != nil {
		return nil, false, err
	}
	shown := make([]string, len(found))
	for i, p := range found {
		shown[i] = c.displayPath(p)
	}
	return shown, more, nil
}

// maxGlobPaths bounds the paths one Glob answers.
const maxGlobPaths = 1000

// GrepQuery is one Grep: Pattern (RE2, per line) under Path ("" is the
// workspace), narrowed by Glob, at most MaxMatches matching lines (≤ 0 or
// past MaxGrepResults means MaxGrepResults).
type GrepQuery struct {
	Pattern         string
	Path            string
	Glob            string
	CaseInsensitive bool
	MaxMatches      int
}

// GrepMatch is one matching line: its file as the file tools show paths,
// its 1-based number and its text (valid UTF-8, long lines cut).
type GrepMatch struct {
	Path string
	Line int
	Text string
}

// Grep searches as the grep tool does with its Go engine (the same
// validation, root checks, rules and pins, budgeted in the call's step),
// answering the first matches in path order and whether more were found.
func (c *Call) Grep(ctx context.Context, q GrepQuery) (matches []GrepMatch, more bool, err error) {
	if q.MaxMatches <= 0 || q.MaxMatches > MaxGrepResults {
		q.MaxMatches = MaxGrepResults
	}
	opts := search.Options{Pattern: q.Pattern, CaseInsensitive: q.CaseInsensitive, Glob: q.Glob}
	if _, err := search.Validate(opts); err != nil {
		var ge *search.GlobError
		if errors.As(err, &ge) {
			return nil, false, &FileError{Code: CodeInvalidGlob, Message: err.Error()}
		}
		return nil, false, &FileError{Code: CodeInvalidPattern, Message: err.Error() + "; escape regex metacharacters such as ( [ { . * + ? with a backslash to match them literally"}
	}
	path := q.Path
	if path == "" {
		path = "."
	}
	root, fail := c.searchRoot(path, &opts)
	if fail != nil {
		return nil, false, fileError(*fail)
	}
	ctx, cancel := context.WithTimeout(ctx, grepTimeout)
	defer cancel()
	if b := jailOf(c.Broker); b != nil {
		t, err := b.Ledger().Admit(c.stepKey(), sandbox.Budget{MaxOutstanding: maxConcurrentSearches}, cancel)
		if d := sandbox.DenialOf(err); d != nil {
			return nil, false, &FileError{Code: Code(d.Code), Message: d.Explain()}
		}
		defer b.Ledger().Release(t)
	}
	res, err := search.Go(ctx, root, opts)
	if err := searchError(path, err); err != nil {
		return nil, false, err
	}
	for _, h := range res.Hits {
		if !h.Match {
			continue
		}
		if len(matches) == q.MaxMatches {
			more = true
			break
		}
		matches = append(matches, GrepMatch{Path: c.displayPath(h.Path), Line: h.Line, Text: h.Text})
	}
	return matches, more || res.Stopped, nil
}

// searchError renders a failed walk or search as the grep tool does; a
// timed-out search is a failure here, since a program cannot be shown a
// partial answer as if it were whole.
func searchError(path string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return &FileError{Code: CodeSearchFailed, Message: fmt.Sprintf("searching %s took longer than %s; search a smaller directory or narrow the glob", path, grepTimeout)}
	case errors.Is(err, context.Canceled):
		return &FileError{Code: CodeCancelled, Message: "the search was cancelled before it finished"}
	case errors.Is(err, fs.ErrInvalid):
		return &FileError{Code: CodeSearchFailed, Message: notSearchable(path)}
	}
	return &FileError{Code: CodeSearchFailed, Message: fmt.Sprintf("searching %s: %v (a link may have been swapped into the path since it was checked; nothing follows one)", path, err)}
}
