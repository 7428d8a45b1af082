package job

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// errNoExecution: the call's jail returned neither an Execution nor an
// error; bash fails closed on it (jail_failed).
var errNoExecution = errors.New("the jail returned no execution and no error")

// bashRun is what bash's argument check settles before anything runs.
type bashRun struct {
	mode     string
	lifetime Lifetime
	wake     IdleWake
	timeout  time.Duration
	cwd      string
	notes    []string
	// policy is the composed policy the command runs under; asks says
	// whether the call can ask an operator for more.
	policy sandbox.Policy
	asks   bool
}

// runBash is one bash call, in four steps: the arguments are checked,
// the policy is composed (a shortfall raised to the host's escalation
// plane once), the command runs in the mode asked (as a job of jobs, or
// in the foreground), and how it ended is rendered.
func runBash(ctx context.Context, c *tool.Call, jobs Jobs, a bashArgs) tool.Outcome {
	det := BashDetails{}
	run, fail := checkBashArgs(c, a, &det)
	if fail != nil {
		return *fail
	}
	pol, fail := clearBash(ctx, c, a.Permissions, a.Command, run, &det)
	if fail != nil {
		return *fail
	}
	run.policy, run.asks = pol, c.RaiseRefusal != nil
	cmd, fail := bashCommand(c, a.Command, &run, pol, &det)
	if fail != nil {
		return *fail
	}
	switch run.mode {
	case BashBackground:
		return startBackground(ctx, c, jobs, cmd, run.notes, det)
	case BashAuto:
		o, ran, note := runAuto(ctx, c, jobs, cmd, run, det)
		if ran {
			return o
		}
		if note != "" {
			run.notes = append(run.notes, note)
		}
		det.Mode = BashForeground
	}
	return runForeground(ctx, c, cmd, run, det)
}

func bashFail(code tool.Code, text string, d BashDetails) tool.Outcome {
	return tool.Fail(code, text).WithDetails(d)
}

// checkBashArgs checks bash's arguments (lifetime first, then mode,
// command, timeout and cwd) and settles how the command will run.
func checkBashArgs(c *tool.Call, a bashArgs, det *BashDetails) (bashRun, *tool.Outcome) {
	fail := func(code tool.Code, text string) (bashRun, *tool.Outcome) {
		o := bashFail(code, text, *det)
		return bashRun{}, &o
	}
	// A sub-agent's session lifetime is refused ahead of every other
	// check: it must raise no approval and start nothing.
	run := bashRun{lifetime: a.Lifetime, mode: string(a.Mode)}
	if err := CheckLifetime(c.Strand, run.lifetime); err != nil {
		var le *LifetimeError
		errors.As(err, &le)
		return fail(le.Code, le.Reason)
	}
	switch run.mode {
	case "":
		run.mode = BashAuto
	case BashAuto, BashForeground, BashBackground:
	default:
		return fail(tool.CodeInvalidArguments, fmt.Sprintf("mode must be %q, %q or %q, not %q", BashAuto, BashForeground, BashBackground, a.Mode))
	}
	if run.lifetime == LifetimeSession && run.mode != BashBackground {
		return fail(tool.CodeInvalidArguments, "lifetime \"session\" applies to mode \"background\" only")
	}
	det.Mode = run.mode
	if a.Heartbeat {
		run.wake = WakeWhenIdle
	}
	if strings.TrimSpace(a.Command) == "" {
		return fail(tool.CodeInvalidArguments, "command must not be empty")
	}
	if len(a.Command) > maxBashCommandBytes {
		return fail(tool.CodeInvalidArguments, fmt.Sprintf("command is %d bytes, more than the %d accepted; "+
			"write it to a script with fs_write and run that (bash script.sh)", len(a.Command), maxBashCommandBytes))
	}
	if i := strings.IndexByte(a.Command, 0); i >= 0 {
		return fail(tool.CodeInvalidArguments, fmt.Sprintf("command holds a NUL byte at byte %d, which no command line can carry; "+
			"write the bytes to a file with fs_write (or produce them with printf '\\0') and use the file", i))
	}
	run.timeout = defaultBashTimeout
	switch {
	case a.TimeoutMs < 0:
		return fail(tool.CodeInvalidArguments, fmt.Sprintf("timeout_ms must not be negative (got %d)", a.TimeoutMs))
	case a.TimeoutMs > 0:
		// Capped before converting, so a huge value cannot wrap negative
		// (which the broker would read as no timeout at all).
		run.timeout = time.Duration(min(int64(a.TimeoutMs), maxBashTimeout.Milliseconds()+1)) * time.Millisecond
	}
	if run.timeout > maxBashTimeout {
		run.notes = append(run.notes, tool.ClampNote("timeout_ms", int64(a.TimeoutMs), maxBashTimeout.Milliseconds()))
		run.timeout = maxBashTimeout
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
		var pe *tool.PathError
		if errors.As(err, &pe) {
			return fail(pe.Code, "cwd: "+err.Error())
		}
		return fail(tool.CodeInvalidPath, "cwd: "+err.Error())
	}
	run.cwd = dir
	det.Cwd = dir
	if c.Broker == nil {
		return fail(tool.CodeNoBroker, "this host runs no commands: it has no broker")
	}
	return run, nil
}

// clearBash composes the command's policy from the base, the
// requirements the arguments imply and the call's grants, raising a
// shortfall to the host's escalation plane once, naming command and the
// directory it runs in as what the grants would act on.
func clearBash(ctx context.Context, c *tool.Call, perm *Permissions, command string, run bashRun, det *BashDetails) (sandbox.Policy, *tool.Outcome) {
	req, err := bashPolicyFor(c, perm)
	if err != nil {
		o := bashFail(tool.CodeInvalidArguments, err.Error(), *det)
		return sandbox.Policy{}, &o
	}
	compose := func(grants []sandbox.Grant) (sandbox.Policy, *sandbox.Denial) {
		pol, err := sandbox.Compose(c.Base, req, grants)
		d := sandbox.DenialOf(err)
		if d == nil && run.lifetime == LifetimeSession && pol.WallMs > 0 {
			d = SessionWallDenial(pol.WallMs)
		}
		return pol, d
	}
	pol, d := compose(c.Grants)
	if d != nil && d.Code == sandbox.DenialRequirementsNotCovered {
		esc := c.Raise(ctx, tool.RaisedRefusal{Tool: "bash", Denial: d, Deadline: c.Clock().Add(run.timeout),
			Subject: &tool.Subject{Kind: tool.SubjectCommand, Text: command, Dir: run.cwd}})
		if esc.Resume {
			pol, d = compose(append(slices.Clone(c.Grants), esc.Grants...))
		}
	}
	if d != nil {
		det.Wanted = d.Wanted
		text := d.Explain()
		if d.Code == sandbox.DenialRequirementsNotCovered {
			text += " The operator did not approve it for this call; do without it, or ask the user."
		}
		o := bashFail(tool.Code(d.Code), text, *det)
		return sandbox.Policy{}, &o
	}
	// The tool's own variables carry no host secret: they always pass.
	pol.EnvAllow = append(pol.EnvAllow, "TMPDIR", scratchEnv)
	return pol, nil
}

// bashPolicyFor builds the call's requirements from the base and the
// model's permissions. Every root the model names is canonical before
// Compose sees it (tool.Call.CanonicalRoot), so a link cannot make a
// root look covered by the workspace.
func bashPolicyFor(c *tool.Call, perm *Permissions) (sandbox.Policy, error) {
	if perm != nil {
		if n := max(len(perm.ReadableRoots), len(perm.WritableRoots)); n > maxPermissionRoots {
			return sandbox.Policy{}, fmt.Errorf("permissions list %d roots in one list, at most %d each: name a directory that holds them instead", n, maxPermissionRoots)
		}
	}
	req := sandbox.Policy{
		SystemRoots:   slices.Concat(sandbox.SystemReadableRoots(), c.Base.SystemRoots),
		WritableRoots: append([]string{c.Workspace}, c.Base.WritableRoots...),
		Network:       c.Base.Network,
		EnvAllow:      slices.Clone(c.Base.EnvAllow),
		Sockets:       slices.Clone(c.Base.Sockets),
	}
	if s := c.Scratch(); !sandbox.Covers(c.Workspace, s) {
		req.WritableRoots = append(req.WritableRoots, s)
	}
	if perm == nil {
		return req, nil
	}
	for i, r := range perm.ReadableRoots {
		p, err := c.CanonicalRoot(r)
		if err != nil {
			return req, fmt.Errorf("permissions.readable_roots[%d]: %w", i, err)
		}
		req.ReadableRoots = append(req.ReadableRoots, p)
	}
	for i, w := range perm.WritableRoots {
		p, err := c.CanonicalRoot(w)
		if err != nil {
			return req, fmt.Errorf("permissions.writable_roots[%d]: %w", i, err)
		}
		req.WritableRoots = append(req.WritableRoots, p)
	}
	switch perm.Network {
	case "":
	case NetworkGrant(sandbox.NetworkFull):
		req.Network = sandbox.NetworkFull
	default:
		return req, fmt.Errorf("permissions.network must be \"full\" or absent, not %q", perm.Network)
	}
	return req, nil
}

// SessionWallDenial is the refusal a session-lifetime job meets under a
// policy with a wall limit of wallMs: its Wanted is the one grant
// (sandbox.GrantWall) an operator may approve to lift it.
func SessionWallDenial(wallMs int) *sandbox.Denial {
	return &sandbox.Denial{
		Code:   sandbox.DenialRequirementsNotCovered,
		Reason: fmt.Sprintf("a session-lifetime job runs without a wall deadline, and the session policy stops commands after %d ms", wallMs),
		Wanted: []sandbox.Grant{{Kind: sandbox.GrantWall}},
	}
}

// bashCommand is the command one call runs, in whichever mode: the shell
// the sandbox shows (jailShell; a fallback is noted in run and every
// choice recorded in det) and the model's command, in the checked
// directory, with the call's environment, under the composed policy.
// With no shell in the sandbox it is refused with CodeExecFailed.
func bashCommand(c *tool.Call, command string, run *bashRun, pol sandbox.Policy, det *BashDetails) (Spec, *tool.Outcome) {
	env := bashEnv(c)
	shell, fallback, found := jailShell(env, pol)
	if !found {
		det.Failed = fmt.Sprintf("no shell in the sandbox: no %s on the command's path (%s) under the system or readable roots, and no %s", bashShell, jailPathShown(env, pol), fallbackShell)
		o := bashFail(CodeExecFailed, "the command could not start: "+det.Failed, *det)
		return Spec{}, &o
	}
	det.Shell = shell
	if fallback {
		run.notes = append(run.notes, fmt.Sprintf("the sandbox has no %s on the command's path (%s), so it ran with %s -c (%s), a POSIX shell without bash's extensions",
			bashShell, jailPathShown(env, pol), fallbackShell, shell))
	}
	return Spec{
		Command:  command,
		Argv:     []string{shell, "-c", command},
		Dir:      run.cwd,
		Env:      env,
		Policy:   pol,
		Lifetime: run.lifetime,
		Wake:     run.wake,
	}, nil
}

// bashEnv is the environment offered to the command: the host's, plus
// TMPDIR (the session scratch, created here) and scratchEnv.
func bashEnv(c *tool.Call) map[string]string {
	env := make(map[string]string, len(c.Env)+2)
	for k, v := range c.Env {
		env[k] = v
	}
	if scratch, err := c.MakeScratch(); err == nil {
		env["TMPDIR"] = scratch
	}
	if c.Broker.Available().Applied(sandbox.LayerNamespaces) {
		env[scratchEnv] = sandbox.ScratchDir
	}
	return env
}

// runForeground clears cmd in the call's own step, collects its output
// and renders how it ended.
func runForeground(ctx context.Context, c *tool.Call, cmd Spec, run bashRun, det BashDetails) tool.Outcome {
	spec := sandbox.CallSpec{
		Key:            sandbox.StepKey{OpID: c.OpID, StepID: c.StepID},
		Argv:           cmd.Argv,
		Dir:            cmd.Dir,
		Env:            cmd.Env,
		Policy:         cmd.Policy,
		Timeout:        run.timeout,
		MaxOutputBytes: c.OutputBound(),
	}
	ex, err := c.Broker.Clear(ctx, spec)
	if err == nil && ex == nil {
		err = errNoExecution
	}
	if d := sandbox.DenialOf(err); d != nil {
		return bashFail(tool.Code(d.Code), d.Explain(), det)
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
		settle(&det, s)
		return bashFail(tool.CodeSpillFailed, fmt.Sprintf("the command's output (%d bytes) could not be stored: %v", out.total, err), det)
	}
	det.Overflow = overflow
	return renderSettled(run, body, s, hostEnd(ctx), out.stderrTail, enf, det)
}
