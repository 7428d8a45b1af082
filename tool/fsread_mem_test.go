package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/hashline"
	"pgregory.net/rapid"
)

// newlineFile is a file of MaxFileBytes line breaks and nothing else: the
// most lines fs_read accepts, and what annotating the whole file made cost
// about 48 bytes of heap per line (464 MiB, 0.48 s) for one 1-line read.
func newlineFile() []byte { return bytes.Repeat([]byte{'\n'}, MaxFileBytes) }

// readWindowSlackBytes bounds what one fs_read of a 1-line window may
// allocate beyond reading the file itself (readRegular, measured alongside,
// about 2x the file: io.ReadAll's growth, more under -race). A 1-line window
// renders a few dozen bytes; the rest is the registry's argument decoding,
// path resolution and the outcome, a few KiB. Whole-file annotation adds ~48
// bytes per line, ~400 MB on this file, and fails it by four orders of
// magnitude; it would fail at any file over ~1,400 lines.
const readWindowSlackBytes = 64 << 10

// TestReadNewlineBombAllocatesForTheWindow: one fs_read {limit: 1} of an
// 8 MiB file of line breaks allocates what reading the file allocates plus
// readWindowSlackBytes, wherever the window is, and still reports every line.
func TestReadNewlineBombAllocatesForTheWindow(t *testing.T) {
	r, c := fileRegistry(t)
	data := newlineFile()
	if err := os.WriteFile(filepath.Join(c.Workspace, "nl.txt"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	resolved, err := c.ResolveRead("nl.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, offset := range []int{1, len(data) / 2, len(data)} {
		args := map[string]any{"path": "nl.txt", "offset": offset, "limit": 1}
		call(t, r, c, "fs_read", args) // warm the path resolver and the registry
		runtime.GC()
		var before, read, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := readRegular(resolved); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&read)
		out := call(t, r, c, "fs_read", args)
		runtime.ReadMemStats(&after)
		if out.IsError {
			t.Fatalf("offset %d: %s", offset, out.Text)
		}
		d := out.Details.(ReadDetails)
		if d.TotalLines != len(data) || d.FirstLine != offset || d.LastLine != offset || d.Digest != hashline.Digest(data) {
			t.Fatalf("offset %d: details %+v", offset, d)
		}
		if want := fmt.Sprintf("%d:%s|\n", offset, hashline.AnchorOf("")); !strings.Contains(out.Text, "\n"+want) {
			t.Fatalf("offset %d: no line %q in %.300q", offset, want, out.Text)
		}
		readCost, got := read.TotalAlloc-before.TotalAlloc, after.TotalAlloc-read.TotalAlloc
		t.Logf("offset %d: fs_read allocated %d bytes (%.2fx the file); reading the file alone %d", offset, got, float64(got)/float64(len(data)), readCost)
		if bound := readCost + readWindowSlackBytes; got > bound {
			t.Errorf("offset %d: one 1-line fs_read of a %d-byte file allocated %d bytes, over %d (the file read, %d, plus %d)", offset, len(data), got, bound, readCost, readWindowSlackBytes)
		}
	}
}

// longLineFile is a short line, a line of about n bytes (3-byte runes, so a
// cut at MaxWindowBytes less the display prefix lands inside one) and another
// short line.
func longLineFile(n int) (content []byte, long string) {
	long = strings.Repeat("€", n/3)
	return []byte("first\n" + long + "\nlast\n"), long
}

var cutRange = regexp.MustCompile(`bytes (\d+)-(\d+) of the file: read them with bash, e\.g\. tail -c \+(\d+) '([^']*)' \| head -c (\d+)\)`)

// TestReadCutsAnOverlongLine: a line over MaxWindowBytes is shown cut to fit,
// alone, with its whole-line anchor, a notice giving the exact byte range of
// the rest, and the offset that continues; fs_edit replaces the whole line
// through that anchor.
func TestReadCutsAnOverlongLine(t *testing.T) {
	r, c := fileRegistry(t)
	content, long := longLineFile(3 * MaxWindowBytes)
	path := filepath.Join(c.Workspace, "long.txt")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	// From line 1 the window stops before the long line, as before.
	out := call(t, r, c, "fs_read", map[string]any{"path": "long.txt"})
	if d := out.Details.(ReadDetails); out.IsError || d.LastLine != 1 || d.NextOffset != 2 || d.CutLine != 0 {
		t.Fatalf("read from line 1: %+v %.300q", out.Details, out.Text)
	}
	out = call(t, r, c, "fs_read", map[string]any{"path": "long.txt", "offset": 2})
	if out.IsError {
		t.Fatal(out.Text)
	}
	d := out.Details.(ReadDetails)
	if d.FirstLine != 2 || d.LastLine != 2 || d.CutLine != 2 || !d.HasMore || d.NextOffset != 3 || d.TotalLines != 3 {
		t.Fatalf("details %+v", d)
	}
	anchor := hashline.AnchorOf(long)
	prefix := "2:" + anchor + "|"
	i := strings.Index(out.Text, "\n"+prefix)
	if i < 0 {
		t.Fatalf("no cut line with the whole line's anchor %s in %.300q", anchor, out.Text)
	}
	shown, _, _ := strings.Cut(out.Text[i+1:], "\n")
	if len(shown)+1 > MaxWindowBytes {
		t.Errorf("the cut line renders in %d bytes, over MaxWindowBytes %d", len(shown)+1, MaxWindowBytes)
	}
	head := strings.TrimPrefix(shown, prefix)
	if !strings.HasPrefix(long, head) || len(head) < MaxWindowBytes-64 || !utf8.ValidString(head) {
		t.Fatalf("the shown part (%d bytes) is not a rune-aligned start of the line filling the window", len(head))
	}
	m := cutRange.FindStringSubmatch(out.Text)
	if m == nil {
		t.Fatalf("no byte range of the rest in the notice: %q", out.Text[i+len(shown):])
	}
	from, to, tailFrom, count := atoi(t, m[1]), atoi(t, m[2]), atoi(t, m[3]), atoi(t, m[5])
	if m[4] != "long.txt" || tailFrom != from || to-from+1 != count {
		t.Fatalf("inconsistent notice: %q", m[0])
	}
	if rest := string(content[from-1 : to]); head+rest != long {
		t.Fatalf("shown part + bytes %d-%d is not the whole line", from, to)
	}
	for _, want := range []string{fmt.Sprintf("at most %d bytes", MaxWindowBytes), "2:" + anchor + " is the whole line's", "continue with offset=3"} {
		if !strings.Contains(out.Text, want) {
			t.Errorf("the read does not say %q", want)
		}
	}
	if tl, _ := r.Lookup("fs_read"); !strings.Contains(tl.Description, fmt.Sprintf("%d KiB", MaxWindowBytes>>10)) {
		t.Errorf("the description does not state the window bound: %s", tl.Description)
	}
	ed := call(t, r, c, "fs_edit", map[string]any{"path": "long.txt", "digest": d.Digest,
		"hunks": []any{map[string]any{"op": "replace", "start": "2:" + anchor, "lines": []string{"short"}}}})
	if ed.IsError {
		t.Fatalf("fs_edit through the cut line's anchor: %s", ed.Text)
	}
	if got, _ := os.ReadFile(path); string(got) != "first\nshort\nlast\n" {
		t.Fatalf("after the edit: %.80q", got)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// annotatedWindow is fs_read's rendering as it was before windowed views:
// annotate the whole file, slice the window, stop at MaxWindowBytes (a single
// line over it shown whole). It is the oracle for files without such lines.
func annotatedWindow(shown string, data []byte, offset, limit int) Outcome {
	digest := hashline.Digest(data)
	lines := hashline.Annotate(data)
	if offset == 0 {
		offset = 1
	}
	if limit == 0 || limit > defaultReadLines {
		limit = defaultReadLines
	}
	var b strings.Builder
	fmt.Fprintf(&b, "digest: %s\n", digest)
	if len(lines) == 0 {
		fmt.Fprintf(&b, "%s: empty file (0 lines); add lines with fs_edit op \"append\" or fs_write\n", shown)
		return Outcome{Text: b.String(), Details: ReadDetails{Path: shown, Digest: digest}}
	}
	if offset > len(lines) {
		return Fail("offset_past_end", fmt.Sprintf("digest: %s\noffset %d is past the end of %s, which has %d lines; use an offset from 1 to %d", digest, offset, shown, len(lines), len(lines)))
	}
	win, _, _ := hashline.Window(lines, offset, limit)
	size := 0
	for i, l := range win {
		size += len(hashline.RenderLine(l)) + 1
		if size > MaxWindowBytes && i > 0 {
			win = win[:i]
			break
		}
	}
	last := win[len(win)-1].Number
	more := last < len(lines)
	d := ReadDetails{Path: shown, Digest: digest, TotalLines: len(lines), FirstLine: offset, LastLine: last, HasMore: more}
	if more {
		d.NextOffset = last + 1
		fmt.Fprintf(&b, "%s: lines %d-%d of %d (partial: continue with offset=%d)\n", shown, offset, last, len(lines), last+1)
	} else {
		fmt.Fprintf(&b, "%s: lines %d-%d of %d\n", shown, offset, last, len(lines))
	}
	b.WriteString(hashline.RenderLines(win))
	if more {
		fmt.Fprintf(&b, "(%d more lines; continue with offset=%d)\n", len(lines)-last, last+1)
	}
	return Outcome{Text: b.String(), Details: d}
}

// TestRenderWindowMatchesWholeFileAnnotation: for any file whose lines each
// fit the window bound, fs_read's rendering is byte for byte what annotating
// the whole file and slicing it gave, including the byte bound's stop, the
// empty file and an offset past the end.
func TestRenderWindowMatchesWholeFileAnnotation(t *testing.T) {
	genLine := rapid.OneOf(
		rapid.StringOfN(rapid.SampledFrom([]rune("ab |:\ré")), 0, 12, -1),
		// Lines of about a tenth of the bound, so windows stop on bytes.
		rapid.Custom(func(t *rapid.T) string {
			return strings.Repeat("x", rapid.IntRange(MaxWindowBytes/12, MaxWindowBytes/8).Draw(t, "long"))
		}),
	)
	rapid.Check(t, func(t *rapid.T) {
		var b bytes.Buffer
		if rapid.Bool().Draw(t, "bom") {
			b.WriteString("\ufeff")
		}
		n := rapid.IntRange(0, 30).Draw(t, "lines")
		for i := range n {
			b.WriteString(genLine.Draw(t, "line"))
			if i < n-1 || rapid.Bool().Draw(t, "final break") {
				b.WriteString(rapid.SampledFrom([]string{"\n", "\r\n"}).Draw(t, "break"))
			}
		}
		data := b.Bytes()
		offset := rapid.IntRange(0, n+2).Draw(t, "offset")
		limit := rapid.IntRange(0, n+2).Draw(t, "limit")
		got, want := renderWindow("f.txt", data, offset, limit), annotatedWindow("f.txt", data, offset, limit)
		if got.Text != want.Text || got.IsError != want.IsError || fmt.Sprint(got.Details) != fmt.Sprint(want.Details) {
			t.Fatalf("renderWindow(offset %d, limit %d):\n%.400q\n%+v\nwant\n%.400q\n%+v", offset, limit, got.Text, got.Details, want.Text, want.Details)
		}
	})
}

// benchWorkspace is a workspace for benchmarks, outside /tmp as reads need.
func benchWorkspace(b *testing.B) (*Registry, *Call) {
	b.Helper()
	root, err := os.MkdirTemp("/var/tmp", "loom-tool-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(root) })
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	store, err := blob.Open(filepath.Join(root, "blobs"))
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewRegistry(FileTools()...)
	if err != nil {
		b.Fatal(err)
	}
	return r, &Call{Workspace: ws, Blobs: store}
}

// sourceLike is about size bytes of Go-like source, lines of ~20-40 bytes.
func sourceLike(size int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "func f%d(x int) int {\n\treturn x * %d\n}\n\n", i, i%97)
	}
	return b.Bytes()[:size]
}

// BenchmarkFsReadWindow is one fs_read through the registry (path
// resolution, open, read, digest, window) of: a 50-line window in the middle
// of an 8 MiB source-like file; a 1-line window of an 8 MiB file of line
// breaks; and the whole of a 4 KiB file, the everyday read the large ones
// are compared with. For the figures, run the variants interleaved:
//
//	go test -c -o /tmp/tool.test ./tool && for i in 1 2 3 4 5 6; do
//	  /tmp/tool.test -test.run '^$' -test.bench BenchmarkFsReadWindow -test.benchmem; done
func BenchmarkFsReadWindow(b *testing.B) {
	r, c := benchWorkspace(b)
	files := []struct {
		name string
		data []byte
		args map[string]any
	}{
		{"window=50/file=8MiB-source", sourceLike(MaxFileBytes), map[string]any{"offset": 150000, "limit": 50}},
		{"window=1/file=8MiB-newlines", newlineFile(), map[string]any{"offset": MaxFileBytes / 2, "limit": 1}},
		{"whole/file=4KiB-source", sourceLike(4 << 10), map[string]any{}},
	}
	for _, f := range files {
		name := strings.ReplaceAll(f.name, "/", "-") + ".txt"
		if err := os.WriteFile(filepath.Join(c.Workspace, name), f.data, 0o644); err != nil {
			b.Fatal(err)
		}
		f.args["path"] = name
		raw, err := json.Marshal(f.args)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(f.name, func(b *testing.B) {
			b.SetBytes(int64(len(f.data)))
			b.ReportAllocs()
			for b.Loop() {
				if out := r.Dispatch(context.Background(), c, "fs_read", raw); out.IsError {
					b.Fatal(out.Text)
				}
			}
		})
	}
}
