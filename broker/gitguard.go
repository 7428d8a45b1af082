package broker

import (
	"slices"

	"github.com/agentloom/loom/sandbox"

	"github.com/agentloom/loom/internal/gitguard"
)

// The git guard lives in internal/gitguard; this file is its face to
// hosts and to Clear: the vocabulary hosts see (Neutralisation, the
// bounds, the errors as Denials, the events as AuditEvents) and the
// calls that reach it.

// QuarantineSuffix marks where the broker moved a protected path a
// command created: <path><QuarantineSuffix>-<unix nanoseconds>.
const QuarantineSuffix = gitguard.QuarantineSuffix

// The git guard's bounds, which no host sets:
//   - A sweep of a writable root visits at most 262,144 directories and
//     descends at most 64 levels into a git directory's modules/ and
//     worktrees/. Past either bound the workspace is fenced
//     (DenialWorkspaceFenced), never half-checked.
//   - DefaultProtected descends at most 8 levels of .git/modules, inspects
//     at most 256 git directories, opens at most 4,096 directories and
//     reads at most 4,096 entries of each.
//   - A git config file over 1 MiB is not read (the guard moves it aside
//     whole); included configs are followed 4 deep.
//   - A root remembers at most 16,384 control-file paths tools wrote
//     outside any git directory. Past it, entries whose file is gone or
//     was rewritten are dropped; when none is, the root is fenced rather
//     than forget one.
//   - SafeGitEnvFor overrides at most 1,024 repository-chosen names; a
//     workspace naming more is an error, never half covered.
//   - The watcher keeps at most 65,536 changed directories between passes.
//
// While a command runs in a writable root, the guard keeps a marker for
// it in loom-git-guard under the user cache directory (or the temporary
// directory, with the uid appended). A link there, or a directory that is
// not the broker's own (mode 0700), is refused.

// DefaultProtected returns the paths of a workspace that must stay
// read-only to a jailed command and out of reach of harness-side file
// tools, so nothing a model runs can plant code that the host's own git
// later executes outside the jail: for every git directory of the
// workspace, its hooks directory, its config, config.worktree and
// commondir (which would re-aim git at another directory's hooks).
//
// Covered layouts:
//   - an ordinary repository: <workspace>/.git/{hooks,config,config.worktree};
//   - a linked worktree or submodule checkout, where .git is a file saying
//     "gitdir: <dir>": the .git file itself (so it cannot be re-aimed),
//     that dir's entries and its commondir file, and, when it has one,
//     the common directory's entries too;
//   - submodules: every git directory under <gitdir>/modules (nested ones
//     and names containing slashes included, 8 levels deep);
//   - a hooks directory or config that is a symlink: its resolved target
//     as well;
//   - core.hooksPath set in a protected config (husky and friends point
//     it into the workspace) and config files pulled in by include.path
//     or includeIf.*.path;
//   - core.hooksPath set in the host's global or system git config
//     (GIT_CONFIG_GLOBAL, else ~/.gitconfig and
//     $XDG_CONFIG_HOME/git/config; GIT_CONFIG_SYSTEM, else
//     /etc/gitconfig, unless GIT_CONFIG_NOSYSTEM), relative ones taken
//     relative to the workspace, where the host's git runs them.
//
// Every file it reads is opened beneath its pinned parent directory,
// non-blocking and only if it is a regular file, within a size bound: a
// FIFO or device planted where a config or pointer file belongs is
// skipped, never waited on.
//
// Its walk follows no link: modules directories and their entries are
// opened one component at a time from the workspace without following
// any (a link there is not walked, so a command's .git/modules -> / reads
// nothing of the host), and a git directory outside the workspace (a
// pointer's, commondir's or .git link's target) has its own hooks,
// configs and commondir listed but is never walked. The walk opens at
// most 4,096 directories and reads at most 4,096 entries of each.
//
// The lexical <workspace>/.git/hooks and <workspace>/.git/config are
// always listed; other paths need not exist (the jail binds only those
// that do). Paths are absolute, clean, sorted and unique. A workspace that
// is not absolute yields the two lexical entries under its cleaned form,
// which Validate then refuses: failing closed rather than protecting
// nothing.
func DefaultProtected(workspace string) []string {
	return gitguard.Protected(workspace)
}

// SafeGitEnv returns environment entries ("NAME=value") under which the
// host's own git, and every git it starts (submodules a status recurses
// into included: git passes GIT_CONFIG_COUNT on to them), runs no
// program a repository's configuration names: no fsmonitor hook, no
// hooks, no pager or editor but inert ones, no external diff, no
// credential helper or askpass prompt, no ssh command or git proxy but
// the host's, no gpg but the default programs, no ext:: transport, and
// no fetch or push through a local-path remote (whose upload-pack and
// receive-pack a repository can name, first value winning). It
// keeps the host's global and system config (its identity, its own
// helpers) and adds to whatever environment the caller passes, e.g.
// cmd.Env = append(os.Environ(), broker.SafeGitEnv()...); an existing
// GIT_CONFIG_COUNT in that environment is replaced, so put its entries
// in the config instead.
//
// What it cannot reach by itself is keyed by a name the repository
// chooses: filter.<driver>.*, diff.<driver>.textconv and .command,
// merge.<driver>.driver (picked by .gitattributes or info/attributes),
// alias.<name>, submodule.<name>.update, trailer.<token>.cmd and
// .command, and tar.<format>.command. SafeGitEnvFor adds an override
// for each such name it finds in a workspace's git configs. Neither
// can override core.worktree, which git reads per repository: that
// one only the broker's git guard keeps inside the workspace.
//
// One key no environment can turn off: diff.external (git runs an empty
// value as a program, failing the diff). Pass --no-ext-diff to git diff,
// git log -p and git show as well.
func SafeGitEnv() []string {
	return gitguard.SafeEnv()
}

// SafeGitEnvFor is SafeGitEnv plus, for every driver, remote, alias and
// submodule name that a git config anywhere beneath workspace defines an
// exec-capable key for (nested repositories, submodules' and linked
// worktrees' git directories, and workspace files they include), an
// override that disarms it: empty filter commands (required=false), empty
// textconv and diff commands, false as the merge driver (the merge of
// that file fails), an empty alias (git refuses to run it), checkout
// as the submodule update mode, empty trailer commands, and gzip's own
// command (or cat) for an archive format. It reads the workspace as the
// broker's guard does: beneath a pinned directory, non-blocking, regular
// files only. Call it right before running git; what a command writes
// later is not covered.
func SafeGitEnvFor(workspace string) ([]string, error) {
	return gitguard.SafeEnvFor(workspace)
}

// guardGit prepares the git guard for a command under p, or refuses the
// command with a Denial when the workspace cannot be kept safe: it is
// fenced, a sweep after a host crash failed, or the crash marker cannot
// be written. Exactly one of Abandon (the command never started) or
// settleGit (its tree is gone) ends the hold.
func (b *Broker) guardGit(p sandbox.Policy) (*gitguard.Hold, *sandbox.Denial) {
	// The roots p leaves unguarded (toolchain caches) are not swept.
	var guarded []string
	for _, w := range p.WritableRoots {
		if !slices.ContainsFunc(p.Unguarded, func(u string) bool { return sandbox.Covers(u, w) }) {
			guarded = append(guarded, w)
		}
	}
	h, err := b.git.Enter(guarded, p.Protected)
	if err != nil {
		return nil, gitguard.Refusal(err)
	}
	return h, nil
}

// settleGit ends h once the command's tree is gone and records in s
// what the guard did while it ran.
func settleGit(h *gitguard.Hold, s *sandbox.Settled) {
	done, created := h.Settle()
	for _, q := range created {
		s.ProtectedCreated = append(s.ProtectedCreated, sandbox.Quarantine(q))
	}
	s.GitNeutralised = done
}

// Unfence re-runs the git guard's full sweep of workspace (a writable
// root a fenced command ran in) and, only if every neutralisation now
// succeeds, lets commands run there again. Fix what the fence's reason
// names (a directory the broker cannot write, a file it cannot move)
// first. A workspace that is not fenced returns nil. A failed sweep
// returns a *Denial with DenialWorkspaceFenced saying what remains.
func (b *Broker) Unfence(workspace string) error {
	if err := b.git.Unfence(workspace); err != nil {
		return gitguard.Refusal(err)
	}
	return nil
}

// GitFenced reports why workspace is fenced, or "" when it is not.
func (b *Broker) GitFenced(workspace string) string {
	return b.git.Fenced(workspace)
}

// GuardToolWrite is called by a tool after it wrote the file at path
// (absolute, beneath the writable root root, in the form the policy
// names the root) on a model's behalf, outside any jail. When it returns
// nil, no git configuration that write created or changed can make the
// host's git run a program: every git directory the written path lies in
// or beneath, that an ancestor's .git names, or that the written file
// points at (a .git or commondir file) has been checked, entries off
// the allowlist removed from its configs and hooks moved aside, as after a
// command, and a pointer the write made or re-aimed that cannot be
// followed with certainty, that names a directory outside root, or that
// names a git directory holding what the allowlist does not keep, has
// been moved aside (see internal/gitguard/pointer.go). It acts on:
//   - the written file, if it is a git control file, whatever the guard
//     recorded of the path before;
//   - every control file of a git directory the write made one (or that
//     the written pointer names) and that the guard did not know as one
//     before (for a root it had never seen, every such directory);
//   - while a command runs in the root, whatever changed, as its live
//     passes do.
//
// A control file written outside any git directory is remembered (up
// to 16,384 paths per root) and acted on by whichever later pass, between
// commands or during one, first finds a git directory around it, in
// whatever order the rest of the repository appears.
//
// The work is bounded by the written path's depth: the path's ancestors
// up to the root and the git directories they are or point at, never a
// sweep of the root, except once, when the guard had never run in root:
// then its first sweep records the baseline before the write is
// attributed. The result lists what was neutralised. When something
// cannot be, the root is fenced and the error is a *Denial with
// DenialWorkspaceFenced; a path not beneath root is a *Denial with
// DenialInvalidPolicy.
//
// On a nil *Broker the same checks run without memory, as
// tool.GuardWriteAlone runs them: the
// written file and every git directory containing it are acted on, and
// a failure is reported but fences nothing, as nothing runs there.
func (b *Broker) GuardToolWrite(root, path string) ([]sandbox.Neutralisation, error) {
	var done []sandbox.Neutralisation
	var err error
	if b == nil {
		done, err = gitguard.ToolWriteAlone(root, path)
	} else {
		done, err = b.git.ToolWrite(root, path)
	}
	if err != nil {
		return done, gitguard.Refusal(err)
	}
	return done, nil
}

// gitAudit is one of the guard's events as hosts see it.
func gitAudit(e gitguard.Event) sandbox.AuditEvent {
	a := sandbox.AuditEvent{Workspace: e.Workspace, Path: e.Path, Detail: e.Detail}
	switch e.Kind {
	case gitguard.EventNeutralised:
		a.Kind = sandbox.AuditNeutralised
	case gitguard.EventFenced:
		a.Kind = sandbox.AuditFenced
	case gitguard.EventQuarantined:
		a.Kind = sandbox.AuditQuarantine
	}
	return a
}
