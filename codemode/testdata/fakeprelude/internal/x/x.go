// Package x is the fake prelude's internal plumbing: importable by the
// prelude's packages, never by a program.
package x

// Double returns 2n.
func Double(n int) int { return 2 * n }
