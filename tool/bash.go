package tool

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/broker"
)

// Bounds of the bash tool.
const (
	// DefaultBashTimeout is a command's timeout when timeout_ms is absent.
	DefaultBashTimeout = 120 * time.Second
	// MaxBashTimeout is the longest timeout_ms accepted; larger values are
	// clamped to it.
	MaxBashTimeout = 600 * time.Second
	// bashStderrTail is how much of stderr bash keeps to recognise a
	// permission error.
	bashStderrTail = 4 << 10
	// MaxCommandOutputBytes bounds what one command may write to stdout
	// and stderr together (128 MiB). At the bound the broker stops the
	// command's whole tree; the output kept up to it is shown as head and
	// tail (the whole of it spooled to a blob where the host has a store)
	// and the result says the output bound ended the command. A host
	// lowers it per call with Call.MaxOutputBytes, and for every broker
	// client with broker.Options.MaxOutputBytes.
	MaxCommandOutputBytes = 128 << 20
)

// The failure codes bash adds to the shared ones.
const (
	// CodeNonzeroExit: the command ran and exited non-zero or was killed
	// by a signal.
	CodeNonzeroExit Code = "nonzero_exit"
	// CodeTimeout: the command outlived its timeout and was killed.
	CodeTimeout Code = "timeout"
	// CodeExecFailed: the command could not be started in its jail.
	CodeExecFailed Code = "exec_failed"
	// CodeOutputLimited: the output bound (MaxCommandOutputBytes) ended
	// the command.
	CodeOutputLimited Code = "output_limited"
)

// ScratchEnv names the variable holding a command's private scratch
// directory (the jail's own /tmp, gone when the command ends). TMPDIR
// holds the session scratch, which persists between calls.
const ScratchEnv = "LOOM_SCRATCH_DIR"

// bashShell is the shell bash runs commands with; bashFallbackShell when
// bash is not installed.
const (
	bashShell         = "bash"
	bashFallbackShell = "/bin/sh"
)

type bashPermissions struct {
	ReadableRoots []string `json:"readable_roots,omitempty" jsonschema:"extra directories the command needs to read (absolute, or relative to the workspace)"`
	WritableRoots []string `json:"writable_roots,omitempty" jsonschema:"extra directories the command needs to write (absolute, or relative to the workspace)"`
	Network       string   `json:"network,omitempty" jsonschema:"\"full\" to give the command network access"`
}

type bashArgs struct {
	Command     string           `json:"command" jsonschema:"the shell command to run (bash -c)"`
	TimeoutMs   int              `json:"timeout_ms,omitempty" jsonschema:"foreground: kill the command after this many milliseconds; auto: how long to wait before it continues as a background job (default 120000, at most 600000)"`
	Cwd         string           `json:"cwd,omitempty" jsonschema:"working directory inside the workspace (default: the current shell directory)"`
	Permissions *bashPermissions `json:"permissions,omitempty" jsonschema:"more access than the session gives, approved by the operator for this one call"`
	Mode        string           `json:"mode,omitempty" jsonschema:"auto (default): wait up to timeout_ms, then leave the command running as a background job; foreground: kill it at timeout_ms; background: start it as a job and answer at once"`
	Heartbeat   bool             `json:"heartbeat,omitempty" jsonschema:"for a command that becomes a job: wake me with a periodic heartbeat while it runs (default: silent until it ends)"`
	Lifetime    string           `json:"lifetime,omitempty" jsonschema:"background only: default (killed at a finite wall) or session (runs until killed or the session ends; not for sub-agents; tests, builds and anything expected to finish use the default)"`
}

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

// BashDetails is the Details of a bash outcome.
type BashDetails struct {
	// ExitCode is the command's exit status (-1 when a signal ended it).
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	// Cancelled: the call's context ended, or the step was aborted.
	Cancelled  bool   `json:"cancelled,omitempty"`
	Failed     string `json:"failed,omitempty"`
	DurationMs int64  `json:"duration_ms"`
	TimeoutMs  int64  `json:"timeout_ms"`
	Cwd        string `json:"cwd"`
	// Bytes is the total output (stdout and stderr) the command wrote,
	// up to its output bound.
	Bytes int64 `json:"bytes"`
	// OutputBound is the bound the command's output ran under (see
	// MaxCommandOutputBytes); OutputLimited is set when the output
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
	Job JobID `json:"job,omitempty"`
	// Cursor continues reading the job's output after what the call
	// showed.
	Cursor string `json:"cursor,omitempty"`
	// Spill names a watched job's whole output when it outgrew the job
	// plane's window.
	Spill *JobSpill `json:"spill,omitempty"`
	// ProtectedCreated lists protected paths the command created, which
	// the broker moved aside.
	ProtectedCreated []broker.Quarantine `json:"protected_created,omitempty"`
}

// BashTool returns bash: run one shell command in the broker's jail, in
// the foreground, and return its combined output, exit status and the
// jail's enforcement line.
func BashTool() Tool {
	return Typed(Tool{
		Name: "bash",
		Description: "Run a shell command (bash -c) in a sandbox and return its combined stdout and stderr, " +
			"exit code and the sandbox report. The command may write the workspace and the session's other " +
			"writable roots, read the system directories, and gets the session's network access; .git/hooks " +
			"and .git/config stay read-only. `timeout_ms` defaults to 120000 and is clamped to 600000; at the " +
			"timeout the whole process tree is killed. `cwd` must be a directory inside the workspace or another " +
			"writable root. For more access (another directory, or the network), call again with `permissions` " +
			"{readable_roots, writable_roots, network: \"full\"} (roots are taken as the directories they resolve to, " +
			"links followed); the operator approves it for that call only. Output over 64 KiB is saved to a " +
			"file fs_read can page through, and only its head and tail are shown. A command that writes more than " +
			strconv.Itoa(MaxCommandOutputBytes) + " bytes of output (stdout and stderr together) is killed at that bound. " +
			"Scratch files: $" + ScratchEnv +
			" (when set) is private to one command and vanishes with it; $TMPDIR persists between calls. " +
			"`mode`: auto (default) waits up to timeout_ms and, if the command still runs, leaves it running as a " +
			"background job and returns its handle; foreground kills it at timeout_ms; background returns a handle at " +
			"once (use it for servers and watchers). Read a job with job_poll, feed it with job_send, stop it with " +
			"job_kill. `heartbeat: true` wakes you periodically while a job runs. `lifetime: \"session\"` (background " +
			"only, not for sub-agents) removes a job's wall deadline; tests, builds and anything expected to finish " +
			"use the default.",
		PromptSnippet: "bash: run a shell command in the sandbox (workspace writable, 120 s default timeout)",
		Replay:        ReplayNever,
		Mode:          Exclusive,
		Requirements:  bashRequirements,
	}, runBash)
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

// bashPolicyFor builds the call's requirements from the base and the
// model's permissions. Every root the model names is canonical before
// Compose sees it (see canonicalRoot), so a link cannot make a root look
// covered by the workspace.
func bashPolicyFor(c *Call, perm *bashPermissions) (broker.Policy, error) {
	req := broker.Policy{
		SystemRoots:   slices.Concat(broker.SystemReadableRoots(), c.Base.SystemRoots),
		WritableRoots: append([]string{c.Workspace}, c.Base.WritableRoots...),
		Network:       c.Base.Network,
		EnvAllow:      slices.Clone(c.Base.EnvAllow),
		Sockets:       slices.Clone(c.Base.Sockets),
	}
	if s := c.Scratch(); !within(c.Workspace, s) {
		req.WritableRoots = append(req.WritableRoots, s)
	}
	if perm == nil {
		return req, nil
	}
	for i, r := range perm.ReadableRoots {
		p, err := c.canonicalRoot(r)
		if err != nil {
			return req, fmt.Errorf("permissions.readable_roots[%d]: %w", i, err)
		}
		req.ReadableRoots = append(req.ReadableRoots, p)
	}
	for i, w := range perm.WritableRoots {
		p, err := c.canonicalRoot(w)
		if err != nil {
			return req, fmt.Errorf("permissions.writable_roots[%d]: %w", i, err)
		}
		req.WritableRoots = append(req.WritableRoots, p)
	}
	switch perm.Network {
	case "":
	case string(broker.NetworkFull):
		req.Network = broker.NetworkFull
	default:
		return req, fmt.Errorf("permissions.network must be \"full\" or absent, not %q", perm.Network)
	}
	return req, nil
}

// canonicalRoot turns a root the model requested into the directory it
// really is: relative roots join the workspace, then every symlink is
// resolved against the filesystem (components that do not exist yet are
// kept as written). A root that resolves outside the workspace is
// requested as what it resolves to (a link "rootfs -> /" asks for "/");
// one that resolves inside is expressed under the workspace path as the
// host wrote it, so base roots written the same way still cover it.
func (c *Call) canonicalRoot(p string) (string, error) {
	if p == "" || strings.ContainsRune(p, 0) {
		return "", errors.New("a root must be non-empty and free of NUL bytes")
	}
	if len(p) > MaxPathBytes {
		return "", fmt.Errorf("a root is at most %d bytes; this one is %d", MaxPathBytes, len(p))
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.Workspace, p)
	}
	resolved, err := resolveReal(p)
	if err != nil {
		return "", fmt.Errorf("%s cannot be resolved: %w", p, err)
	}
	if ws, err := resolveReal(c.Workspace); err == nil && within(ws, resolved) {
		rel, err := filepath.Rel(ws, resolved)
		if err == nil {
			return filepath.Join(c.Workspace, rel), nil
		}
	}
	return resolved, nil
}

func bashFail(code Code, text string, d BashDetails) Outcome {
	return Fail(code, text).WithDetails(d)
}

// bashRun is what runBash's argument check settles before anything runs.
type bashRun struct {
	mode     string
	lifetime JobLifetime
	timeout  time.Duration
	cwd      string
	notes    []string
}

func runBash(ctx context.Context, c *Call, a bashArgs) Outcome {
	det := BashDetails{}
	run, fail := checkBashArgs(c, a, &det)
	if fail != nil {
		return *fail
	}
	pol, fail := bashClear(ctx, c, a, run, &det)
	if fail != nil {
		return *fail
	}
	env := bashEnv(c)
	argv := []string{shellPath(), "-c", a.Command}
	if run.mode != BashForeground {
		spec := JobSpec{Command: a.Command, Argv: argv, Dir: run.cwd, Env: env, Policy: pol, Lifetime: run.lifetime}
		if a.Heartbeat {
			spec.Wake = WakeWhenIdle
		}
		if run.mode == BashBackground {
			return startBackground(ctx, c, spec, run.notes, det)
		}
		o, ran, note := runAuto(ctx, c, spec, run.timeout, run.notes, det)
		if ran {
			return o
		}
		if note != "" {
			run.notes = append(run.notes, note)
		}
		det.Mode = BashForeground
	}
	return runForeground(ctx, c, run, broker.CallSpec{
		Key:            c.stepKey(),
		Argv:           argv,
		Dir:            run.cwd,
		Env:            env,
		Policy:         pol,
		Timeout:        run.timeout,
		MaxOutputBytes: c.maxOutputBytes(),
	}, det)
}

// checkBashArgs checks bash's arguments (lifetime first, then mode,
// command, timeout and cwd) and settles how the command will run.
func checkBashArgs(c *Call, a bashArgs, det *BashDetails) (bashRun, *Outcome) {
	fail := func(code Code, text string) (bashRun, *Outcome) {
		o := bashFail(code, text, *det)
		return bashRun{}, &o
	}
	// A sub-agent's session lifetime is refused ahead of every other
	// check: it must raise no approval and start nothing.
	run := bashRun{lifetime: JobLifetime(a.Lifetime), mode: a.Mode}
	if err := CheckLifetime(c.Strand, run.lifetime); err != nil {
		var le *LifetimeError
		errors.As(err, &le)
		return fail(LifetimeRefusedCode, le.Reason)
	}
	switch run.mode {
	case "":
		run.mode = BashAuto
	case BashAuto, BashForeground, BashBackground:
	default:
		return fail(CodeInvalidArguments, fmt.Sprintf("mode must be %q, %q or %q, not %q", BashAuto, BashForeground, BashBackground, a.Mode))
	}
	if run.lifetime == LifetimeSession && run.mode != BashBackground {
		return fail(CodeInvalidArguments, "lifetime \"session\" applies to mode \"background\" only")
	}
	det.Mode = run.mode
	if strings.TrimSpace(a.Command) == "" {
		return fail(CodeInvalidArguments, "command must not be empty")
	}
	run.timeout = DefaultBashTimeout
	switch {
	case a.TimeoutMs < 0:
		return fail(CodeInvalidArguments, fmt.Sprintf("timeout_ms must not be negative (got %d)", a.TimeoutMs))
	case a.TimeoutMs > 0:
		// Capped before converting, so a huge value cannot wrap negative
		// (which the broker would read as no timeout at all).
		run.timeout = time.Duration(min(int64(a.TimeoutMs), MaxBashTimeout.Milliseconds()+1)) * time.Millisecond
	}
	if run.timeout > MaxBashTimeout {
		run.notes = append(run.notes, fmt.Sprintf("timeout_ms %d clamped to %d", a.TimeoutMs, MaxBashTimeout.Milliseconds()))
		run.timeout = MaxBashTimeout
	}
	det.TimeoutMs = run.timeout.Milliseconds()
	// The shell directory working_directory chose passed the same
	// predicate when it was chosen; it is checked again, since a command
	// may have replaced it since.
	cwd := c.Dir()
	if a.Cwd != "" {
		cwd = a.Cwd
	}
	dir, err := c.ResolveShellDir(cwd)
	if err != nil {
		var pe *PathError
		if errors.As(err, &pe) {
			return fail(pe.Code, "cwd: "+err.Error())
		}
		return fail(CodeInvalidPath, "cwd: "+err.Error())
	}
	run.cwd = dir
	det.Cwd = dir
	if c.Broker == nil {
		return fail(CodeNoBroker, "this host runs no commands: it has no broker")
	}
	return run, nil
}

// bashClear composes the command's policy from the base, the
// requirements the arguments imply and the call's grants, raising a
// shortfall to the host's escalation plane once.
func bashClear(ctx context.Context, c *Call, a bashArgs, run bashRun, det *BashDetails) (broker.Policy, *Outcome) {
	req, err := bashPolicyFor(c, a.Permissions)
	if err != nil {
		o := bashFail(CodeInvalidArguments, err.Error(), *det)
		return broker.Policy{}, &o
	}
	compose := func(grants []broker.Grant) (broker.Policy, *broker.Denial) {
		pol, d := broker.Compose(c.Base, req, grants)
		if d == nil && run.lifetime == LifetimeSession && pol.WallMs > 0 {
			d = sessionWallDenial(pol.WallMs)
		}
		return pol, d
	}
	pol, d := compose(c.Grants)
	if d != nil && d.Code == broker.DenialRequirementsNotCovered {
		esc := c.Raise(ctx, RaisedRefusal{Tool: "bash", Denial: d, Deadline: c.Clock().Add(run.timeout)})
		if esc.Resume {
			pol, d = compose(append(slices.Clone(c.Grants), esc.Grants...))
		}
	}
	if d != nil {
		det.Wanted = d.Wanted
		text := d.Explain()
		if d.Code == broker.DenialRequirementsNotCovered {
			text += " The operator did not approve it for this call; do without it, or ask the user."
		}
		o := bashFail(Code(d.Code), text, *det)
		return broker.Policy{}, &o
	}
	// The tool's own variables carry no host secret: they always pass.
	pol.EnvAllow = append(pol.EnvAllow, "TMPDIR", ScratchEnv)
	return pol, nil
}

// bashEnv is the environment offered to the command: the host's, plus
// TMPDIR (the session scratch, created here) and ScratchEnv.
func bashEnv(c *Call) map[string]string {
	env := make(map[string]string, len(c.Env)+2)
	for k, v := range c.Env {
		env[k] = v
	}
	// The harness creates the scratch directory unjailed, so it goes
	// through the write discipline: resolved, then made through pinned
	// no-follow parents, so a link a command left on the way cannot
	// make the harness create it elsewhere.
	scratch := c.Scratch()
	if dir, err := c.ResolveWrite(scratch); err == nil {
		if _, err := mkdirAll(dir); err == nil {
			env["TMPDIR"] = scratch
		}
	}
	if c.Broker.Available().Applied(broker.LayerNamespaces) {
		env[ScratchEnv] = "/tmp" // the jail's private tmpfs
	}
	return env
}

// runForeground clears spec, collects its output and renders how it
// ended.
func runForeground(ctx context.Context, c *Call, run bashRun, spec broker.CallSpec, det BashDetails) Outcome {
	ex, d := c.Broker.Clear(ctx, spec)
	if d != nil {
		return bashFail(Code(d.Code), d.Explain(), det)
	}
	enf := ex.Enforcement
	det.Sandbox = &enf

	out := newBashOutput(c)
	for o := range ex.Output() {
		out.add(c, o)
	}
	s := ex.Wait()
	det.Bytes = out.total
	det.OutputBound = spec.MaxOutputBytes

	body, overflow, err := out.finish()
	if err != nil {
		det.ExitCode, det.Signal, det.TimedOut, det.Cancelled, det.Failed = s.ExitCode, s.Signal, s.TimedOut, s.Cancelled, s.Failed
		det.DurationMs = s.Duration.Milliseconds()
		det.ProtectedCreated = s.ProtectedCreated
		return bashFail(CodeSpillFailed, fmt.Sprintf("the command's output (%d bytes) could not be stored: %v", out.total, err), det)
	}
	det.Overflow = overflow
	return renderSettled(run.notes, body, s, run.timeout, out.stderrTail, enf, det)
}

// renderSettled renders a command that ended, run in the foreground or
// watched to its end as a job: notes, output, how it ended, protected
// paths it created, a permission hint when stderr suggests one, and the
// sandbox line.
func renderSettled(notes []string, body string, s broker.Settled, timeout time.Duration, stderrTail []byte, enf broker.Enforcement, det BashDetails) Outcome {
	det.ExitCode, det.Signal, det.TimedOut, det.Cancelled, det.Failed = s.ExitCode, s.Signal, s.TimedOut, s.Cancelled, s.Failed
	det.DurationMs = s.Duration.Milliseconds()
	det.ProtectedCreated = s.ProtectedCreated
	var b strings.Builder
	for _, n := range notes {
		b.WriteString("note: " + n + "\n")
	}
	if body == "" {
		b.WriteString("(no output)\n")
	} else {
		b.WriteString(body)
		if !strings.HasSuffix(body, "\n") {
			b.WriteByte('\n')
		}
	}
	var code Code
	switch {
	case s.Failed != "":
		code = CodeExecFailed
		fmt.Fprintf(&b, "[the command could not start: %s]\n", s.Failed)
	case s.OutputLimited:
		code = CodeOutputLimited
		det.OutputLimited = true
		bound := "its output bound"
		if det.OutputBound > 0 {
			bound = fmt.Sprintf("the %d-byte output bound", det.OutputBound)
		}
		fmt.Fprintf(&b, "[the output bound ended the command: it wrote past %s (stdout and stderr together), so it and everything it started were killed; what it wrote up to the bound is kept, its head and tail shown above]\n", bound)
	case s.TimedOut:
		code = CodeTimeout
		fmt.Fprintf(&b, "[timed out after %d ms; the command and everything it started were killed]\n", timeout.Milliseconds())
	case s.Cancelled:
		code = CodeCancelled
		b.WriteString("[cancelled; the command and everything it started were killed]\n")
	case s.Signal != "":
		code = CodeNonzeroExit
		fmt.Fprintf(&b, "[killed by signal: %s]\n", s.Signal)
	case s.ExitCode != 0:
		code = CodeNonzeroExit
		fmt.Fprintf(&b, "[exit code %d]\n", s.ExitCode)
	default:
		b.WriteString("[exit code 0]\n")
	}
	for _, q := range s.ProtectedCreated {
		if q.MovedTo != "" {
			fmt.Fprintf(&b, "note: %s is protected; the command created it, so it was moved aside to %s\n", q.Path, q.MovedTo)
		} else {
			fmt.Fprintf(&b, "warning: %s is protected; the command created it and it could not be moved aside: %s\n", q.Path, q.Err)
		}
	}
	if code != "" && code != CodeCancelled && permissionError(stderrTail) {
		b.WriteString(permissionHint(stderrTail))
	}
	b.WriteString(enf.String())
	return Outcome{Text: b.String(), IsError: code != "", Code: code, Details: det}
}

// shellPath returns bash when installed, else /bin/sh.
func shellPath() string {
	if p, err := exec.LookPath(bashShell); err == nil {
		return p
	}
	return bashFallbackShell
}

// bashOutput collects a command's combined output in bounded memory:
// into a blob spool when the host has a store, else into the first
// OverflowThreshold bytes plus a rolling tail.
type bashOutput struct {
	spool      *blob.Spool
	head       []byte // without a store: the first OverflowThreshold bytes
	tail       *Tail  // without a store: the last ExcerptBytes
	total      int64
	tails      map[broker.Stream]*Tail
	stderrTail []byte
}

func newBashOutput(c *Call) *bashOutput {
	o := &bashOutput{tails: map[broker.Stream]*Tail{broker.Stdout: NewTail(TailBytes), broker.Stderr: NewTail(TailBytes)}}
	if c.Blobs != nil {
		o.spool = c.Blobs.NewSpool()
	} else {
		o.tail = NewTail(blob.ExcerptBytes)
	}
	return o
}

func (o *bashOutput) add(c *Call, out broker.Output) {
	o.total += int64(len(out.Bytes))
	switch {
	case o.spool != nil:
		o.spool.Write(out.Bytes) // an error is sticky and reported by finish
	default:
		n := min(len(out.Bytes), blob.OverflowThreshold-len(o.head))
		o.head = append(o.head, out.Bytes[:n]...)
		o.tail.Push(out.Bytes)
	}
	if out.Stream == broker.Stderr {
		o.stderrTail = append(o.stderrTail, out.Bytes...)
		if len(o.stderrTail) > bashStderrTail {
			o.stderrTail = o.stderrTail[len(o.stderrTail)-bashStderrTail:]
		}
	}
	t := o.tails[out.Stream]
	t.Push(out.Bytes)
	w, _ := t.Since(t.Front())
	c.Observe(OutputTail{Stream: out.Stream.String(), Tail: string(w.Bytes), TotalBytes: t.Received()})
}

// finish returns the text to show and, when the output spilled, its
// overflow record.
func (o *bashOutput) finish() (string, *blob.Overflow, error) {
	if o.spool != nil {
		inline, spilled, err := o.spool.Finish()
		if err != nil {
			return "", nil, err
		}
		if spilled != nil {
			return spilled.Text("output"), spilled, nil
		}
		return inline, nil, nil
	}
	if o.total <= blob.OverflowThreshold {
		return string(o.head), nil, nil
	}
	o.tail.End()
	w, _ := o.tail.Since(o.tail.Front())
	head, _ := blob.Excerpts(o.head, blob.ExcerptBytes)
	omitted := o.total - int64(len(head)) - int64(len(w.Bytes))
	return fmt.Sprintf("%s\n[... %d bytes of output omitted: it is %d bytes in all, over the %d-byte inline limit, and this host keeps no overflow store ...]\n%s",
		head, omitted, o.total, blob.OverflowThreshold, w.Bytes), nil, nil
}

// permissionPattern matches the messages a refused file or network
// access produces.
var permissionPattern = regexp.MustCompile(`(?i)permission denied|operation not permitted|read-only file system|EACCES|EPERM|EROFS`)

// gitLockPattern finds an absolute git lock path quoted in an error.
var gitLockPattern = regexp.MustCompile(`'(/[^'\n]*?/\.git)(/[^'\n]*)?\.lock'`)

func permissionError(stderr []byte) bool { return permissionPattern.Match(stderr) }

// permissionHint tells the model how to ask for more access in a fresh
// call. stderr never grants anything: a path it names is only suggested.
func permissionHint(stderr []byte) string {
	hint := "hint: the sandbox may have refused an access. If the command needs another directory or the network, " +
		"call bash again with permissions {readable_roots, writable_roots, network: \"full\"}; the operator decides."
	if m := gitLockPattern.FindSubmatch(stderr); m != nil {
		hint += fmt.Sprintf(" The git metadata directory %s may need to be in writable_roots.", m[1])
	}
	return hint + "\n"
}
