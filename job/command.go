package job

import (
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/tool"
)

// CommandPolicy is the policy bash composes for a command of c asking
// perm (nil: no permissions). It is the base policy met with bash's own
// requirements and perm's, under the call's grants, plus the variables
// bash always sets. Bash's requirements are the system roots, the
// workspace and scratch writable, and the base network and environment
// allowance. A shortfall is an error holding a *sandbox.Denial whose
// Wanted is what an operator may approve; nothing is raised to the host.
// A root of perm that does not resolve is an error holding no denial. It
// is what another harness-side caller that runs a command on a call's
// authority (code mode's proc.run) composes, so the command is confined
// exactly as the same command through bash.
func CommandPolicy(c *tool.Call, perm *Permissions) (sandbox.Policy, error) {
	req, err := bashPolicyFor(c, perm)
	if err != nil {
		return sandbox.Policy{}, err
	}
	pol, err := sandbox.Compose(c.Base, req, c.Grants)
	if err != nil {
		return sandbox.Policy{}, err
	}
	pol.EnvAllow = append(pol.EnvAllow, "TMPDIR", scratchEnv)
	return pol, nil
}

// CommandEnv is the environment bash offers a command of c: the session's
// variables, TMPDIR at the strand's scratch directory and
// LOOM_SCRATCH_DIR where the jail gives a private one.
func CommandEnv(c *tool.Call) map[string]string { return bashEnv(c) }
