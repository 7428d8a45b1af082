package hashline

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// applyOK plans and applies hunks over content and checks the invariants
// every success keeps.
func applyOK(t *testing.T, content string, hunks []Hunk) Applied {
	t.Helper()
	plan, err := NewPlan([]byte(content), hunks)
	if err != nil {
		t.Fatalf("NewPlan: %v", err)
	}
	if plan.Digest() != Digest([]byte(content)) {
		t.Fatalf("plan digest %s, content digest %s", plan.Digest(), Digest([]byte(content)))
	}
	got, err := plan.Apply([]byte(content))
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if got.Digest != Digest(got.Content) {
		t.Errorf("Applied.Digest %s, Digest(Content) %s", got.Digest, Digest(got.Content))
	}
	if n := len(Annotate(got.Content)); got.LineCount != n {
		t.Errorf("Applied.LineCount %d, Annotate(Content) has %d lines", got.LineCount, n)
	}
	return got
}

func TestApply(t *testing.T) {
	const abc = "a\nb\nc\n"
	tests := []struct {
		name    string
		content string
		hunks   func(c string) []Hunk
		want    string
		regions []Region
	}{
		{"replace first line", abc, func(c string) []Hunk {
			return []Hunk{{Op: OpReplace, Start: refTo(c, 1), Lines: []string{"A"}}}
		}, "A\nb\nc\n", []Region{{1, 1}}},
		{"replace last line", abc, func(c string) []Hunk {
			return []Hunk{{Op: OpReplace, Start: refTo(c, 3), Lines: []string{"C", "D"}}}
		}, "a\nb\nC\nD\n", []Region{{3, 4}}},
		{"replace range with fewer", abc, func(c string) []Hunk {
			return []Hunk{{Op: OpReplace, Start: refTo(c, 1), End: refTo(c, 2), Lines: []string{"X"}}}
		}, "X\nc\n", []Region{{1, 1}}},
		{"delete middle", abc, func(c string) []Hunk {
			return []Hunk{{Op: OpReplace, Start: refTo(c, 2)}}
		}, "a\nc\n", []Region{{2, 1}}},
		{"delete everything", abc, func(c string) []Hunk {
			return []Hunk{{Op: OpReplace, Start: refTo(c, 1), End: refTo(c, 3), Lines: []string{}}}
		}, "", []Region{{1, 0}}},
		{"insert before line 1", abc, func(c string) []Hunk {
			return []Hunk{{Op: OpInsertBefore, Start: refTo(c, 1), Lines: []string{"0"}}}
		}, "0\na\nb\nc\n", []Region{{1, 1}}},
		{"insert after last line", abc, func(c string) []Hunk {
			return []Hunk{{Op: OpInsertAfter, Start: refTo(c, 3), Lines: []string{"d"}}}
		}, "a\nb\nc\nd\n", []Region{{4, 4}}},
		{"insert after first line", abc, func(c string) []Hunk {
			return []Hunk{{Op: OpInsertAfter, Start: refTo(c, 1), Lines: []string{"x", "y"}}}
		}, "a\nx\ny\nb\nc\n", []Region{{2, 3}}},
		{"append", abc, func(c string) []Hunk {
			return []Hunk{{Op: OpAppend, Lines: []string{"d"}}}
		}, "a\nb\nc\nd\n", []Region{{4, 4}}},
		{"append to empty file", "", func(c string) []Hunk {
			return []Hunk{{Op: OpAppend, Lines: []string{"first"}}}
		}, "first\n", []Region{{1, 1}}},
		{"append empty line to empty file", "", func(c string) []Hunk {
			return []Hunk{{Op: OpAppend, Lines: []string{""}}}
		}, "\n", []Region{{1, 1}}},
		{"append keeps a lone bom", bom, func(c string) []Hunk {
			return []Hunk{{Op: OpAppend, Lines: []string{"x"}}}
		}, bom + "x\n", []Region{{1, 1}}},
		{"bom kept when line 1 replaced", bom + "a\nb\n", func(c string) []Hunk {
			return []Hunk{{Op: OpReplace, Start: refTo(c, 1), Lines: []string{"A"}}}
		}, bom + "A\nb\n", []Region{{1, 1}}},
		{"bom kept when inserting before line 1", bom + "a\n", func(c string) []Hunk {
			return []Hunk{{Op: OpInsertBefore, Start: refTo(c, 1), Lines: []string{"0"}}}
		}, bom + "0\na\n", []Region{{1, 1}}},
		{"crlf file writes crlf, keeps others", "a\r\nb\r\nc\r\n", func(c string) []Hunk {
			return []Hunk{{Op: OpReplace, Start: refTo(c, 2), Lines: []string{"B", "B2"}}}
		}, "a\r\nB\r\nB2\r\nc\r\n", []Region{{2, 3}}},
		{"mixed breaks: dominant lf, untouched crlf stays", "a\r\nb\nc\n", func(c string) []Hunk {
			return []Hunk{{Op: OpInsertAfter, Start: refTo(c, 1), Lines: []string{"x"}}}
		}, "a\r\nx\nb\nc\n", []Region{{2, 2}}},
		{"tie goes to lf", "a\r\nb\n", func(c string) []Hunk {
			return []Hunk{{Op: OpAppend, Lines: []string{"x"}}}
		}, "a\r\nb\nx\n", []Region{{3, 3}}},
		{"no final newline: append", "a\nb", func(c string) []Hunk {
			return []Hunk{{Op: OpAppend, Lines: []string{"c"}}}
		}, "a\nb\nc", []Region{{3, 3}}},
		{"no final newline: replace last", "a\nb", func(c string) []Hunk {
			return []Hunk{{Op: OpReplace, Start: refTo(c, 2), Lines: []string{"x", "y"}}}
		}, "a\nx\ny", []Region{{2, 3}}},
		{"no final newline: delete last", "a\nb", func(c string) []Hunk {
			return []Hunk{{Op: OpReplace, Start: refTo(c, 2)}}
		}, "a", []Region{{2, 1}}},
		{"no final newline: edit elsewhere", "a\nb", func(c string) []Hunk {
			return []Hunk{{Op: OpReplace, Start: refTo(c, 1), Lines: []string{"A"}}}
		}, "A\nb", []Region{{1, 1}}},
		{"no final newline crlf: append", "a\r\nb", func(c string) []Hunk {
			return []Hunk{{Op: OpAppend, Lines: []string{"c"}}}
		}, "a\r\nb\r\nc", []Region{{3, 3}}},
		{"no final newline: empty last line needs its break", "a", func(c string) []Hunk {
			return []Hunk{{Op: OpAppend, Lines: []string{""}}}
		}, "a\n\n", []Region{{2, 2}}},
		{"no final newline: delete leaving an empty last line", "a\n\nb", func(c string) []Hunk {
			return []Hunk{{Op: OpReplace, Start: refTo(c, 3)}}
		}, "a\n\n", []Region{{3, 2}}},
		{"no final newline: last line ending in cr stays", "a\nb\r", func(c string) []Hunk {
			return []Hunk{{Op: OpReplace, Start: refTo(c, 1), Lines: []string{"A"}}}
		}, "A\nb\r", []Region{{1, 1}}},
		{"single line file without newline", "only", func(c string) []Hunk {
			return []Hunk{{Op: OpInsertBefore, Start: refTo(c, 1), Lines: []string{"first"}}}
		}, "first\nonly", []Region{{1, 1}}},
		{"element with breaks is several lines", abc, func(c string) []Hunk {
			return []Hunk{{Op: OpReplace, Start: refTo(c, 2), Lines: []string{"x\ny", "z\r\n"}}}
		}, "a\nx\ny\nz\nc\n", []Region{{2, 4}}},
		{"hunks in any order", "1\n2\n3\n4\n5\n", func(c string) []Hunk {
			return []Hunk{
				{Op: OpAppend, Lines: []string{"6"}},
				{Op: OpReplace, Start: refTo(c, 4), End: refTo(c, 5), Lines: []string{"45"}},
				{Op: OpInsertBefore, Start: refTo(c, 1), Lines: []string{"0a", "0b"}},
				{Op: OpReplace, Start: refTo(c, 2)},
			}
		}, "0a\n0b\n1\n3\n45\n6\n", []Region{{6, 6}, {5, 5}, {1, 2}, {4, 3}}},
		{"insert before the start of a replace lands before it", abc, func(c string) []Hunk {
			return []Hunk{
				{Op: OpReplace, Start: refTo(c, 2), Lines: []string{"B"}},
				{Op: OpInsertBefore, Start: refTo(c, 2), Lines: []string{"x"}},
			}
		}, "a\nx\nB\nc\n", []Region{{3, 3}, {2, 2}}},
		{"insert after the end of a replace lands after it", abc, func(c string) []Hunk {
			return []Hunk{
				{Op: OpInsertAfter, Start: refTo(c, 2), Lines: []string{"x"}},
				{Op: OpReplace, Start: refTo(c, 1), End: refTo(c, 2), Lines: []string{"AB"}},
			}
		}, "AB\nx\nc\n", []Region{{2, 2}, {1, 1}}},
		{"adjacent replaces", abc, func(c string) []Hunk {
			return []Hunk{
				{Op: OpReplace, Start: refTo(c, 1), Lines: []string{"A"}},
				{Op: OpReplace, Start: refTo(c, 2), Lines: []string{"B"}},
			}
		}, "A\nB\nc\n", []Region{{1, 1}, {2, 2}}},
		{"replace last line and append", abc, func(c string) []Hunk {
			return []Hunk{
				{Op: OpAppend, Lines: []string{"d"}},
				{Op: OpReplace, Start: refTo(c, 3), Lines: []string{"C"}},
			}
		}, "a\nb\nC\nd\n", []Region{{4, 4}, {3, 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := applyOK(t, tt.content, tt.hunks(tt.content))
			if string(got.Content) != tt.want {
				t.Errorf("content = %q, want %q", got.Content, tt.want)
			}
			if diff := cmp.Diff(tt.regions, got.Regions); diff != "" {
				t.Errorf("regions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewPlanRefusesOverlap(t *testing.T) {
	const c = "1\n2\n3\n4\n5\n"
	tests := []struct {
		name  string
		hunks []Hunk
		index int
	}{
		{"same line twice", []Hunk{
			{Op: OpReplace, Start: refTo(c, 2), Lines: []string{"x"}},
			{Op: OpReplace, Start: refTo(c, 2), Lines: []string{"y"}},
		}, 1},
		{"ranges share a line", []Hunk{
			{Op: OpReplace, Start: refTo(c, 3), End: refTo(c, 4)},
			{Op: OpReplace, Start: refTo(c, 1), End: refTo(c, 3)},
		}, 1},
		{"range inside range", []Hunk{
			{Op: OpReplace, Start: refTo(c, 1), End: refTo(c, 5)},
			{Op: OpReplace, Start: refTo(c, 3)},
		}, 1},
		{"insert after inside a replace", []Hunk{
			{Op: OpReplace, Start: refTo(c, 2), End: refTo(c, 4)},
			{Op: OpInsertAfter, Start: refTo(c, 2), Lines: []string{"x"}},
		}, 1},
		{"insert before inside a replace", []Hunk{
			{Op: OpInsertBefore, Start: refTo(c, 4), Lines: []string{"x"}},
			{Op: OpReplace, Start: refTo(c, 2), End: refTo(c, 4)},
		}, 1},
		{"two inserts at one place", []Hunk{
			{Op: OpInsertAfter, Start: refTo(c, 2), Lines: []string{"x"}},
			{Op: OpInsertBefore, Start: refTo(c, 3), Lines: []string{"y"}},
		}, 1},
		{"two appends", []Hunk{
			{Op: OpAppend, Lines: []string{"x"}},
			{Op: OpAppend, Lines: []string{"y"}},
		}, 1},
		{"append and insert after the last line", []Hunk{
			{Op: OpAppend, Lines: []string{"x"}},
			{Op: OpInsertAfter, Start: refTo(c, 5), Lines: []string{"y"}},
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPlan([]byte(c), tt.hunks)
			var he *HunkError
			if !errors.As(err, &he) || he.Code != CodeOverlap || he.Index != tt.index {
				t.Fatalf("NewPlan = %v, %v; want overlap at hunk %d", p, err, tt.index)
			}
		})
	}
}

func TestNewPlanStale(t *testing.T) {
	const c = "a\nb\nc\n"
	lines := Annotate([]byte(c))
	tests := []struct {
		name  string
		hunks []Hunk
		want  []StaleRef
	}{
		{"line one past the end", []Hunk{{Op: OpReplace, Start: &Ref{4, lines[0].Anchor}}},
			[]StaleRef{{Ref: Ref{4, lines[0].Anchor}}}},
		{"wrong anchor", []Hunk{{Op: OpInsertAfter, Start: &Ref{2, lines[0].Anchor}, Lines: []string{"x"}}},
			[]StaleRef{{Ref: Ref{2, lines[0].Anchor}, Current: &lines[1]}}},
		{"every stale ref listed once", []Hunk{
			{Op: OpReplace, Start: &Ref{1, lines[1].Anchor}, End: &Ref{2, lines[1].Anchor}},
			{Op: OpReplace, Start: &Ref{9, "abcdef01"}},
			{Op: OpInsertBefore, Start: &Ref{1, lines[1].Anchor}, Lines: []string{"x"}},
		}, []StaleRef{
			{Ref: Ref{1, lines[1].Anchor}, Current: &lines[0]},
			{Ref: Ref{9, "abcdef01"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewPlan([]byte(c), tt.hunks)
			var se *StaleError
			if !errors.As(err, &se) || se.Code != CodeStaleAnchor {
				t.Fatalf("NewPlan error %v, want stale_anchor", err)
			}
			if se.Current != Digest([]byte(c)) || se.Lines != 3 {
				t.Errorf("Current %q Lines %d, want %q 3", se.Current, se.Lines, Digest([]byte(c)))
			}
			if diff := cmp.Diff(tt.want, se.Stale); diff != "" {
				t.Errorf("stale (-want +got):\n%s", diff)
			}
		})
	}
	// Empty content has no lines to address; only append plans.
	if _, err := NewPlan(nil, []Hunk{{Op: OpReplace, Start: &Ref{1, AnchorOf("")}}}); !isCode(err, CodeStaleAnchor) {
		t.Errorf("replace on empty content: %v", err)
	}
	// Malformed hunks are refused before any anchor is checked.
	bad := []Hunk{{Op: OpReplace, Start: &Ref{9, "abcdef01"}, Lines: []string{"1:abcdef01|x"}}}
	if _, err := NewPlan([]byte(c), bad); !isCode(err, CodeDisplayPrefix) {
		t.Errorf("display prefix with a stale ref: %v", err)
	}
	if _, err := NewPlan([]byte(c), nil); !isCode(err, CodeNoHunks) {
		t.Errorf("no hunks: %v", err)
	}
}

func isCode(err error, code Code) bool {
	return CodeOf(err) == code
}

func TestApplyRefusesOtherContent(t *testing.T) {
	c := []byte("a\nb\n")
	plan, err := NewPlan(c, []Hunk{{Op: OpAppend, Lines: []string{"c"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, other := range [][]byte{nil, []byte("a\nb"), []byte("a\nb\n\n"), []byte("a\r\nb\r\n"), []byte(bom + "a\nb\n")} {
		_, err := plan.Apply(other)
		var se *StaleError
		if !errors.As(err, &se) || se.Code != CodeStaleDigest {
			t.Fatalf("Apply(%q) = %v, want stale_digest", other, err)
		}
		if se.Want != Digest(c) || se.Current != Digest(other) {
			t.Errorf("Want %q Current %q", se.Want, se.Current)
		}
	}
	applied, err := plan.Apply(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plan.Apply(applied.Content); !isCode(err, CodeStaleDigest) {
		t.Errorf("second Apply on the post-image: %v", err)
	}
	if !bytes.Equal(c, []byte("a\nb\n")) {
		t.Errorf("Apply modified its input: %q", c)
	}
	if err := CheckDigest(c, Digest(c)); err != nil {
		t.Errorf("CheckDigest on matching content: %v", err)
	}
	if err := CheckDigest(c, "0000000000000000-4"); !isCode(err, CodeStaleDigest) {
		t.Errorf("CheckDigest on other digest: %v", err)
	}
}

func TestReplaceWithSameTextIsIdempotent(t *testing.T) {
	const c = "a\nb\n"
	plan, err := NewPlan([]byte(c), []Hunk{{Op: OpReplace, Start: refTo(c, 2), Lines: []string{"b"}}})
	if err != nil {
		t.Fatal(err)
	}
	first, err := plan.Apply([]byte(c))
	if err != nil {
		t.Fatal(err)
	}
	second, err := plan.Apply(first.Content)
	if err != nil || !bytes.Equal(first.Content, second.Content) {
		t.Errorf("re-applying a no-op edit: %q, %v", second.Content, err)
	}
}

func TestPlanIsSafeToShare(t *testing.T) {
	const c = "a\nb\nc\n"
	plan, err := NewPlan([]byte(c), []Hunk{{Op: OpReplace, Start: refTo(c, 2), Lines: []string{"B"}}})
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan []byte, 8)
	for range cap(results) {
		go func() {
			applied, err := plan.Apply([]byte(c))
			if err != nil {
				results <- nil
				return
			}
			results <- applied.Content
		}()
	}
	for range cap(results) {
		if got := <-results; string(got) != "a\nB\nc\n" {
			t.Errorf("concurrent Apply = %q", got)
		}
	}
}

// TestNewPlanHashesALargeContentAside: from parallelHashBytes on, scan
// hashes on a goroutine of its own while it cuts lines; the plan is the
// same: bound to the content's digest, its lines where they are.
func TestNewPlanHashesALargeContentAside(t *testing.T) {
	for _, c := range []string{
		bom + strings.Repeat("line\r\n", parallelHashBytes/6+1) + "last",
		strings.Repeat("x", parallelHashBytes) + "\n",
	} {
		content := []byte(c)
		lines := Annotate(content)
		n := len(lines)
		plan, err := NewPlan(content, []Hunk{{Op: OpReplace, Start: &Ref{Line: n, Anchor: lines[n-1].Anchor}, Lines: []string{"new"}}})
		if err != nil {
			t.Fatal(err)
		}
		if plan.Digest() != Digest(content) {
			t.Fatalf("plan digest %s, content digest %s", plan.Digest(), Digest(content))
		}
		applied, err := plan.Apply(content)
		if err != nil {
			t.Fatal(err)
		}
		got := Annotate(applied.Content)
		if len(got) != n || got[n-1].Text != "new" || n > 1 && got[0].Text != lines[0].Text {
			t.Fatalf("post-image has %d lines, the last %q", len(got), got[len(got)-1].Text)
		}
	}
}
