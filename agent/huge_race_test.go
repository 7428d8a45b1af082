//go:build race

package agent

// hugeValueBytes is the size of the value the bound tests put in every
// string a model sends. Under the race detector, where decoding a 1 MiB
// argument costs ten times as much, it is 64 KiB: still sixteen times the
// bound an answer must keep, so an echo of it fails the same tests.
const hugeValueBytes = 64 << 10
