package codemode

import (
	"slices"
)

// Seam is what one kind of program may import: the audited standard
// library (StdPackages) plus the capability packages the seam offers. A
// program is vetted against exactly one seam, and the package it imports
// is the unit of authorization: a program that imports cap/search and not
// cap/fs has said, where vetting can see it, that it only reads.
type Seam struct {
	// Name identifies the seam in refusals and records ("workspace").
	Name string
	// Packages are the cap import paths the seam offers, e.g. "cap/fs".
	// Vetting admits an entry only if no denial covers it, so a seam that
	// lists "os" or "cap/internal/wire" by mistake still admits neither.
	Packages []string
}

// WorkspaceSeamName is the Name of WorkspaceSeam.
const WorkspaceSeamName = "workspace"

// WorkspaceSeam is the seam of a program working on the workspace. It
// offers files (cap/fs), read-only search (cap/search), jailed commands
// (cap/proc), scratch storage (cap/kv), artifacts (cap/report) and
// background jobs (cap/job). It also offers the session's durable notes
// (cap/notes, served only by an Engine with an Agency), the language
// servers' operations (cap/lsp, served only by an Engine with
// LanguageServers), a launched program's input (cap/execution) and
// scheduled messages (cap/schedule, offered only where the registry
// registers the schedule tools). Each call returns a fresh value.
func WorkspaceSeam() Seam {
	return Seam{
		Name:     WorkspaceSeamName,
		Packages: []string{"cap/fs", "cap/search", "cap/proc", "cap/kv", "cap/report", "cap/job", "cap/notes", "cap/lsp", "cap/execution", "cap/schedule"},
	}
}

// OrchestrationSeamName is the Name of OrchestrationSeam.
const OrchestrationSeamName = "orchestration"

// OrchestrationSeam is the seam of a program that directs sub-agents:
// spawning, messaging and joining them (cap/strand), the session's
// durable notes (cap/notes), artifacts (cap/report) and a launched
// program's input (cap/execution). It offers no
// package that reaches the disk, the network or a process, and an Engine
// serves it only with an Agency. Each call returns a fresh value.
func OrchestrationSeam() Seam {
	return Seam{
		Name:     OrchestrationSeamName,
		Packages: []string{"cap/strand", "cap/notes", "cap/report", "cap/execution"},
	}
}

// CombinedSeamName is the Name of CombinedSeam.
const CombinedSeamName = "workspace+orchestration"

// CombinedSeam is the seam of one program that both works on the
// workspace and directs sub-agents: WorkspaceSeam's packages and
// cap/strand. It gives up the orchestration seam's guarantee (a program
// that spawns reaches no disk or process), so an Engine offers it only
// when a host names it. Each call returns a fresh value.
func CombinedSeam() Seam {
	s := WorkspaceSeam()
	s.Name = CombinedSeamName
	s.Packages = append(s.Packages, "cap/strand")
	return s
}

// offers reports whether the seam lists the capability package of cap
// ("fs.read" is cap/fs's): the router serves a call only then, whatever
// the binary sends.
func (s Seam) offers(cap string) bool {
	return slices.Contains(s.Packages, capPackagePath(cap))
}

// capabilities is every capability the seam's packages serve, in
// capabilityNames' order.
func (s Seam) capabilities() []string {
	var out []string
	for _, c := range capabilityNames() {
		if s.offers(c) {
			out = append(out, c)
		}
	}
	return out
}

// Allowlist is every import path the seam lists: StdPackages plus
// s.Packages, sorted and without duplicates, in a fresh slice. Vetting admits
// an import only if it is byte-identical to an entry and no denial (see
// Engine.VetOn) covers it.
func (s Seam) Allowlist() []string {
	out := append(StdPackages(), s.Packages...)
	slices.Sort(out)
	return slices.Compact(out)
}
