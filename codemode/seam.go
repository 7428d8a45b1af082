package codemode

import "slices"

// Seam is what one kind of program may import: the audited standard
// library (StdPackages) plus the capability packages the seam offers. A
// program is vetted against exactly one seam, and the package it imports
// is the unit of authorization: a program that imports cap/search and not
// cap/fs has said, where vetting can see it, that it only reads.
type Seam struct {
	// Name identifies the seam in refusals and records ("workspace").
	Name string
	// Packages are the cap import paths the seam offers, e.g. "cap/fs".
	// Vet admits an entry only if no denial covers it, so a seam that
	// lists "os" or "cap/internal/wire" by mistake still admits neither.
	Packages []string
}

// WorkspaceSeamName is the Name of WorkspaceSeam.
const WorkspaceSeamName = "workspace"

// WorkspaceSeam is the seam of a program working on the workspace: files
// (cap/fs), read-only search (cap/search), jailed commands (cap/proc),
// scratch storage (cap/kv), artifacts (cap/report), background jobs
// (cap/job) and a launched program's input (cap/execution). Each call
// returns a fresh value.
func WorkspaceSeam() Seam {
	return Seam{
		Name:     WorkspaceSeamName,
		Packages: []string{"cap/fs", "cap/search", "cap/proc", "cap/kv", "cap/report", "cap/job", "cap/execution"},
	}
}

// Allowlist is every import path the seam lists: StdPackages plus
// s.Packages, sorted and without duplicates, in a fresh slice. Vet admits
// an import only if it is byte-identical to an entry and no denial (see
// Vet) covers it.
func (s Seam) Allowlist() []string {
	out := append(StdPackages(), s.Packages...)
	slices.Sort(out)
	return slices.Compact(out)
}
