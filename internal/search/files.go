package search

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"sync/atomic"
)

// Files lists the regular files under root that a search with o would
// read, by the same walk and the same rules (glob narrowing, .rgignore
// and .gitignore files, hidden entries, protected subtrees, no link
// followed), without reading any of them; o.Pattern is not used. It
// answers at most max paths (absolute, sorted as ComparePaths sorts) and
// whether the walk found more. root is as Go requires: absolute, clean
// and resolved. A bad glob is a *GlobError. When ctx ends first it
// returns what it listed so far together with ctx.Err().
func Files(ctx context.Context, root string, o Options, max int) (paths []string, more bool, err error) {
	if err := ValidateGlob(o.Glob); err != nil {
		return nil, false, err
	}
	if !filepath.IsAbs(root) || filepath.Clean(root) != root {
		return nil, false, &fs.PathError{Op: "list", Path: root, Err: errors.New("not an absolute, clean path")}
	}
	var stop atomic.Bool
	files, err := listFiles(ctx, root, o, &stop)
	if err != nil {
		return nil, false, err
	}
	for job := range files {
		job.dir.release()
		if len(paths) == max {
			more = true
			stop.Store(true) // the walk ends at its next directory; drain what it queued
			continue
		}
		paths = append(paths, job.path)
	}
	slices.SortFunc(paths, ComparePaths)
	return paths, more, ctx.Err()
}
