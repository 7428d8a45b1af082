package tool

import "testing"

// TestOutputBoundClamps: a host lowers a call's output bound, never
// raises it, and zero means MaxCommandOutputBytes.
func TestOutputBoundClamps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		set, want int64
	}{
		{0, MaxCommandOutputBytes},
		{-1, MaxCommandOutputBytes},
		{1, 1},
		{MaxCommandOutputBytes - 1, MaxCommandOutputBytes - 1},
		{MaxCommandOutputBytes, MaxCommandOutputBytes},
		{MaxCommandOutputBytes + 1, MaxCommandOutputBytes},
		{2 * MaxCommandOutputBytes, MaxCommandOutputBytes},
	} {
		if got := (&Call{MaxOutputBytes: tc.set}).OutputBound(); got != tc.want {
			t.Errorf("MaxOutputBytes %d: bound %d, want %d", tc.set, got, tc.want)
		}
	}
}
