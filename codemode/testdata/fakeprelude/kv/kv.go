// Package kv is a fake capability package for the builder's tests.
package kv

import "cap/internal/x"

// Twice returns 2n through the internal package.
func Twice(n int) int { return x.Double(n) }
