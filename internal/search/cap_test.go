package search

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentloom/loom/internal/search/searchtest"
)

// fileEvents is the ripgrep --json events of one file whose lines 1..n
// all match, with a context line after each when withContext.
func fileEvents(path string, n int, withContext bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"type":"begin","data":{"path":{"text":%q}}}`+"\n", path)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{"type":"match","data":{"path":{"text":%q},"lines":{"text":"m%d\n"},"line_number":%d}}`+"\n", path, i, 2*i-1)
		if withContext {
			fmt.Fprintf(&b, `{"type":"context","data":{"path":{"text":%q},"lines":{"text":"c%d\n"},"line_number":%d}}`+"\n", path, i, 2*i)
		}
	}
	fmt.Fprintf(&b, `{"type":"end","data":{"path":{"text":%q},"binary_offset":null}}`+"\n", path)
	return b.String()
}

// TestCollectorKeepsTheFirstMatchesOfTheFileCrossingTheCap: when a
// file's matches carry the collection past MaxScanMatches, its first
// matches up to the cap stand (with their context) and the rest are
// counted in Left, rather than the whole file being dropped.
func TestCollectorKeepsTheFirstMatchesOfTheFileCrossingTheCap(t *testing.T) {
	t.Parallel()
	for _, first := range []int{1, 3, MaxScanMatches - 1, MaxScanMatches} {
		t.Run(fmt.Sprint(first), func(t *testing.T) {
			c := NewRipgrepCollectorFor(Options{Context: 1}, "/ws", OperandDir)
			stream := fileEvents("a.txt", first, false) + fileEvents("b.txt", MaxScanMatches, true)
			_, err := c.Write([]byte(stream))
			if !errors.Is(err, ErrScanFull) {
				t.Fatalf("Write = %v, want ErrScanFull", err)
			}
			r := c.Result()
			wantFiles := 2
			if first == MaxScanMatches {
				wantFiles = 1
			}
			if r.Matches != MaxScanMatches || !r.Stopped || r.Left != first || r.Files != wantFiles {
				t.Fatalf("matches %d stopped %v left %d files %d; want %d, true, %d, %d", r.Matches, r.Stopped, r.Left, r.Files, MaxScanMatches, first, wantFiles)
			}
			var fromB []Hit
			for _, h := range r.Hits {
				if h.Path == "/ws/b.txt" {
					fromB = append(fromB, h)
				}
			}
			kept := MaxScanMatches - first
			if kept == 0 {
				if len(fromB) != 0 {
					t.Fatalf("b.txt kept %d hits with no room left", len(fromB))
				}
				return
			}
			// b.txt's first kept matches, each with its context line.
			if len(fromB) != 2*kept || fromB[0].Text != "m1" || fromB[2*kept-2].Text != fmt.Sprintf("m%d", kept) || fromB[2*kept-1].Text != fmt.Sprintf("c%d", kept) {
				t.Fatalf("b.txt: %d hits, first %+v, last %+v; want its first %d matches with context", len(fromB), fromB[0], fromB[len(fromB)-1], kept)
			}
		})
	}
}

// TestEnginesKeepTheFirstMatchesAtTheCap: a file holding one match more
// than MaxScanMatches yields MaxScanMatches matches, the first ones, on
// both engines, and says at least one was left.
func TestEnginesKeepTheFirstMatchesAtTheCap(t *testing.T) {
	t.Parallel()
	searchtest.RequireRipgrep(t)
	var b strings.Builder
	for i := 1; i <= MaxScanMatches+1; i++ {
		fmt.Fprintf(&b, "m %d\n", i)
	}
	root := fixture(t, map[string]string{"many.txt": b.String()})
	o := Options{Pattern: "m"}
	for engine, r := range map[string]Result{"go": goRun(t, root, o), "ripgrep": rgRunAs(t, root, o, OperandDir)} {
		if r.Matches != MaxScanMatches || r.Files != 1 || !r.Stopped || r.Left < 1 {
			t.Errorf("%s: matches %d files %d stopped %v left %d; want %d, 1, true, at least 1", engine, r.Matches, r.Files, r.Stopped, r.Left, MaxScanMatches)
			continue
		}
		if last := r.Hits[len(r.Hits)-1]; last.Line != MaxScanMatches || last.Text != fmt.Sprintf("m %d", MaxScanMatches) {
			t.Errorf("%s: the last hit kept is %+v, want line %d", engine, last, MaxScanMatches)
		}
	}
}
