// Package wiretest holds what the codec's own tests and codemode's
// codec property test (the prelude's codec against the host's) share.
// Only tests import it.
package wiretest

import (
	"bytes"
	"math"
)

// SameValue is deep equality of decoded values with floats compared by
// their bits (so NaN equals the same NaN).
func SameValue(a, b any) bool {
	switch a := a.(type) {
	case float64:
		b, ok := b.(float64)
		return ok && math.Float64bits(a) == math.Float64bits(b)
	case []byte:
		b, ok := b.([]byte)
		return ok && bytes.Equal(a, b)
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !SameValue(a[i], b[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, v := range a {
			w, ok := b[k]
			if !ok || !SameValue(v, w) {
				return false
			}
		}
		return true
	}
	return a == b
}

// BoundaryLens are lengths at which an encoding changes form.
var BoundaryLens = []int{0, 1, 15, 16, 31, 32, 255, 256, 65535, 65536}
