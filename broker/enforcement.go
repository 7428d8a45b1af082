package broker

import "strings"

// Layer names used in an Enforcement report. Each names one confinement
// mechanism the jail applies or skips as a whole.
const (
	LayerNamespaces   = "namespaces"   // user, mount, network, pid and ipc namespaces
	LayerMounts       = "mounts"       // private root, read-only protected binds, fresh /proc
	LayerPolicyRoot   = "policy_root"  // the jail's root holds the policy's roots only (pivot_root)
	LayerLoopback     = "loopback"     // lo up inside a private network namespace
	LayerCapabilities = "capabilities" // bounding, ambient, effective, permitted, inheritable all cleared
	LayerNoNewPrivs   = "no_new_privs" // PR_SET_NO_NEW_PRIVS
	LayerLandlock     = "landlock"     // filesystem, TCP and scope rules
	LayerSeccomp      = "seccomp"      // syscall filter returning EPERM
	LayerRlimits      = "rlimits"      // processes, memory, file size, open files, CPU
	LayerJail         = "jail"         // the jail as a whole (used when none exists on the platform)
)

// Layer is one confinement mechanism and what became of it. Applied is
// true only when the kernel accepted it; otherwise Reason says why it was
// skipped (an errno name or a short sentence).
type Layer struct {
	Name    string `json:"name"`
	Applied bool   `json:"applied"`
	// Detail is a short qualifier the compact line shows in parentheses,
	// e.g. "abi 6" for Landlock.
	Detail string `json:"detail,omitempty"`
	// Params are the layer's parameters for the full report (which
	// namespaces, how many protected paths); the compact line omits them.
	Params string `json:"params,omitempty"`
	// Reason says why a layer was skipped; empty when applied.
	Reason string `json:"reason,omitempty"`
}

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

// missingLayer is missingRequired rendered "<layer>: <reason>", or ""
// when every required layer was applied.
func missingLayer(required []string, namespaces bool, layers []Layer) string {
	if m := missingRequired(required, namespaces, layers); m != nil {
		return m.Layer + ": " + m.Reason
	}
	return ""
}
