package broker

import (
	"errors"
	"io/fs"
	"os"
)

// gitGuard keeps one command from leaving repository-controlled execution
// behind in its writable roots (see guardGit). Clear calls started once
// the command runs, then exactly one of settle (after the command's tree
// is gone) or abandon (the command never started).
type gitGuard struct {
	absent []string
}

// guardGit prepares the guard for a command under p, or refuses the
// command with a Denial when the workspace cannot be kept safe.
func (b *Broker) guardGit(p Policy) (*gitGuard, *Denial) {
	return &gitGuard{absent: absentPaths(p.Protected)}, nil
}

// started is called once the command is running.
func (g *gitGuard) started() {}

// abandon is called when the command never started.
func (g *gitGuard) abandon() {}

// settle runs after the command's tree is gone and records what was done
// in s.
func (g *gitGuard) settle(s *Settled) {
	s.ProtectedCreated = quarantineCreated(g.absent)
}

// absentPaths returns the entries of paths that do not exist.
func absentPaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			out = append(out, p)
		}
	}
	return out
}

// quarantineCreated moves aside every path of absent that now exists.
func quarantineCreated(absent []string) []Quarantine {
	var out []Quarantine
	for _, p := range absent {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		q := Quarantine{Path: p}
		if to, err := quarantineAside(p); err != nil {
			q.Err = err.Error()
		} else {
			q.MovedTo = to
		}
		out = append(out, q)
	}
	return out
}

// pump copies one pipe into out in chunks of at most OutputChunkBytes.
