package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// ProposalQueue is the reference Proposals: a queue a host reviews and
// applies, held in memory for one session (a new queue starts empty). It
// refuses a proposal to a target it has no path for, one equal to what
// the file holds, one its check refuses, and one past
// MaxProposalsQueued waiting. Accept applies a proposal by writing a
// temporary file beside the target and renaming it into place, so a
// reader sees the old file or the new one; it refuses one whose file
// changed since it was proposed. A ProposalQueue is safe for concurrent
// use.
type ProposalQueue struct {
	paths map[Target]string
	check func(Target, []byte) error

	mu      sync.Mutex
	seq     int
	pending []queued
}

// queued is one pending proposal and the digest of its file when it was
// proposed.
type queued struct {
	Proposal
	base [sha256.Size]byte
}

// NewProposalQueue returns an empty queue over the rules file at rules
// and the configuration file at configuration ("" for none: only rules
// may be proposed). check, when non-nil, judges a proposed content for
// its target (a configuration that must parse, say); its error refuses
// the proposal with CodeProposalInvalid.
func NewProposalQueue(rules, configuration string, check func(t Target, content []byte) error) *ProposalQueue {
	q := &ProposalQueue{paths: map[Target]string{}, check: check}
	if rules != "" {
		q.paths[TargetRules] = rules
	}
	if configuration != "" {
		q.paths[TargetConfiguration] = configuration
	}
	return q
}

// Configuration implements Proposals.
func (q *ProposalQueue) Configuration() string { return q.paths[TargetConfiguration] }

// Propose implements Proposals.
func (q *ProposalQueue) Propose(ctx context.Context, p Proposal) (Proposed, error) {
	if err := p.Check(); err != nil {
		return Proposed{}, err
	}
	path, ok := q.paths[p.Target]
	if !ok {
		if p.Target == TargetConfiguration {
			return Proposed{}, refuse(CodeNoConfiguration, "this host has no configuration file; propose to rules")
		}
		return Proposed{}, refuse(CodeProposalsUnavailable, "this host has no %s file", p.Target)
	}
	current, err := readTarget(path)
	if err != nil {
		return Proposed{}, &Refusal{Code: CodeProposalsUnavailable, Reason: "the " + string(p.Target) + " file cannot be read", Err: err}
	}
	if bytes.Equal(current, []byte(p.Content)) {
		return Proposed{}, refuse(CodeProposalUnchanged, "the %s file already holds this content", p.Target)
	}
	if q.check != nil {
		if err := q.check(p.Target, []byte(p.Content)); err != nil {
			return Proposed{}, &Refusal{Code: CodeProposalInvalid, Reason: "the host refused the " + string(p.Target) + ": " + err.Error(), Err: err}
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) >= MaxProposalsQueued {
		return Proposed{}, refuse(CodeProposalQueueFull, "%d proposals already wait for review; wait for the host to review them", MaxProposalsQueued)
	}
	q.seq++
	p.ID = fmt.Sprintf("proposal-%d", q.seq)
	q.pending = append(q.pending, queued{Proposal: p, base: sha256.Sum256(current)})
	return Proposed{ID: p.ID, Pending: len(q.pending)}, nil
}

// List returns the pending proposals, oldest first.
func (q *ProposalQueue) List() []Proposal {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]Proposal, len(q.pending))
	for i, p := range q.pending {
		out[i] = p.Proposal
	}
	return out
}

// Accept applies the pending proposal id to its file and removes it from
// the queue. It refuses an id not pending with CodeUnknownProposal, and a
// proposal whose file changed since it was proposed with
// CodeProposalStale (it is then removed: propose again over the new
// file). A failed write leaves the file as it was and the proposal
// pending.
func (q *ProposalQueue) Accept(id string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := q.find(id)
	if i < 0 {
		return refuse(CodeUnknownProposal, "no pending proposal %s", quote(id))
	}
	p := q.pending[i]
	path := q.paths[p.Target]
	current, err := readTarget(path)
	if err != nil {
		return &Refusal{Code: CodeProposalsUnavailable, Reason: "the " + string(p.Target) + " file cannot be read", Err: err}
	}
	if sha256.Sum256(current) != p.base {
		q.pending = slices.Delete(q.pending, i, i+1)
		return refuse(CodeProposalStale, "the %s file changed since %s was proposed", p.Target, id)
	}
	if err := stageAndRename(path, []byte(p.Content)); err != nil {
		return &Refusal{Code: CodeProposalsUnavailable, Reason: "the " + string(p.Target) + " file cannot be written", Err: err}
	}
	q.pending = slices.Delete(q.pending, i, i+1)
	return nil
}

// Reject removes the pending proposal id unapplied; an id not pending is
// refused with CodeUnknownProposal.
func (q *ProposalQueue) Reject(id string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := q.find(id)
	if i < 0 {
		return refuse(CodeUnknownProposal, "no pending proposal %s", quote(id))
	}
	q.pending = slices.Delete(q.pending, i, i+1)
	return nil
}

func (q *ProposalQueue) find(id string) int {
	return slices.IndexFunc(q.pending, func(p queued) bool { return p.ID == id })
}

// readTarget reads a target file; a missing one reads as empty, so a
// first rules file can be proposed.
func readTarget(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// stageAndRename writes content to a temporary file beside path, synced,
// with path's mode (0o644 for a new file), and renames it over path.
func stageAndRename(path string, content []byte) error {
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".proposal-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(content)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
