package hashline

import (
	"fmt"
	"strings"
	"testing"
)

// numbered returns n lines "l1".."ln", each with a break.
func numbered(n int) []Line {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "l%d\n", i)
	}
	return Annotate([]byte(b.String()))
}

func TestRenderRegionsMerge(t *testing.T) {
	lines := numbered(20)
	block := func(lo, hi int) string { return RenderLines(lines[lo-1 : hi]) }
	tests := []struct {
		name    string
		regions []Region
		context int
		want    string
	}{
		{"one region no context", []Region{{5, 6}}, 0, block(5, 6)},
		{"context widens", []Region{{5, 6}}, 2, block(3, 8)},
		{"clamped at the start", []Region{{1, 1}}, 2, block(1, 3)},
		{"clamped at the end", []Region{{20, 20}}, 2, block(18, 20)},
		{"context larger than the file", []Region{{10, 10}}, 1 << 62, block(1, 20)},
		{"negative context is 0", []Region{{10, 10}}, -5, block(10, 10)},
		{"touching contexts merge", []Region{{3, 3}, {6, 6}}, 1, block(2, 7)},
		{"overlapping contexts merge", []Region{{3, 3}, {5, 5}}, 1, block(2, 6)},
		{"one line apart stay apart", []Region{{3, 3}, {7, 7}}, 1, block(2, 4) + RegionSeparator + block(6, 8)},
		{"unsorted regions render in line order", []Region{{15, 15}, {2, 2}}, 0, block(2, 2) + RegionSeparator + block(15, 15)},
		{"deletion shows its context", []Region{{10, 9}}, 2, block(8, 11)},
		{"deletion without context shows nothing", []Region{{10, 9}}, 0, ""},
		{"deletion at the end", []Region{{21, 20}}, 2, block(19, 20)},
		{"no regions", nil, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, complete, stopped := RenderRegions(lines, tt.regions, tt.context, 0)
			if got != tt.want || !complete || stopped != 0 {
				t.Errorf("got %q, %v, %d; want %q, true, 0", got, complete, stopped, tt.want)
			}
		})
	}
	if got, complete, _ := RenderRegions(nil, []Region{{1, 0}}, 2, 0); got != "" || !complete {
		t.Errorf("empty file: %q, %v", got, complete)
	}
}

func TestRenderRegionsCap(t *testing.T) {
	lines := numbered(20)
	first := RenderLines(lines[1:4])   // region {3,3} with context 1
	second := RenderLines(lines[9:12]) // region {11,11} with context 1
	whole := first + RegionSeparator + second
	regions := []Region{{3, 3}, {11, 11}}
	tests := []struct {
		name      string
		max       int
		want      string
		complete  bool
		stoppedAt int
	}{
		{"no cap", 0, whole, true, 0},
		{"exactly the whole", len(whole), whole, true, 0},
		{"one byte short of the whole", len(whole) - 1, first, false, 10},
		{"exactly the first block", len(first), first, false, 10},
		{"one byte short of the first block", len(first) - 1, "", false, 2},
		{"one byte", 1, "", false, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, complete, stopped := RenderRegions(lines, regions, 1, tt.max)
			if got != tt.want || complete != tt.complete || stopped != tt.stoppedAt {
				t.Errorf("RenderRegions(max %d) = %q, %v, %d; want %q, %v, %d",
					tt.max, got, complete, stopped, tt.want, tt.complete, tt.stoppedAt)
			}
			if tt.max > 0 && len(got) > tt.max {
				t.Errorf("rendered %d bytes over the cap %d", len(got), tt.max)
			}
		})
	}
}

func TestFreshAnchorConstants(t *testing.T) {
	if DefaultFreshContext != 2 || MaxFreshAnchorBytes != 16*1024 {
		t.Errorf("DefaultFreshContext %d, MaxFreshAnchorBytes %d", DefaultFreshContext, MaxFreshAnchorBytes)
	}
}
