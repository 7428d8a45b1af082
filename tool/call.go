package tool

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/sandbox"
)

// Call carries every seam one tool call may touch. A host builds one per
// call (or copies a session template with At); tools read it and never
// keep it. Only the fields a tool uses need to be set: a nil seam means
// "this host has none", never a crash.
type Call struct {
	// Workspace is the absolute root of the model's workspace. Relative
	// paths in arguments resolve against it.
	Workspace string

	// Strand is the durable name of the agent making the call; OpID and
	// StepID identify the operation (a run) and the step (one batch of
	// tool calls) inside it; SourceIndex is the call's position in the
	// batch. Identity comes from here, never from model arguments.
	Strand      string
	OpID        string
	StepID      string
	SourceIndex int

	// Base is the session's base policy; Grants are the widenings approved
	// for this call. Base.Protected is enforced harness-side as well.
	Base   sandbox.Policy
	Grants []sandbox.Grant

	// Env is the environment the host built for commands; the broker
	// still drops anything Policy.EnvAllow does not name.
	Env map[string]string
	// TempDir is the session scratch directory shown to commands as
	// TMPDIR. Empty means DefaultTempDir under the workspace.
	TempDir string
	// Shell holds the strand's current shell directory; nil means the
	// workspace root, with working_directory unable to change it.
	Shell *Shell

	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Broker runs jailed commands and guards writes. Nil (or a nil
	// pointer, such as a nil *broker.Broker) means this host runs no
	// commands: the file tools still refuse paths under .git and guard
	// each write alone (GuardWriteAlone).
	Broker Broker
	// Blobs stores output that overflows; nil means overflow is refused.
	Blobs *blob.Store
	// MaxOutputBytes bounds what one command this call runs may write
	// to stdout and stderr together (see OutputBound). Zero means
	// MaxCommandOutputBytes; a host may lower the bound, never raise it:
	// larger values are clamped to MaxCommandOutputBytes.
	MaxOutputBytes int64

	// ObserveOutput is shown the rolling tail of a running command's
	// output after every chunk; nil ignores it.
	ObserveOutput func(OutputTail)
	// RaiseRefusal asks the host's escalation plane whether a refused
	// policy may be widened; nil settles every refusal in band.
	RaiseRefusal func(context.Context, RaisedRefusal) Escalation

	// pins are the session's pinned roots, shared by every Call At
	// copies from one template (see At).
	pins *rootPins
}

// SubagentPrefix begins the strand name of every sub-agent (see
// Call.Strand). Tools that treat sub-agents apart (a sub-agent may not
// start a session-lifetime job) ask IsSubagent.
const SubagentPrefix = "sub:"

// IsSubagent reports whether strand names a sub-agent: it begins with
// SubagentPrefix.
func IsSubagent(strand string) bool { return strings.HasPrefix(strand, SubagentPrefix) }

// DefaultTempDir is the session scratch directory, relative to the
// workspace, used when Call.TempDir is empty.
const DefaultTempDir = ".loom/tmp"

// At returns a copy of c with the per-call coordinates replaced. The copy
// shares c's seams, and c's pinned roots: the first At pins the roots c
// names (where each resolves and which directory is there), and a later
// call whose root resolves elsewhere, or holds another directory, is
// refused with CodeRootChanged rather than following what a command
// swapped in. Make every call of a session with At on one template.
func (c *Call) At(opID, stepID string, sourceIndex int) *Call {
	d := c.copyPinned()
	d.OpID, d.StepID, d.SourceIndex = opID, stepID, sourceIndex
	return &d
}

// stepKey is the ledger pool the call's clearances are budgeted in.
func (c *Call) stepKey() sandbox.StepKey { return sandbox.StepKey{OpID: c.OpID, StepID: c.StepID} }

// Clock returns the call's current time.
func (c *Call) Clock() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Scratch returns the absolute session scratch directory.
func (c *Call) Scratch() string {
	if c.TempDir != "" {
		return c.TempDir
	}
	return filepath.Join(c.Workspace, DefaultTempDir)
}

// Dir returns the strand's current shell directory (the workspace when
// no Shell is set or none was chosen).
func (c *Call) Dir() string {
	if c.Shell != nil {
		if d := c.Shell.Dir(); d != "" {
			return d
		}
	}
	return c.Workspace
}

// Observe shows t to the host's output observer, if any.
func (c *Call) Observe(t OutputTail) {
	if c.ObserveOutput != nil {
		c.ObserveOutput(t)
	}
}

// Raise asks the host's escalation plane about a refusal. Without a plane
// it answers Settle.
//
// Every raise, and every answer that resumes with grants, is handed to the
// call's broker (Broker.Audit; *broker.Broker passes it to
// broker.Options.Audit), when it has one, as an AuditEscalation naming
// the tool, the grants and, when the refusal has a Subject, its kind,
// size and SHA-256.
func (c *Call) Raise(ctx context.Context, r RaisedRefusal) Escalation {
	if c.RaiseRefusal == nil {
		return Escalation{}
	}
	reason := ""
	if r.Denial != nil {
		reason = fmt.Sprintf("%s, wanting %v", r.Denial.Code, r.Denial.Wanted)
	}
	runs := ""
	if r.Subject != nil {
		runs = fmt.Sprintf(" to run a %s of %d bytes, sha256 %s", r.Subject.Kind, len(r.Subject.Text), r.Subject.Digest())
	}
	b := jailOf(c.Broker)
	if b != nil {
		b.Audit(sandbox.AuditEvent{Kind: sandbox.AuditEscalation, Workspace: c.Workspace,
			Detail: r.Tool + " raised " + reason + runs})
	}
	esc := c.RaiseRefusal(ctx, r)
	if esc.Resume && b != nil {
		b.Audit(sandbox.AuditEvent{Kind: sandbox.AuditEscalation, Workspace: c.Workspace,
			Detail: fmt.Sprintf("%s resumed with grants %v%s", r.Tool, esc.Grants, runs)})
	}
	return esc
}

// audit hands e to the broker's audit hook; a call without a broker has
// no audit trail.
func (c *Call) audit(e sandbox.AuditEvent) {
	if c.Broker != nil {
		c.Broker.Audit(e)
	}
}

// Shell is a strand's current shell directory, safe for concurrent use.
// The zero value means "the workspace root".
type Shell struct {
	mu  sync.Mutex
	dir string
}

// Dir returns the chosen directory, or "" when none was chosen.
func (s *Shell) Dir() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dir
}

// SetDir records dir (absolute, already authorized) as the current directory.
func (s *Shell) SetDir(dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dir = dir
}

// TailBytes bounds the window an OutputTail carries.
const TailBytes = 4 << 10

// OutputTail is one observation of a running command: the whole retained
// window of one stream (at most TailBytes, cut on UTF-8 boundaries), not
// the latest chunk, so an observer replaces what it shows.
type OutputTail struct {
	Stream     string // "stdout" or "stderr"
	Tail       string
	TotalBytes int64
}

// RaisedRefusal is a policy refusal a tool hands to the host's escalation
// plane: the broker's denial (whose Wanted is exactly what an approval may
// grant), the refused work's deadline, and what would run with the grants.
// Describe renders it for the operator who answers.
type RaisedRefusal struct {
	// Tool is the name of the tool that raised it.
	Tool string
	// Denial is the broker's refusal; its Wanted is exactly what an
	// approval may grant.
	Denial *sandbox.Denial
	// Deadline is when the refused work would be stopped; zero when it
	// has none (the file tools).
	Deadline time.Time
	// Subject is exactly what runs (or lands) if the grants are given,
	// from the tool's own snapshot taken before the raise: bash's command
	// and directory, code_mode's program as it was read and built,
	// fs_write's content and the file it replaces. Show it, never a path
	// the arguments name: a file can change between the read and the
	// answer. Nil means the tool names nothing it runs (fs_read and
	// fs_edit, whose Denial names the one file they want).
	Subject *Subject
}

// Escalation is the host's answer to a RaisedRefusal. The zero value
// settles: the refusal stands and the tool reports it in band. Resume
// retries once with Grants added to the call's own; a file tool goes on
// with the one file it asked for when Grants cover it, and with nothing
// more.
type Escalation struct {
	Resume bool
	Grants []sandbox.Grant
}
