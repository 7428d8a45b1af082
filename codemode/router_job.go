package codemode

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// jobCall serves the job capabilities. job.start is the bash tool's
// background mode, dispatched through the registry (its gate, policy,
// shell and job plane, with no refusal raised); the others go to the
// Jobs seam as the job_* tools do, so a program meets exactly their
// refusal codes.
func (h *seamHost) jobCall(ctx context.Context, a *capArgs) (any, error) {
	cap := a.cap
	if h.jobs == nil && cap != "job.start" {
		return nil, &CapError{Code: job.CodeNoJobPlane, Message: "this host serves no job plane, so " + cap + " has no jobs to reach"}
	}
	o := job.OwnerOf(h.call)
	switch cap {
	case "job.start":
		return h.jobStart(ctx, a)
	case "job.poll":
		id, cursor := job.ID(a.str("handle", true)), a.str("cursor", false)
		wait := time.Duration(a.integer("wait_ms", 0, 0, maxJobWaitMs)) * time.Millisecond
		if err := a.done(); err != nil {
			return nil, err
		}
		var cur job.Cursors
		if cursor != "" {
			c, err := job.ParseCursor(id, cursor)
			if err != nil {
				return nil, err
			}
			cur = c
		}
		p, err := h.jobs.Poll(ctx, o, id, cur, min(wait, h.jobs.MaxWait()))
		if err != nil {
			return nil, err
		}
		res := rowResult(p.Row)
		res["stdout"], res["stderr"], res["cursor"] = []byte(p.Stdout.Text), []byte(p.Stderr.Text), p.Next.Token(id)
		return res, nil
	case "job.list":
		if err := a.done(); err != nil {
			return nil, err
		}
		l, err := h.jobs.List(ctx, o)
		if err != nil {
			return nil, err
		}
		rows := make([]any, len(l.Jobs))
		for i, r := range l.Jobs {
			rows[i] = map[string]any{"handle": string(r.ID), "command": r.Command, "state": string(r.State)}
		}
		return map[string]any{"jobs": rows}, nil
	case "job.send":
		id, input, closeIn := job.ID(a.str("handle", true)), a.bytes("input", false), a.boolean("close")
		if err := a.done(); err != nil {
			return nil, err
		}
		end := job.KeepStdinOpen
		if closeIn {
			end = job.CloseStdin
		}
		s, err := h.jobs.Send(ctx, o, id, input, end)
		if err != nil {
			return nil, err
		}
		return map[string]any{"bytes": s.Bytes}, nil
	default: // job.kill
		id := job.ID(a.str("handle", true))
		if err := a.done(); err != nil {
			return nil, err
		}
		r, err := h.jobs.Kill(ctx, o, id)
		if err != nil {
			return nil, err
		}
		return rowResult(r), nil
	}
}

func rowResult(r job.Row) map[string]any {
	res := map[string]any{"state": string(r.State)}
	if r.Exit != nil {
		res["exit"] = r.Exit.ExitCode
	}
	return res
}

// jobStart starts a job through bash's background mode with the
// permissions the code_mode call declared. A job for the session (no wall
// deadline) is refused to a sub-agent (job.CheckLifetime) and to an
// execution whose call did not declare permissions.wall_s 0; where the
// session policy has a wall, the composition before the start holds the
// approved wall grant, so bash composes it, and raises nothing.
func (h *seamHost) jobStart(ctx context.Context, a *capArgs) (any, error) {
	command, dir, session := a.str("command", true), a.str("dir", false), a.boolean("session")
	if err := a.done(); err != nil {
		return nil, err
	}
	bash := map[string]any{"command": command, "cwd": dir, "mode": job.BashBackground}
	if p := h.permit.roots(); p != nil {
		bash["permissions"] = p
	}
	if session {
		if err := sessionLifetime(h.call.Strand, ""); err != nil {
			return nil, err
		}
		if !h.permit.forSession() {
			return nil, &CapError{Code: tool.Code(sandbox.DenialRequirementsNotCovered), Message: "a job for the session runs with no wall deadline, which this program was not granted: the code_mode call must declare permissions.wall_s 0 (an operator approves it where the session has a wall); a program cannot ask for it while it runs"}
		}
		bash["lifetime"] = job.LifetimeSession
	}
	args, _ := json.Marshal(bash)
	c := *h.call
	c.RaiseRefusal = nil // a program's refusals are answered in band, never raised
	out := h.reg.Dispatch(ctx, &c, "bash", args)
	if out.IsError {
		return nil, &CapError{Code: out.Code, Message: out.Text}
	}
	d, _ := out.Details.(job.BashDetails)
	if d.Job == "" {
		return nil, &CapError{Code: codeProcFailed, Message: "bash started no job: " + out.Text}
	}
	return map[string]any{"handle": string(d.Job)}, nil
}
