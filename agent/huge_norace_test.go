//go:build !race

package agent

// hugeValueBytes is the size of the value the bound tests put in every
// string a model sends.
const hugeValueBytes = 1 << 20
