package codemode

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// Permissions is code_mode's permissions argument: bash's own
// (job.Permissions: readable_roots, writable_roots, network "full"),
// decoded and composed exactly as bash composes them, and WallS. They are
// composed once, after the build and before the program starts; a
// shortfall is raised to the host's escalation plane at most once for the
// whole execution. What they grant acts only on the program's capability
// calls (proc.run's policy, the roots fs.* reads and writes, job.start);
// the build and the program's own jail are never widened.
type Permissions struct {
	job.Permissions
	// WallS, when present, must be 0: the program may start jobs for the
	// session (job.StartForSession), with no wall deadline. Where the
	// session policy has a wall, lifting it is the grant sandbox.GrantWall
	// an operator approves; a sub-agent may not ask for it.
	WallS *int `json:"wall_s,omitempty" jsonschema:"only 0: job.StartForSession, no wall deadline"`
}

// WideningState says which way an execution's grants came out.
type WideningState string

// The states of a Widening: one where grants acted, and the ways none did.
const (
	// GrantsComposed: the program started with Widening.Grants composed
	// into what its capability calls may do.
	GrantsComposed WideningState = "composed"
	// GrantsSpent: the execution's one approval was asked for and spent
	// without a composition that covers the permissions (declined,
	// unanswered, or granting too little); the program did not start.
	GrantsSpent WideningState = "spent"
	// GrantsUnreached: grants were carried (the call's, or approved for
	// it) but the program never started, so none acted.
	GrantsUnreached WideningState = "unreached"
	// GrantsNone: no grant was carried and none asked for; the program's
	// capability calls had the session policy alone.
	GrantsNone WideningState = "none"
)

// Widening is which grants an execution composed, or which way it
// composed none. It is a peer of the enforcement reports (Details.Grants
// beside Details.Build and Details.Run), never inside them: those say
// what the kernel applied; this says what an approval widened, and only
// for the program's capability calls.
type Widening struct {
	State WideningState `json:"state"`
	// Grants are the grants composed (GrantsComposed), carried and never
	// reached (GrantsUnreached), or carried when the composition still
	// fell short after the approval (GrantsSpent).
	Grants []sandbox.Grant `json:"grants,omitempty"`
	// Asked says the shortfall was raised to the host's escalation
	// plane (at most once per execution).
	Asked bool `json:"asked,omitempty"`
}

// String is the widening's line in the code_mode result.
func (w Widening) String() string {
	list := func() string {
		parts := make([]string, len(w.Grants))
		for i, g := range w.Grants {
			parts[i] = g.String()
		}
		return strings.Join(parts, ", ")
	}
	switch w.State {
	case GrantsComposed:
		return "grants: " + list() + " (composed for the program's capability calls only; its build and jail unchanged)"
	case GrantsSpent:
		if len(w.Grants) == 0 {
			return "grants: none (the approval was asked and not given; the program did not start)"
		}
		return "grants: none composed (with " + list() + " the permissions are still not covered; the program did not start)"
	case GrantsUnreached:
		return "grants: " + list() + " carried and never reached (the program did not start)"
	}
	return "grants: none (the session policy alone)"
}

// permit is what the composition before the start settled for one
// execution: the permissions declared (nil: none) and the grants the
// program's capability calls carry.
type permit struct {
	perm   *Permissions
	grants []sandbox.Grant
	asked  bool
	// refused: the composition fell short after an approval was asked.
	refused bool
}

// roots is the bash permissions the program's commands compose with.
func (p *permit) roots() *job.Permissions {
	if p == nil || p.perm == nil {
		return nil
	}
	return &p.perm.Permissions
}

// forSession says the call declared wall_s: 0, so job.StartForSession
// may start a job with no wall deadline.
func (p *permit) forSession() bool { return p != nil && p.perm != nil && p.perm.WallS != nil }

// widening is how the grants came out, the program having started or not.
func (p *permit) widening(started bool) Widening {
	w := Widening{State: GrantsNone, Asked: p.asked}
	switch {
	case p.refused:
		w.State = GrantsSpent
		w.Grants = p.grants
	case len(p.grants) > 0 && started:
		w.State, w.Grants = GrantsComposed, p.grants
	case len(p.grants) > 0:
		w.State, w.Grants = GrantsUnreached, p.grants
	}
	return w
}

// checkPermissions refuses, before anything is vetted or asked, the
// permissions no approval could make acceptable: a wall_s other than 0,
// and a session lifetime asked by a sub-agent (job.CheckLifetime).
func checkPermissions(strand string, p *Permissions) error {
	if p == nil || p.WallS == nil {
		return nil
	}
	if *p.WallS != 0 {
		return &CapError{Code: tool.CodeInvalidArguments, Message: fmt.Sprintf("permissions.wall_s takes only 0 (jobs for the session, with no wall deadline), not %d; omit it for jobs with the default wall", *p.WallS)}
	}
	return sessionLifetime(strand, "permissions.wall_s: ")
}

// sessionLifetime refuses, as a *CapError whose message starts with
// prefix, a session lifetime strand may not ask for (job.CheckLifetime).
func sessionLifetime(strand, prefix string) error {
	err := job.CheckLifetime(strand, job.LifetimeSession)
	var le *job.LifetimeError
	if errors.As(err, &le) {
		return &CapError{Code: le.Code, Message: prefix + le.Reason}
	}
	return err
}

// composePermissions composes p on c before the program starts: the
// policy bash would compose for the same permissions (job.CommandPolicy)
// under the call's grants, and, for wall_s, the session wall bash's
// session lifetime meets (job.SessionWallDenial), both in one denial so
// one approval covers them. A shortfall is raised through c.Raise once,
// naming runs (programSubject: the program as vetted and built) as what
// the grants act on; on a resume it is composed once more with the
// grants approved, and a refusal that still stands is a *CapError naming
// what an operator may approve. Nothing has run when it returns.
func composePermissions(ctx context.Context, c *tool.Call, p *Permissions, within time.Duration, runs *tool.Subject) (*permit, error) {
	pm := &permit{perm: p, grants: slices.Clone(c.Grants)}
	if p == nil {
		return pm, nil
	}
	d, err := shortfall(c, p, pm.grants)
	if err != nil {
		return pm, err
	}
	if grantable(d) {
		pm.asked = c.RaiseRefusal != nil
		esc := c.Raise(ctx, tool.RaisedRefusal{Tool: ToolName, Denial: d, Deadline: c.Clock().Add(within), Subject: runs})
		if esc.Resume {
			pm.grants = append(pm.grants, esc.Grants...)
			if d, err = shortfall(c, p, pm.grants); err != nil {
				return pm, err
			}
		}
	}
	if d == nil {
		return pm, nil
	}
	pm.refused = pm.asked
	msg := "the program was not started: " + d.Explain()
	switch {
	case !grantable(d):
		msg += " No approval can cover this; change the permissions."
	case pm.asked:
		msg += " The operator did not approve it for this call, so nothing ran; do without it, or ask the user."
	default:
		msg += " This host has no one to approve it, so nothing ran; do without it, or ask the user to widen the session."
	}
	return pm, &CapError{Code: tool.Code(d.Code), Message: msg}
}

// programSubject is what an approval of a program's permissions would
// act on: p's source, the snapshot vetted and built (never the file read
// again), and path, the file it was read from ("" when inline).
func programSubject(p *Program, path string) *tool.Subject {
	return &tool.Subject{Kind: tool.SubjectProgram, Text: string(p.Source), Path: path}
}

// grantable says an approval could cover d: a shortfall wanting grants.
func grantable(d *sandbox.Denial) bool {
	return d != nil && d.Code == sandbox.DenialRequirementsNotCovered && len(d.Wanted) > 0
}

// shortfall is the denial p meets on c under grants, or nil when they
// cover it; the error is a root of p that does not resolve.
func shortfall(c *tool.Call, p *Permissions, grants []sandbox.Grant) (*sandbox.Denial, error) {
	cc := *c
	cc.Grants = grants
	_, err := job.CommandPolicy(&cc, &p.Permissions)
	var d *sandbox.Denial
	if err != nil && !errors.As(err, &d) {
		return nil, &CapError{Code: tool.CodeInvalidArguments, Message: err.Error()}
	}
	lifted := slices.ContainsFunc(grants, func(g sandbox.Grant) bool { return g.Kind == sandbox.GrantWall })
	if p.WallS == nil || c.Base.WallMs <= 0 || lifted {
		return d, nil
	}
	wall := job.SessionWallDenial(c.Base.WallMs)
	switch {
	case d == nil:
		return wall, nil
	case d.Code == sandbox.DenialRequirementsNotCovered:
		both := *d
		both.Wanted = append(slices.Clone(d.Wanted), wall.Wanted...)
		both.Reason += "; " + wall.Reason
		return &both, nil
	}
	return d, nil
}

// grantedPackages are the packages whose calls a grant acts on.
var grantedPackages = []string{"cap/fs", "cap/search", "cap/proc", "cap/job"}

// permissionsApply refuses permissions declared for a program on a seam
// none of whose packages a grant acts on (the orchestration seam: its
// calls reach no file, network or process), so nobody is asked to
// approve what no call would use.
func permissionsApply(seam Seam, p *Permissions) error {
	if p == nil || slices.ContainsFunc(seam.Packages, func(pkg string) bool { return slices.Contains(grantedPackages, pkg) }) {
		return nil
	}
	return &CapError{Code: tool.CodeInvalidArguments, Message: fmt.Sprintf("permissions act on fs, search, proc and job calls, and seam %s offers none of them; drop permissions", quoteArg(seam.Name))}
}
