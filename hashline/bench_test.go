package hashline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
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
		text, _, _ := RenderRegionsOf(applied.Content, applied.Regions, DefaultFreshContext, maxBytes)
		if text == "" {
			b.Fatal("no fresh anchors rendered")
		}
	}
}

// BenchmarkEdit199Hunks648KB is NewPlan + Apply + RenderRegionsOf with
// the fresh-anchor cap, as the edit tool (fs_edit) runs them.
func BenchmarkEdit199Hunks648KB(b *testing.B) { benchEdit(b, MaxFreshAnchorBytes) }

// BenchmarkEdit199Hunks648KBUncapped renders every region, the worst case.
func BenchmarkEdit199Hunks648KBUncapped(b *testing.B) { benchEdit(b, 0) }

// bench199HunksJSON is bench199Hunks as a model sends them: a JSON array.
func bench199HunksJSON(b *testing.B, content []byte) []byte {
	hunks := bench199Hunks(content)
	for i := range hunks {
		if hunks[i].Lines == nil {
			hunks[i].Lines = []string{} // a deletion: "lines": [], never null
		}
	}
	raw, err := json.Marshal(hunks)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// BenchmarkDecodeHunks199 decodes the 199 hunks' JSON.
func BenchmarkDecodeHunks199(b *testing.B) {
	raw := bench199HunksJSON(b, benchSource())
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if hunks, err := DecodeHunks(raw); err != nil || len(hunks) != 199 {
			b.Fatalf("%d hunks: %v", len(hunks), err)
		}
	}
}

// applyProgram is the process BenchmarkEditProcess199Hunks648KB times: it
// reads a content and a JSON array of hunks, plans and applies them, and
// writes the post-image, as an edit tool would minus its policy.
const applyProgram = `package main

import (
	"fmt"
	"os"

	"github.com/agentloom/loom/hashline"
)

func main() {
	if err := run(os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(in, hunksFile, out string) error {
	content, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(hunksFile)
	if err != nil {
		return err
	}
	hunks, err := hashline.DecodeHunks(raw)
	if err != nil {
		return err
	}
	plan, err := hashline.NewPlan(content, hunks)
	if err != nil {
		return err
	}
	applied, err := plan.Apply(content)
	if err != nil {
		return err
	}
	return os.WriteFile(out, applied.Content, 0o644)
}
`

// buildApplyProgram builds applyProgram into dir through a go build
// overlay (nothing is written into the module) and returns its path.
func buildApplyProgram(b *testing.B, dir string) string {
	b.Helper()
	_, here, _, _ := runtime.Caller(0)
	pkgDir := filepath.Dir(here)
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte(applyProgram), 0o644); err != nil {
		b.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(pkgDir, "zz_apply", "main.go"): src}})
	ovl := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ovl, overlay, 0o644); err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(dir, "apply")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-buildvcs=false", "-overlay", ovl, "-o", out, "./zz_apply")
	cmd.Dir = pkgDir
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building the apply program: %v\n%s", err, msg)
	}
	return out
}

// BenchmarkEditProcess199Hunks648KB compares, as whole processes, a
// program applying the 199 hunks of BenchmarkEdit199Hunks648KB (read the
// file and the hunks' JSON, DecodeHunks, NewPlan, Apply, write the
// result) with GNU patch applying the same edit as a unified diff (diff
// -u of the two contents) to the same file. The two alternate, each
// iteration running them in the other order, and both outputs are
// checked against the expected post-image once. It reports each median
// (ms) and the ratio of the medians (x-patch). Run it with
//
//	go test -run '^$' -bench EditProcess -benchtime 200x ./hashline/
func BenchmarkEditProcess199Hunks648KB(b *testing.B) {
	for _, tool := range []string{"patch", "diff"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Skipf("%s is not on PATH: nothing to compare with", tool)
		}
	}
	dir := b.TempDir()
	prog := buildApplyProgram(b, dir)
	content := benchSource()
	hunks := bench199Hunks(content)
	plan, err := NewPlan(content, hunks)
	if err != nil {
		b.Fatal(err)
	}
	applied, err := plan.Apply(content)
	if err != nil {
		b.Fatal(err)
	}
	raw := bench199HunksJSON(b, content)
	path := func(name string) string { return filepath.Join(dir, name) }
	for name, data := range map[string][]byte{"in.go": content, "want.go": applied.Content, "hunks.json": raw} {
		if err := os.WriteFile(path(name), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	diff, err := exec.Command("diff", "-u", path("in.go"), path("want.go")).Output()
	if len(diff) == 0 {
		b.Fatalf("diff -u: %v", err)
	}
	if err := os.WriteFile(path("edit.diff"), diff, 0o644); err != nil {
		b.Fatal(err)
	}
	ours := func() { run(b, prog, path("in.go"), path("hunks.json"), path("ours.go")) }
	gnu := func() { run(b, "patch", "--quiet", "-o", path("patched.go"), "-i", path("edit.diff"), path("in.go")) }
	ours()
	gnu()
	for _, out := range []string{"ours.go", "patched.go"} {
		if got, _ := os.ReadFile(path(out)); !bytes.Equal(got, applied.Content) {
			b.Fatalf("%s is not the expected post-image", out)
		}
	}
	var oursT, patchT []time.Duration
	timed := func(into *[]time.Duration, f func()) {
		t := time.Now()
		f()
		*into = append(*into, time.Since(t))
	}
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if i++; i%2 == 0 {
			timed(&oursT, ours)
			timed(&patchT, gnu)
		} else {
			timed(&patchT, gnu)
			timed(&oursT, ours)
		}
	}
	b.StopTimer()
	mo, mp := medianOf(oursT), medianOf(patchT)
	b.ReportMetric(float64(mo)/1e6, "hashline-ms")
	b.ReportMetric(float64(mp)/1e6, "patch-ms")
	b.ReportMetric(float64(mo)/float64(mp), "x-patch")
	b.ReportMetric(0, "ns/op") // the two together mean nothing
}

// run runs a command, failing b when it fails.
func run(b *testing.B, name string, args ...string) {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		b.Fatalf("%s: %v\n%s", name, err, out)
	}
}

// medianOf returns the median of samples.
func medianOf(samples []time.Duration) time.Duration {
	s := slices.Clone(samples)
	slices.Sort(s)
	return s[len(s)/2]
}
