package hashline

import (
	"runtime"
	"testing"

	"pgregory.net/rapid"
)

// TestRenderRegionsOfIsRenderRegionsOfAnnotate: rendering regions straight
// from the content gives what rendering them from the whole-file annotation
// gives, cap and stopping line included.
func TestRenderRegionsOfIsRenderRegionsOfAnnotate(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		content := genViewContent.Draw(t, "content")
		n := LineCount(content)
		regions := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) Region {
			start := rapid.IntRange(-1, n+2).Draw(t, "start")
			return Region{Start: start, End: start + rapid.IntRange(-1, 4).Draw(t, "extent")}
		}), 0, 5).Draw(t, "regions")
		context := rapid.IntRange(-1, 3).Draw(t, "context")
		maxBytes := rapid.OneOf(rapid.Just(0), rapid.IntRange(-1, 300)).Draw(t, "maxBytes")
		want, wantComplete, wantStopped := RenderRegions(Annotate(content), regions, context, maxBytes)
		got, complete, stopped := RenderRegionsOf(content, regions, context, maxBytes)
		if got != want || complete != wantComplete || stopped != wantStopped {
			t.Fatalf("RenderRegionsOf = %q, %v, %d; RenderRegions(Annotate) = %q, %v, %d", got, complete, stopped, want, wantComplete, wantStopped)
		}
	})
}

// TestRenderRegionsOfCapEdges: the cap counts separators, a block that
// exactly fills it fits, and once it is full the next block stops the text.
func TestRenderRegionsOfCapEdges(t *testing.T) {
	content := []byte("a\nb\nc\nd\n")
	lines := Annotate(content)
	one := len(RenderLines(lines[:1]))
	regions := []Region{{1, 1}, {3, 3}}
	for _, maxBytes := range []int{one - 1, one, one + 1, 2*one + len(RegionSeparator) - 1, 2*one + len(RegionSeparator), 1 << 20} {
		want, wantComplete, wantStopped := RenderRegions(lines, regions, 0, maxBytes)
		got, complete, stopped := RenderRegionsOf(content, regions, 0, maxBytes)
		if got != want || complete != wantComplete || stopped != wantStopped {
			t.Errorf("maxBytes %d: RenderRegionsOf = %q, %v, %d; RenderRegions = %q, %v, %d", maxBytes, got, complete, stopped, want, wantComplete, wantStopped)
		}
	}
}

// TestRenderRegionsOfAllocatesForWhatItRenders: the fresh anchors of a whole
// 8 MiB file of line breaks, capped as an edit caps them, allocate about the
// cap, not ~48 bytes per line of the file.
func TestRenderRegionsOfAllocatesForWhatItRenders(t *testing.T) {
	content := newlineBomb(8 << 20)
	regions := []Region{{Start: 1, End: len(content)}, {Start: len(content) / 2, End: len(content) / 2}}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	text, complete, stopped := RenderRegionsOf(content, regions, DefaultFreshContext, MaxFreshAnchorBytes)
	runtime.ReadMemStats(&after)
	if text != "" || complete || stopped != 1 {
		t.Fatalf("whole-file region over the cap: %q, %v, %d", text, complete, stopped)
	}
	text, complete, _ = RenderRegionsOf(content, regions[1:], DefaultFreshContext, MaxFreshAnchorBytes)
	if !complete || text != RenderLines(Annotate(content[:len(content)/2+2])[len(content)/2-3:]) {
		t.Fatalf("one region in the middle: %q, %v", text, complete)
	}
	// The cap, a Line per line that fits it, and room for rounding.
	const maxBytes = 4 * MaxFreshAnchorBytes
	if got := after.TotalAlloc - before.TotalAlloc; got > maxBytes {
		t.Errorf("RenderRegionsOf over a %d-byte file allocated %d bytes, want at most %d", len(content), got, maxBytes)
	}
}
