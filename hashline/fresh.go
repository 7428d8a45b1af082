package hashline

import (
	"cmp"
	"slices"
)

// Bounds for rendering the fresh anchors of an edit.
const (
	// DefaultFreshContext is how many unchanged lines are shown on each side
	// of a changed region.
	DefaultFreshContext = 2
	// MaxFreshAnchorBytes caps the rendered fresh anchors of one edit.
	MaxFreshAnchorBytes = 16 << 10
)

// RegionSeparator is the line written between two rendered regions that do
// not touch. No rendered line can equal it, since every rendered line starts
// with the display prefix.
const RegionSeparator = "...\n"

// RenderRegions renders the lines around each region so a caller can plan its
// next edit without reading the file again. lines must be a whole-file
// annotation (lines[i].Number == i+1), such as Annotate's; it is sliced,
// never re-annotated, and rendered with RenderLines, so the text is
// byte-identical to a read of the same lines.
//
// Each region is widened by context lines on each side (clamped to the file;
// a negative context is 0), regions that then overlap or touch are merged,
// and the merged blocks are rendered in line order, separated by
// RegionSeparator. An empty region (a deletion) with context 0 shows nothing.
//
// The size is checked block by block before rendering: when the next block
// (with its separator) would take the text past maxBytes, rendering stops
// there and complete is false, with stoppedAt the number of the first line
// not rendered. Text of exactly maxBytes fits. maxBytes <= 0 means no cap.
// When everything fits, complete is true and stoppedAt is 0.
func RenderRegions(lines []Line, regions []Region, context, maxBytes int) (text string, complete bool, stoppedAt int) {
	blocks := mergeRegions(len(lines), regions, min(max(context, 0), len(lines)))
	size := 0
	fit := len(blocks)
	for k, b := range blocks {
		n := linesLen(lines[b.Start-1 : b.End])
		if k > 0 {
			n += len(RegionSeparator)
		}
		if maxBytes > 0 && size+n > maxBytes {
			fit = k
			break
		}
		size += n
	}
	out := make([]byte, 0, size)
	for k, b := range blocks[:fit] {
		if k > 0 {
			out = append(out, RegionSeparator...)
		}
		out = appendLines(out, lines[b.Start-1:b.End])
	}
	if fit < len(blocks) {
		return string(out), false, blocks[fit].Start
	}
	return string(out), true, 0
}

// mergeRegions widens regions by context, clamps them to 1..total, drops the
// empty ones, and merges those that overlap or touch, in line order.
func mergeRegions(total int, regions []Region, context int) []Region {
	widened := make([]Region, 0, len(regions))
	for _, r := range regions {
		lo := max(r.Start-context, 1)
		hi := min(r.End+context, total)
		if lo <= hi {
			widened = append(widened, Region{lo, hi})
		}
	}
	slices.SortFunc(widened, func(a, b Region) int { return cmp.Compare(a.Start, b.Start) })
	merged := widened[:0]
	for _, r := range widened {
		if k := len(merged) - 1; k >= 0 && r.Start <= merged[k].End+1 {
			merged[k].End = max(merged[k].End, r.End)
			continue
		}
		merged = append(merged, r)
	}
	return merged
}

// RenderRegionsOf is RenderRegions(Annotate(content), regions, context,
// maxBytes): the same text, completeness and stopping line. It never
// annotates content whole: it counts the lines, walks once through the
// merged blocks in order, measures each block before annotating it and
// annotates only the blocks it renders, so with maxBytes > 0 its memory is
// bounded by maxBytes plus one Line per rendered line, whatever the size or
// line count of content. Use it where no whole-file annotation is at hand:
// the anchors of a fresh write, or around the refs of a refused edit.
func RenderRegionsOf(content []byte, regions []Region, context, maxBytes int) (text string, complete bool, stoppedAt int) {
	total := countLines(content)
	blocks := mergeRegions(total, regions, min(max(context, 0), total))
	var out []byte
	if maxBytes > 0 {
		out = make([]byte, 0, min(maxBytes, 64<<10))
	}
	pos, line := bomLen(content), 1 // line number `line` starts at pos
	for k, b := range blocks {
		pos = lineStart(content, pos, b.Start-line+1)
		sep := 0
		if k > 0 {
			sep = len(RegionSeparator)
		}
		budget := -1
		if maxBytes > 0 {
			budget = max(maxBytes-len(out)-sep, 0)
		}
		m := measure(content, pos, b.Start, b.End-b.Start+1, budget)
		if m.over {
			return string(out), false, b.Start
		}
		if k > 0 {
			out = append(out, RegionSeparator...)
		}
		out = appendRange(out, content, pos, m.textEnd, b.Start, m.lines)
		pos, line = m.next, b.End+1
	}
	return string(out), true, 0
}
