package job

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// Bounds of the bash tool.
const (
	// defaultBashTimeout is a command's timeout when timeout_ms is absent.
	defaultBashTimeout = 120 * time.Second
	// maxBashTimeout is the longest timeout_ms accepted; larger values are
	// clamped to it.
	maxBashTimeout = 600 * time.Second
	// maxBashCommandBytes bounds the command text; a longer one is refused
	// (invalid_arguments) before anything runs, with the fix: write it to
	// a script with fs_write and run that. It is well under what the
	// kernel takes as one argument (MAX_ARG_STRLEN, 128 KiB), past which
	// exec fails with E2BIG.
	maxBashCommandBytes = 64 << 10
	// bashStderrTail is how much of stderr bash keeps to recognise a
	// permission error.
	bashStderrTail = 4 << 10
)

// scratchEnv names the variable holding a command's private scratch
// directory (the jail's own /tmp, gone when the command ends). TMPDIR
// holds the session scratch (tool.Call.Scratch), which persists between
// calls.
const scratchEnv = "LOOM_SCRATCH_DIR"

// Bash modes: how a command runs relative to the call.
const (
	// BashAuto starts the command as a job, watches it up to timeout_ms,
	// and renders it like a foreground run if it ends in that window;
	// otherwise the job is released to its owner and the call answers
	// with its handle. Without a job plane, at the plane's ceiling, or
	// when the plane's clearance is refused, it runs in the foreground.
	BashAuto = "auto"
	// BashForeground runs the command in the call and kills it at
	// timeout_ms.
	BashForeground = "foreground"
	// BashBackground starts the command as a job and answers with its
	// handle at once.
	BashBackground = "background"
)

// Permissions is the permissions argument of bash, and of every tool that
// asks for more access the way bash does, such as code_mode. It asks for
// roots to read, roots to write and the network, for one call only, each
// covered by the session policy or approved by the operator. Roots
// resolve links before they are composed (tool.Call.CanonicalRoot).
type Permissions struct {
	// ReadableRoots are the roots to read, at most 16; a longer list is
	// refused (invalid_arguments, naming the bound).
	ReadableRoots []string `json:"readable_roots,omitempty"`
	// WritableRoots are the roots to write, at most 16 likewise.
	WritableRoots []string `json:"writable_roots,omitempty"`
	// Network asks for the network; absent means the session's.
	Network NetworkGrant `json:"network,omitempty"`
}

// maxPermissionRoots bounds each of Permissions' root lists, so a
// refusal that names what it would grant stays bounded.
const maxPermissionRoots = 16

// NetworkGrant is Permissions.Network: "full" (sandbox.NetworkFull) or
// absent. Its own type so that its schema is an enum (PermissionsSchemas).
type NetworkGrant string

// PermissionsSchemas are the schemas of Permissions' own types, for a
// tool whose arguments hold a Permissions (tool.Typed's overrides).
func PermissionsSchemas() []tool.TypeSchema {
	return []tool.TypeSchema{{Type: reflect.TypeFor[NetworkGrant](), Schema: &jsonschema.Schema{Type: "string",
		Enum: []any{string(sandbox.NetworkFull)}}}}
}

// timeoutMillis is timeout_ms: its own type so that its schema, which
// states the default and the bound, is built from the constants.
type timeoutMillis int

// bashMode and Lifetime are closed sets: each has its own type so that
// its schema is an enum.
type bashMode string

type bashArgs struct {
	Command     string        `json:"command"`
	TimeoutMs   timeoutMillis `json:"timeout_ms,omitempty"`
	Cwd         string        `json:"cwd,omitempty" jsonschema:"under the workspace or a writable root (default: the shell's)"`
	Permissions *Permissions  `json:"permissions,omitempty" jsonschema:"more access for this call only, if the operator approves; roots resolve links"`
	Mode        bashMode      `json:"mode,omitempty"`
	Heartbeat   bool          `json:"heartbeat,omitempty" jsonschema:"periodic wake-ups while a job runs"`
	Lifetime    Lifetime      `json:"lifetime,omitempty"`
}

// bashSchemas are the schemas of bash's own argument types, built from
// the constants (timeout_ms) and the closed sets (mode, lifetime,
// network).
func bashSchemas() []tool.TypeSchema {
	return append([]tool.TypeSchema{
		{Type: reflect.TypeFor[timeoutMillis](), Schema: &jsonschema.Schema{Type: "integer",
			Description: fmt.Sprintf("default %d, at most %d",
				defaultBashTimeout.Milliseconds(), maxBashTimeout.Milliseconds())}},
		{Type: reflect.TypeFor[bashMode](), Schema: &jsonschema.Schema{Type: "string",
			Enum:        []any{BashAuto, BashForeground, BashBackground},
			Description: "auto (default): a job if running at timeout_ms; foreground: killed then; background: a job at once"}},
		{Type: reflect.TypeFor[Lifetime](), Schema: &jsonschema.Schema{Type: "string",
			Enum:        []any{string(LifetimeDefault), string(LifetimeSession)},
			Description: "background only; session: no wall deadline (not for sub-agents, builds or tests)"}},
	}, PermissionsSchemas()...)
}

// BashDetails is the Details of a bash outcome.
type BashDetails struct {
	// ExitCode is the command's exit status (-1 when a signal ended it).
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	// Cancelled: the call's context ended, or the step was aborted.
	Cancelled bool `json:"cancelled,omitempty"`
	// Failed says why the command could not start (CodeExecFailed).
	Failed string `json:"failed,omitempty"`
	// Shell is the shell the command ran with, as the file the sandbox
	// shows: bash found on the command's PATH there, or /bin/sh (the
	// answer then says so).
	Shell      string `json:"shell,omitempty"`
	DurationMs int64  `json:"duration_ms"`
	TimeoutMs  int64  `json:"timeout_ms"`
	Cwd        string `json:"cwd"`
	// Bytes is the total output (stdout and stderr) the command wrote,
	// up to its output bound.
	Bytes int64 `json:"bytes"`
	// OutputBound is the bound the command's output ran under (see
	// tool.Call.OutputBound); OutputLimited is set when the output
	// reached past it and the broker stopped the command there.
	OutputBound   int64 `json:"output_bound,omitempty"`
	OutputLimited bool  `json:"output_limited,omitempty"`
	// Overflow is set when the output spilled to a blob.
	Overflow *blob.Overflow `json:"overflow,omitempty"`
	// Sandbox is the full enforcement report.
	Sandbox *sandbox.Enforcement `json:"sandbox,omitempty"`
	// Wanted lists the grants a refused policy needed.
	Wanted []sandbox.Grant `json:"wanted,omitempty"`
	// Mode is how the command ran: BashForeground, BashAuto or
	// BashBackground (an auto call that fell back to the foreground says
	// foreground).
	Mode string `json:"mode,omitempty"`
	// Job is the handle of the job the command still runs as (background,
	// or auto past its timeout); empty when the call saw it end.
	Job ID `json:"job,omitempty"`
	// Cursor continues reading the job's output after what the call
	// showed.
	Cursor string `json:"cursor,omitempty"`
	// Spill names a watched job's whole output when it outgrew the job
	// plane's window.
	Spill *Spill `json:"spill,omitempty"`
	// ProtectedCreated lists protected paths the command created, which
	// the broker moved aside.
	ProtectedCreated []sandbox.Quarantine `json:"protected_created,omitempty"`
	// GitNeutralised lists the repository-controlled execution (git
	// config entries, hooks, pointers) the command planted and the git
	// guard disarmed.
	GitNeutralised []sandbox.Neutralisation `json:"git_neutralised,omitempty"`
}

// BashTool returns bash over jobs: run one shell command in the broker's
// jail and return its combined output, exit status and the jail's
// enforcement line. Its auto and background modes run the command as a
// job of jobs; a nil jobs is NoPlane(): auto then runs in the foreground,
// background is refused with CodeNoJobPlane, and the description offers
// neither background jobs nor the job tools.
func BashTool(jobs Jobs) tool.Tool {
	jobs = orNoPlane(jobs)
	_, none := jobs.(noPlane)
	return tool.Typed(tool.Tool{
		Name:          "bash",
		Title:         "Run a command",
		Description:   bashDescription(!none),
		PromptSnippet: fmt.Sprintf("bash: run a shell command in the sandbox (workspace writable, %d s default timeout)", int(defaultBashTimeout.Seconds())),
		Replay:        tool.ReplayNever,
		Mode:          tool.Exclusive,
		Requirements:  bashRequirements,
	}, func(ctx context.Context, c *tool.Call, a bashArgs) tool.Outcome {
		return runBash(ctx, c, jobs, a)
	}, bashSchemas()...)
}

// bashDescription is bash's model-facing documentation; every number in
// it comes from its constant. Without a plane it says commands run in the
// call, and names no job tool.
func bashDescription(plane bool) string {
	jobs := fmt.Sprintf("A job answers with its handle: read it with %s, feed it with %s, stop it with %s.",
		PollToolName, SendToolName, KillToolName)
	if !plane {
		jobs = "This host runs no background jobs: commands run in the call; mode background is refused."
	}
	return fmt.Sprintf("Run a command with %s -c in a sandbox (%s -c without %s), returning "+
		"its combined output, exit code and sandbox report. It may write the workspace and writable roots, read system "+
		"directories, use the session's network; .git/hooks and .git/config are read-only. A command over %d KiB or with "+
		"a NUL byte is refused: fs_write a script and run it. `timeout_ms` defaults to %d, at most %d (clamped); then the "+
		"process tree is killed. Output over %d KiB goes to a file fs_read pages; past %d bytes of output (both streams) "+
		"the command is killed. $%s (if set) is private to one command; $TMPDIR persists. %s",
		bashShell, fallbackShell, bashShell, maxBashCommandBytes>>10,
		defaultBashTimeout.Milliseconds(), maxBashTimeout.Milliseconds(), blob.OverflowThreshold>>10,
		tool.MaxCommandOutputBytes, scratchEnv, jobs)
}

// bashRequirements is what bash states statically: the workspace
// writable, the system directories readable by the jail (as system
// roots, which the file tools never read), network off. At run time it
// asks for every writable root the session base grants (not the
// workspace alone: Compose keeps only the roots asked for), the base's
// own system roots, sockets and network, so it never asks past the base
// by itself.
func bashRequirements(workspace string) sandbox.Policy {
	return sandbox.Policy{
		SystemRoots:   sandbox.SystemReadableRoots(),
		WritableRoots: []string{workspace},
		Network:       sandbox.NetworkOff,
	}
}
