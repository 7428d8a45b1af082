package hashline

import (
	"fmt"
	"strings"
	"testing"
)

// benchSourceBytes is the size of the synthetic source file the benchmarks
// use: the 648 KB file over which 199 hunks once cost seconds.
const benchSourceBytes = 648 * 1000

// benchSource generates a deterministic Go-like source file of about
// benchSourceBytes bytes.
func benchSource() []byte {
	var b strings.Builder
	b.WriteString("package bench\n\n")
	for i := 0; b.Len() < benchSourceBytes; i++ {
		fmt.Fprintf(&b, "// f%d computes something worth a comment.\nfunc f%d(x int) int {\n\ty := x * %d\n\tif y > 10 {\n\t\treturn y - 1\n\t}\n\treturn y\n}\n\n", i, i, i%97)
	}
	return []byte(b.String())
}

func BenchmarkAnnotateRender648KB(b *testing.B) {
	content := benchSource()
	b.SetBytes(int64(len(content)))
	b.ReportAllocs()
	for b.Loop() {
		lines := Annotate(content)
		if len(RenderLines(lines)) <= len(content) {
			b.Fatal("rendering is shorter than the content")
		}
	}
}

// bench199Hunks spreads 199 hunks evenly over content, cycling through
// replace, insert_after, deletion, multi-line replace and insert_before.
func bench199Hunks(content []byte) []Hunk {
	lines := Annotate(content)
	ref := func(n int) *Ref { return &Ref{Line: n, Anchor: lines[n-1].Anchor} }
	const count = 199
	step := len(lines) / (count + 1)
	hunks := make([]Hunk, 0, count)
	for k := 1; k <= count; k++ {
		n := k * step
		switch k % 5 {
		case 0:
			hunks = append(hunks, Hunk{Op: OpReplace, Start: ref(n), Lines: []string{"\t// replaced", "\ty := x + 1"}})
		case 1:
			hunks = append(hunks, Hunk{Op: OpInsertAfter, Start: ref(n), Lines: []string{"\t// inserted"}})
		case 2:
			hunks = append(hunks, Hunk{Op: OpReplace, Start: ref(n), End: ref(n + 1)})
		case 3:
			hunks = append(hunks, Hunk{Op: OpReplace, Start: ref(n), End: ref(n + 2), Lines: []string{"\treturn 0"}})
		default:
			hunks = append(hunks, Hunk{Op: OpInsertBefore, Start: ref(n), Lines: []string{"", "// note"}})
		}
	}
	return hunks
}

func benchEdit(b *testing.B, maxBytes int) {
	content := benchSource()
	hunks := bench199Hunks(content)
	b.SetBytes(int64(len(content)))
	b.ReportAllocs()
	for b.Loop() {
		plan, err := NewPlan(content, hunks)
		if err != nil {
			b.Fatal(err)
		}
		applied, err := plan.Apply(content)
		if err != nil {
			b.Fatal(err)
		}
		text, _, _ := RenderRegions(applied.Lines, applied.Regions, DefaultFreshContext, maxBytes)
		if text == "" {
			b.Fatal("no fresh anchors rendered")
		}
	}
}

// BenchmarkEdit199Hunks648KB is NewPlan + Apply + RenderRegions with the
// fresh-anchor cap an edit tool uses.
func BenchmarkEdit199Hunks648KB(b *testing.B) { benchEdit(b, MaxFreshAnchorBytes) }

// BenchmarkEdit199Hunks648KBUncapped renders every region, the worst case.
func BenchmarkEdit199Hunks648KBUncapped(b *testing.B) { benchEdit(b, 0) }
