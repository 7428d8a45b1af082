package job

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/tool"
)

// Bounds of the bash tool.
const (
	// DefaultBashTimeout is a command's timeout when timeout_ms is absent.
	DefaultBashTimeout = 120 * time.Second
	// MaxBashTimeout is the longest timeout_ms accepted; larger values are
	// clamped to it.
	MaxBashTimeout = 600 * time.Second
	// MaxBashCommandBytes bounds the command text; a longer one is refused
	// (invalid_arguments) before anything runs, with the fix: write it to
	// a script with fs_write and run that. It is well under what the
	// kernel takes as one argument (MAX_ARG_STRLEN, 128 KiB), past which
	// exec fails with E2BIG.
	MaxBashCommandBytes = 64 << 10
	// bashStderrTail is how much of stderr bash keeps to recognise a
	// permission error.
	bashStderrTail = 4 << 10
)

// ScratchEnv names the variable holding a command's private scratch
// directory (the jail's own /tmp, gone when the command ends). TMPDIR
// holds the session scratch (tool.Call.Scratch), which persists between
// calls.
const ScratchEnv = "LOOM_SCRATCH_DIR"

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

type bashPermissions struct {
	ReadableRoots []string `json:"readable_roots,omitempty" jsonschema:"extra directories the command needs to read (absolute, or relative to the workspace)"`
	WritableRoots []string `json:"writable_roots,omitempty" jsonschema:"extra directories the command needs to write (absolute, or relative to the workspace)"`
	Network       string   `json:"network,omitempty" jsonschema:"\"full\" to give the command network access"`
}

// timeoutMillis is timeout_ms: its own type so that its schema, which
// states the default and the bound, is built from the constants.
type timeoutMillis int

type bashArgs struct {
	Command     string           `json:"command" jsonschema:"the shell command to run (bash -c)"`
	TimeoutMs   timeoutMillis    `json:"timeout_ms,omitempty"`
	Cwd         string           `json:"cwd,omitempty" jsonschema:"working directory inside the workspace (default: the current shell directory)"`
	Permissions *bashPermissions `json:"permissions,omitempty" jsonschema:"more access than the session gives, approved by the operator for this one call"`
	Mode        string           `json:"mode,omitempty" jsonschema:"auto (default): wait up to timeout_ms, then leave the command running as a background job; foreground: kill it at timeout_ms; background: start it as a job and answer at once"`
	Heartbeat   bool             `json:"heartbeat,omitempty" jsonschema:"for a command that becomes a job: wake me with a periodic heartbeat while it runs (default: silent until it ends)"`
	Lifetime    string           `json:"lifetime,omitempty" jsonschema:"background only: default (killed at a finite wall) or session (runs until killed or the session ends; not for sub-agents; tests, builds and anything expected to finish use the default)"`
}

// timeoutSchema is timeout_ms's schema.
func timeoutSchema() tool.TypeSchema {
	return tool.TypeSchema{
		Type: reflect.TypeFor[timeoutMillis](),
		Schema: &jsonschema.Schema{
			Type: "integer",
			Description: fmt.Sprintf("foreground: kill the command after this many milliseconds; auto: how long to wait "+
				"before it continues as a background job (default %d, at most %d)",
				DefaultBashTimeout.Milliseconds(), MaxBashTimeout.Milliseconds()),
		},
	}
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
	// shows: BashShell found on the command's PATH there, or
	// FallbackShell (the answer then says so).
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
	Sandbox *broker.Enforcement `json:"sandbox,omitempty"`
	// Wanted lists the grants a refused policy needed.
	Wanted []broker.Grant `json:"wanted,omitempty"`
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
	ProtectedCreated []broker.Quarantine `json:"protected_created,omitempty"`
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
		Description:   bashDescription(!none),
		PromptSnippet: fmt.Sprintf("bash: run a shell command in the sandbox (workspace writable, %d s default timeout)", int(DefaultBashTimeout.Seconds())),
		Replay:        tool.ReplayNever,
		Mode:          tool.Exclusive,
		Requirements:  bashRequirements,
	}, func(ctx context.Context, c *tool.Call, a bashArgs) tool.Outcome {
		return runBash(ctx, c, jobs, a)
	}, timeoutSchema())
}

// bashDescription is bash's model-facing documentation; every number in
// it comes from its constant. Without a plane it says commands run in the
// call, and names no job tool.
func bashDescription(plane bool) string {
	modes := fmt.Sprintf("`mode`: auto (default) waits up to timeout_ms and, if the command still runs, leaves it running as a "+
		"background job and returns its handle; foreground kills it at timeout_ms; background returns a handle at "+
		"once (use it for servers and watchers). Read a job with %s, feed it with %s, stop it with "+
		"%s. `heartbeat: true` wakes you periodically while a job runs. `lifetime: \"session\"` (background "+
		"only, not for sub-agents) removes a job's wall deadline; tests, builds and anything expected to finish "+
		"use the default.", PollToolName, SendToolName, KillToolName)
	if !plane {
		modes = "This host runs no background jobs: every command runs in the call and is killed at its timeout " +
			"(`mode` auto and foreground alike); `mode: \"background\"` is refused."
	}
	return fmt.Sprintf("Run a shell command (bash -c) in a sandbox and return its combined stdout and stderr, "+
		"exit code and the sandbox report. The command may write the workspace and the session's other "+
		"writable roots, read the system directories, and gets the session's network access; .git/hooks "+
		"and .git/config stay read-only. `timeout_ms` defaults to %d and is clamped to %d; at the "+
		"timeout the whole process tree is killed. `cwd` must be a directory inside the workspace or another "+
		"writable root. For more access (another directory, or the network), call again with `permissions` "+
		"{readable_roots, writable_roots, network: \"full\"} (roots are taken as the directories they resolve to, "+
		"links followed); the operator approves it for that call only. Output over %d KiB is saved to a "+
		"file fs_read can page through, and only its head and tail are shown. A command that writes more than "+
		"%d bytes of output (stdout and stderr together) is killed at that bound. "+
		"Scratch files: $%s (when set) is private to one command and vanishes with it; $TMPDIR persists between calls. %s",
		DefaultBashTimeout.Milliseconds(), MaxBashTimeout.Milliseconds(), blob.OverflowThreshold>>10,
		tool.MaxCommandOutputBytes, ScratchEnv, modes)
}

// bashRequirements is what bash states statically: the workspace
// writable, the system directories readable by the jail (as system
// roots, which the file tools never read), network off. At run time it
// asks for every writable root the session base grants (not the
// workspace alone: Compose keeps only the roots asked for), the base's
// own system roots, sockets and network, so it never asks past the base
// by itself.
func bashRequirements(workspace string) broker.Policy {
	return broker.Policy{
		SystemRoots:   broker.SystemReadableRoots(),
		WritableRoots: []string{workspace},
		Network:       broker.NetworkOff,
	}
}
