package sandbox

import "strings"

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

// Add appends a layer and keeps Degraded in step with it.
func (e *Enforcement) Add(l Layer) {
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
