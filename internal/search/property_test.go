package search

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// naive is the reference: split each file on "\n" (no line after a final
// newline), match every line on its own.
func naive(files map[string]string, root string, re *regexp.Regexp) []Hit {
	var hits []Hit
	for name, content := range files {
		if content == "" || strings.IndexByte(content, 0) >= 0 {
			continue
		}
		lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
		for i, l := range lines {
			if re.MatchString(l) {
				hits = append(hits, Hit{Path: filepath.Join(root, name), Line: i + 1, Text: lineText([]byte(l)), Match: true})
			}
		}
	}
	return sortHits(hits)
}

func TestGoEngineMatchesNaiveLineSearch(t *testing.T) {
	alphabet := rapid.SampledFrom([]string{"a", "b", "ab", " ", "\n", "\r\n", "é", "x"})
	content := rapid.Custom(func(t *rapid.T) string {
		return strings.Join(rapid.SliceOfN(alphabet, 0, 30).Draw(t, "parts"), "")
	})
	pattern := rapid.SampledFrom([]string{"a", "ab", "^a", "b$", "a+b", "x*", "^$", "[^a]", `\s`, "é", "a.b", "(?:b|x)$", `a\s*b`})
	dir := t.TempDir()
	n := 0
	rapid.Check(t, func(t *rapid.T) {
		n++
		root := filepath.Join(dir, fmt.Sprint(n))
		files := map[string]string{}
		for i := range rapid.IntRange(1, 4).Draw(t, "files") {
			files[fmt.Sprintf("f%d.txt", i)] = content.Draw(t, "content")
		}
		for name, c := range files {
			if err := os.MkdirAll(root, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, name), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		o := Options{Pattern: pattern.Draw(t, "pattern"), CaseInsensitive: rapid.Bool().Draw(t, "ci")}
		re, err := Compile(o)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Go(context.Background(), root, o)
		if err != nil {
			t.Fatal(err)
		}
		want := naive(files, root, re)
		if got, w := Render(r.Hits, 0, nil), Render(want, 0, nil); got != w {
			t.Fatalf("pattern %q:\n got %q\nwant %q", o.Pattern, got, w)
		}
		if r.Matches != len(want) {
			t.Fatalf("Matches %d, want %d", r.Matches, len(want))
		}
	})
}

func TestBoundProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var hits []Hit
		for f := range rapid.IntRange(0, 3).Draw(t, "files") {
			for l := 1; l <= rapid.IntRange(0, 12).Draw(t, "lines"); l++ {
				hits = append(hits, Hit{Path: fmt.Sprintf("/f%d", f), Line: l, Match: rapid.Bool().Draw(t, "m")})
			}
		}
		max := rapid.IntRange(0, 20).Draw(t, "max")
		ctx := rapid.IntRange(0, 3).Draw(t, "ctx")
		got, trunc := Bound(hits, max, ctx)
		total := countMatches(hits)
		if countMatches(got) != min(max, total) || trunc != (total > max) {
			t.Fatalf("kept %d of %d (max %d), truncated %v", countMatches(got), total, max, trunc)
		}
		// What is kept is a prefix of the input, in order.
		for i := range got {
			if got[i] != hits[i] {
				t.Fatalf("kept hits are not a prefix at %d", i)
			}
		}
	})
}

func FuzzGitignoreLine(f *testing.F) {
	for _, s := range []string{"*.log", "!keep", "/a/**/b/", `\#x`, "[a-", "a{b,c}", "**", "a/**", "[!]]x"} {
		f.Add(s, "a/b/c.log")
	}
	f.Fuzz(func(t *testing.T, line, path string) {
		rs := parseIgnore("/r", []byte(line))
		if rs == nil {
			return
		}
		_ = rs.match("/r/"+path, false)
		_ = rs.match("/r/"+path, true)
		g := newGlobFilter("/r", line)
		_ = g.match("/r/"+path, false)
	})
}
