package broker

import (
	"strings"

	"github.com/agentloom/loom/broker/internal/jail"
)

// Layer names used in an Enforcement report. Each names one confinement
// mechanism the jail applies or skips as a whole.
const (
	LayerNamespaces   = jail.LayerNamespaces   // user, mount, network, pid and ipc namespaces
	LayerMounts       = jail.LayerMounts       // private root, read-only protected binds, fresh /proc
	LayerPolicyRoot   = jail.LayerPolicyRoot   // the jail's root holds the policy's roots only (pivot_root)
	LayerLoopback     = jail.LayerLoopback     // lo up inside a private network namespace
	LayerCapabilities = jail.LayerCapabilities // bounding, ambient, effective, permitted, inheritable all cleared
	LayerNoNewPrivs   = jail.LayerNoNewPrivs   // PR_SET_NO_NEW_PRIVS
	LayerLandlock     = jail.LayerLandlock     // filesystem, TCP and scope rules
	LayerSeccomp      = jail.LayerSeccomp      // syscall filter returning EPERM
	LayerRlimits      = jail.LayerRlimits      // processes, memory, file size, open files, CPU
	LayerJail         = "jail"                 // the jail as a whole (used when none exists on the platform)
)

// Layer is one confinement mechanism and what became of it: Name (one
// of the Layer* names), Applied, which is true only when the kernel
// accepted it, Detail (a short qualifier the compact line shows in
// parentheses, e.g. "abi 6" for Landlock), Params (the layer's
// parameters for the full report) and Reason, which says why a skipped
// layer was skipped (an errno name or a short sentence; empty when
// applied). It is the helper's own report of the layer.
type Layer = jail.Layer

// Enforcement is the report of how one command was confined. Degraded is
// true whenever any layer was skipped; a report never claims a layer the
// kernel did not apply.
type Enforcement struct {
	Layers   []Layer `json:"layers"`
	Degraded bool    `json:"degraded"`
}

// Layer returns the layer named name and whether the report holds it.
func (e Enforcement) Layer(name string) (Layer, bool) {
	for _, l := range e.Layers {
		if l.Name == name {
			return l, true
		}
	}
	return Layer{}, false
}

// Applied reports whether the layer named name was applied.
func (e Enforcement) Applied(name string) bool {
	l, ok := e.Layer(name)
	return ok && l.Applied
}

// add appends a layer and keeps Degraded in step with it.
func (e *Enforcement) add(l Layer) {
	e.Layers = append(e.Layers, l)
	if !l.Applied {
		e.Degraded = true
	}
}

// String renders the compact, model-facing line: applied layers by name
// (with their Detail in parentheses), then, when degraded, the skipped
// layers with their reasons. Params stay in the full report. For example
//
//	sandbox: namespaces, mounts, landlock(abi 6), seccomp, rlimits applied
//	sandbox: landlock(abi 6), seccomp applied; DEGRADED, skipped: namespaces: EPERM
func (e Enforcement) String() string {
	var applied, skipped []string
	for _, l := range e.Layers {
		if l.Applied {
			name := l.Name
			if l.Detail != "" {
				name += "(" + l.Detail + ")"
			}
			applied = append(applied, name)
			continue
		}
		s := l.Name
		if l.Reason != "" {
			s += ": " + l.Reason
		}
		skipped = append(skipped, s)
	}
	var b strings.Builder
	b.WriteString("sandbox: ")
	if len(applied) == 0 {
		b.WriteString("nothing applied")
	} else {
		b.WriteString(strings.Join(applied, ", "))
		b.WriteString(" applied")
	}
	if e.Degraded || len(skipped) > 0 {
		b.WriteString("; DEGRADED")
		if len(skipped) > 0 {
			b.WriteString(", skipped: ")
			b.WriteString(strings.Join(skipped, "; "))
		}
	}
	return b.String()
}
