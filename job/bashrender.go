package job

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// settle records in det how the command ended.
func settle(det *BashDetails, s sandbox.Settled) {
	det.ExitCode, det.Signal, det.TimedOut, det.Cancelled, det.Failed = s.ExitCode, s.Signal, s.TimedOut, s.Cancelled, s.Failed
	det.DurationMs = s.Duration.Milliseconds()
	det.ProtectedCreated = s.ProtectedCreated
	det.GitNeutralised = s.GitNeutralised
}

// hostEnd is why the call's context ended (its cause: the host's
// deadline or cancellation), or nil while it lives.
func hostEnd(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	return context.Cause(ctx)
}

// renderSettled renders a command that ended, run in the foreground or
// watched to its end as a job: notes, output, how it ended, protected
// paths it created, a permission hint when stderr suggests one, a line
// for each path it names that the jail hides or protects (hiddenHints,
// under run's policy), and the sandbox line. host is why the call's context ended (hostEnd): a
// command killed then was ended by the host (its deadline or its
// cancellation), not by timeout_ms, and is reported so, coded
// tool.CodeCancelled.
func renderSettled(run bashRun, body string, s sandbox.Settled, host error, stderrTail []byte, enf sandbox.Enforcement, det BashDetails) tool.Outcome {
	notes, timeout := run.notes, run.timeout
	byHost := host != nil && (s.TimedOut || s.Cancelled) && !s.OutputLimited && s.Failed == ""
	if byHost {
		s.TimedOut, s.Cancelled = false, true
	}
	settle(&det, s)
	var b strings.Builder
	writeNotes(&b, notes)
	if body == "" {
		b.WriteString("(no output)\n")
	} else {
		b.WriteString(body)
		if !strings.HasSuffix(body, "\n") {
			b.WriteByte('\n')
		}
	}
	code := endedCode(s)
	switch code {
	case CodeExecFailed:
		fmt.Fprintf(&b, "[the command could not start: %s]\n", s.Failed)
	case CodeOutputLimited:
		det.OutputLimited = true
		bound := "its output bound"
		if det.OutputBound > 0 {
			bound = fmt.Sprintf("the %d-byte output bound", det.OutputBound)
		}
		fmt.Fprintf(&b, "[the output bound ended the command: it wrote past %s (stdout and stderr together), so it and everything it started were killed; what it wrote up to the bound is kept, its head and tail shown above]\n", bound)
	case CodeTimeout:
		fmt.Fprintf(&b, "[timed out after %d ms; the command and everything it started were killed]\n", timeout.Milliseconds())
	case tool.CodeCancelled:
		switch {
		case byHost && errors.Is(host, context.DeadlineExceeded):
			fmt.Fprintf(&b, "[the host's deadline for this call passed after %d ms, before timeout_ms (%d ms): the command and everything it started were killed]\n",
				s.Duration.Milliseconds(), timeout.Milliseconds())
		case byHost:
			fmt.Fprintf(&b, "[the host cancelled this call after %d ms (%v): the command and everything it started were killed]\n", s.Duration.Milliseconds(), host)
		default:
			b.WriteString("[cancelled; the command and everything it started were killed]\n")
		}
	case CodeNonzeroExit:
		if s.Signal != "" {
			fmt.Fprintf(&b, "[killed by signal: %s]\n", s.Signal)
		} else {
			fmt.Fprintf(&b, "[exit code %d]\n", s.ExitCode)
		}
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
	writeGitNeutralised(&b, s.GitNeutralised)
	switch {
	case code == "" || code == tool.CodeCancelled:
	case goModuleUnreachable(stderrTail):
		b.WriteString(goModuleHint(stderrTail))
	case permissionError(stderrTail):
		b.WriteString(permissionHint(stderrTail))
	}
	if code != "" && code != tool.CodeCancelled {
		b.WriteString(hiddenHints(stderrTail, run.policy, run.cwd, enf.Applied(sandbox.LayerNamespaces), run.asks))
	}
	b.WriteString(enf.String())
	if code == "" {
		return tool.Outcome{Text: b.String(), Details: det}
	}
	return bashFail(code, b.String(), det)
}

// writeGitNeutralised says what the git guard disarmed after the
// command, one line each, so the model knows why a file it made changed.
func writeGitNeutralised(b *strings.Builder, done []sandbox.Neutralisation) {
	for _, n := range done {
		switch {
		case n.Err != "":
			fmt.Fprintf(b, "warning: git guard could not neutralise %s: %s; the workspace is fenced\n", n.Path, n.Err)
		case n.MovedTo != "":
			fmt.Fprintf(b, "note: git guard moved %s aside to %s (git could run it)\n", n.Path, n.MovedTo)
		default:
			fmt.Fprintf(b, "note: git guard removed %s from %s (git could run a program from them)\n", strings.Join(n.Removed, ", "), n.Path)
		}
	}
}

// endedCode is the failure code of how a command ended, "" for a
// success. The order matters: a command the output bound stopped also
// reads as killed, and one that timed out as cancelled.
func endedCode(s sandbox.Settled) tool.Code {
	switch {
	case s.Failed != "":
		return CodeExecFailed
	case s.OutputLimited:
		return CodeOutputLimited
	case s.TimedOut:
		return CodeTimeout
	case s.Cancelled:
		return tool.CodeCancelled
	case s.Signal != "", s.ExitCode != 0:
		return CodeNonzeroExit
	}
	return ""
}

// writeNotes writes each note on a line of its own.
func writeNotes(b *strings.Builder, notes []string) {
	for _, n := range notes {
		b.WriteString("note: " + n + "\n")
	}
}
