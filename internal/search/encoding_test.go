package search

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/agentloom/loom/internal/search/searchtest"
)

// invalidTree holds lines with bytes that are not UTF-8, next to valid
// non-ASCII text and a real U+FFFD.
var invalidTree = map[string]string{
	"bad.txt":   "a\xffb\nc\xe2\x82d\n\xff\nplain\n",
	"mixed.txt": "\xef\xbf\xbd real\nx\xff\xef\xbf\xbdy\n\xc3\xa9t\xc3\xa9\n\xed\xa0\x80 surrogate\n",
	"ok.txt":    "naïve\n",
}

// TestInvalidUTF8IsNeverMatched: no pattern matches onto a byte that is
// not valid UTF-8, as with ripgrep (which wins where Go's regexp, reading
// the byte as U+FFFD, would let "." or a negated class match it); a real
// U+FFFD still matches. Each case names the lines it must find, and
// ripgrep must find the same.
func TestInvalidUTF8IsNeverMatched(t *testing.T) {
	t.Parallel()
	root := fixture(t, invalidTree)
	for _, tt := range []struct {
		pattern string
		ci      bool
		want    []string
	}{
		{"a.b", false, nil},
		{"^.$", false, nil},
		{`[^\x00-\x7F]`, false, []string{"mixed.txt:1", "mixed.txt:2", "mixed.txt:3", "ok.txt:1"}},
		{`\x{FFFD}`, false, []string{"mixed.txt:1", "mixed.txt:2"}},
		{`x.y`, false, nil},
		{`x\x{FFFD}`, false, nil},
		{`\x{FFFD}y`, false, []string{"mixed.txt:2"}},
		{`c..d`, false, nil},
		{`c.*d`, false, nil},
		{`^[^a-z]*$`, false, nil},
		{`\pL`, false, []string{"bad.txt:1", "bad.txt:2", "bad.txt:4", "mixed.txt:1", "mixed.txt:2", "mixed.txt:3", "mixed.txt:4", "ok.txt:1"}},
		{`\PL`, false, []string{"mixed.txt:1", "mixed.txt:2", "mixed.txt:4"}},
		{`\bb`, false, []string{"bad.txt:1"}},
		{`A.B`, true, nil},
		{`É.`, true, []string{"mixed.txt:3"}},
		{`\W\W`, false, []string{"mixed.txt:1"}},
		{`ï`, false, []string{"ok.txt:1"}},
	} {
		t.Run(tt.pattern, func(t *testing.T) {
			o := Options{Pattern: tt.pattern, CaseInsensitive: tt.ci}
			g := goRun(t, root, o)
			if diff := cmp.Diff(tt.want, matchLines(root, g)); diff != "" {
				t.Errorf("go engine (-want +got):\n%s", diff)
			}
			if _, err := exec.LookPath("rg"); err != nil && os.Getenv(searchtest.RequireRipgrepEnv) != "1" {
				return
			}
			if diff := cmp.Diff(tt.want, matchLines(root, rgRun(t, root, o))); diff != "" {
				t.Errorf("ripgrep (-want +got):\n%s", diff)
			}
		})
	}
}

// matchLines lists "file:line" of r's matches, relative to root.
func matchLines(root string, r Result) []string {
	var out []string
	for _, h := range r.Hits {
		if h.Match {
			rel, _ := filepath.Rel(root, h.Path)
			out = append(out, fmt.Sprintf("%s:%d", rel, h.Line))
		}
	}
	return out
}

// TestInvalidUTF8AgreesWithRipgrep draws lines mixing ASCII, valid
// non-ASCII text, a real U+FFFD and invalid bytes, and patterns over
// them, and holds the Go engine to ripgrep on each.
func TestInvalidUTF8AgreesWithRipgrep(t *testing.T) {
	t.Parallel()
	searchtest.RequireRipgrep(t)
	piece := rapid.SampledFrom([]string{"a", "b", " ", "é", "\uFFFD", "\xff", "\xe2\x82", "\xc3", "\n", "ab", "\U0001F600", "\x80"})
	pattern := rapid.SampledFrom([]string{".", "a.b", "^.$", `[^\x00-\x7F]`, `[^a]`, `\x{FFFD}`, "é", "a.*b", `^\W*$`, `\pL\PL`, `.\b.`, "(?:a|.)b", "[^ab ]{2}", `\S`})
	dir := t.TempDir()
	n := 0
	rapid.Check(t, func(t *rapid.T) {
		n++
		root := filepath.Join(dir, fmt.Sprint(n))
		if err := os.MkdirAll(root, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			content := strings.Join(rapid.SliceOfN(piece, 0, 12).Draw(t, "parts"), "")
			if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("f%d.txt", i)), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		o := Options{Pattern: pattern.Draw(t, "pattern"), CaseInsensitive: rapid.Bool().Draw(t, "ci")}
		g, r := goRun(t, root, o), rgRunAs(t, root, o, OperandDir)
		if got, want := Render(g.Hits, 0, nil), Render(r.Hits, 0, nil); got != want {
			t.Fatalf("pattern %q (case-insensitive %v):\n go %q\n rg %q", o.Pattern, o.CaseInsensitive, got, want)
		}
	})
}

// utf16Of encodes s as UTF-16, little- or big-endian, with or without a
// byte-order mark.
func utf16Of(s string, bigEndian, bom bool) string {
	units := utf16.Encode([]rune(s))
	if bom {
		units = append([]uint16{0xFEFF}, units...)
	}
	var b []byte
	for _, u := range units {
		if bigEndian {
			b = append(b, byte(u>>8), byte(u))
		} else {
			b = append(b, byte(u), byte(u>>8))
		}
	}
	return string(b)
}

// utf16Tree holds UTF-16 text: with an ASCII character (so a NUL byte)
// in each byte order, with and without a mark, and CJK text with none.
var utf16Tree = map[string]string{
	"le-bom.txt": utf16Of("needle 中文\n", false, true),
	"be-bom.txt": utf16Of("needle 中文\n", true, true),
	"le.txt":     utf16Of("needle 中文\n", false, false),
	"cjk-le.txt": utf16Of("中文字", false, true),
	"cjk-be.txt": utf16Of("中文字", true, false),
}

// TestUTF16FilesAreBytesToBothEngines: neither engine decodes UTF-16. A
// UTF-16 file holding a NUL byte (any with an ASCII character) is binary
// to both, whatever its mark; one without (CJK text only) is searched as
// the bytes it holds, which are not valid UTF-8, so no pattern matches
// onto them, on either engine. Control: ripgrep left to sniff the byte
// order mark (without --encoding none) decodes the marked files and
// finds "needle" in them, so the flag is what makes the engines agree.
func TestUTF16FilesAreBytesToBothEngines(t *testing.T) {
	t.Parallel()
	searchtest.RequireRipgrep(t)
	root := fixture(t, utf16Tree)
	for _, tt := range []struct {
		pattern string
		want    []string
	}{
		{"needle", nil},
		{"中", nil},
		{`[^\x00-\x7F]`, nil},
		{"^.+$", nil},                     // no match spans the invalid bytes among them
		{"N.e", []string{"cjk-be.txt:1"}}, // not across the invalid byte in cjk-le.txt
		{"N-", []string{"cjk-be.txt:1"}},
		{"-N", []string{"cjk-le.txt:1"}},
	} {
		o := Options{Pattern: tt.pattern}
		for _, r := range []string{root, filepath.Join(root, "le-bom.txt"), filepath.Join(root, "cjk-le.txt")} {
			g, rg := goRun(t, r, o), rgRun(t, r, o)
			want := tt.want
			if r != root {
				want = nil
				for _, w := range tt.want {
					if strings.HasPrefix(w, filepath.Base(r)+":") {
						want = append(want, w)
					}
				}
			}
			if diff := cmp.Diff(want, matchLines(root, g)); diff != "" {
				t.Errorf("pattern %q in %s: go engine (-want +got):\n%s", tt.pattern, r, diff)
			}
			if diff := cmp.Diff(want, matchLines(root, rg)); diff != "" {
				t.Errorf("pattern %q in %s: ripgrep (-want +got):\n%s", tt.pattern, r, diff)
			}
		}
	}
	// The control: ripgrep's default encoding sniffing.
	cmd := exec.Command("rg", "--no-config", "--files-with-matches", "needle", ".")
	cmd.Dir = root
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		t.Fatal(err)
	}
	for _, f := range []string{"le-bom.txt", "be-bom.txt"} {
		if !strings.Contains(string(out), f) {
			t.Errorf("control: ripgrep sniffing the mark did not find needle in %s (%q): the test shows nothing", f, out)
		}
	}
}
