package search

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloom/loom/internal/search/searchtest"
)

// fixture writes files (name -> content; "->target" makes a symlink) under
// a fresh directory and returns its resolved path.
func fixture(t testing.TB, files map[string]string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(content, "->") {
			if err := os.Symlink(content[2:], p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var treeFiles = map[string]string{
	"a.txt":               "alpha foo\nbeta\ngamma\ndelta foo\nepsilon\nzeta\neta\ntheta\niota foo\n",
	"a/b.txt":             "foo in a dir named a\n",
	"sub/b.go":            "package sub\n\nfunc Foo() {} // foo\n",
	"sub/deep/c.log":      "foo log\n",
	"sub/keep.log":        "foo kept by a nested negation\n",
	"sub/.gitignore":      "!keep.log\n",
	"build/x.txt":         "foo built\n",
	".hidden/h.txt":       "foo hidden\n",
	".env":                "FOO=foo\n",
	".gitignore":          "build/\n*.log\n!.env\n# comment\n\\#literal\n",
	"#literal":            "foo literal hash\n",
	"bin.dat":             "x\x00foo\n",
	"crlf.txt":            "foo\r\nbar\r\nfoo end\r\n",
	"long.txt":            strings.Repeat("é", 700) + " foo\n",
	"latin1.txt":          "caf\xe9 foo\n",
	"noeol.txt":           "last foo",
	"empty.txt":           "",
	"link.txt":            "->a.txt",
	"secret/s.txt":        "foo secret\n",
	"unicode/ü.txt":       "Ünïcödé FOO\nnaïve foo\néfoo ½ ٣\u00a0x\n",
	"vendor/lib/x.go":     "foo vendored\n",
	"vendor/lib/y.min.js": "var foo=1;\n",
}

func goRun(t fataler, root string, o Options) Result {
	t.Helper()
	r, err := Go(context.Background(), root, o)
	if err != nil {
		t.Fatalf("Go(%q, %+v): %v", root, o, err)
	}
	return r
}

// rgRun runs ripgrep directly (unjailed) on root twice: named by its
// path (RipgrepArgs) and pinned (OperandDir for a directory, OperandStdin
// for a file, as the grep tool runs it); the two must collect the same
// result, which it returns.
func rgRun(t testing.TB, root string, o Options) Result {
	t.Helper()
	pinned := OperandDir
	if fi, err := os.Stat(root); err == nil && !fi.IsDir() {
		pinned = OperandStdin
	}
	r := rgRunAs(t, root, o, OperandPath)
	if diff := cmp.Diff(r, rgRunAs(t, root, o, pinned)); diff != "" {
		t.Fatalf("ripgrep on %s by path and pinned differ (-path +pinned):\n%s", root, diff)
	}
	return r
}

// fataler is what the test helpers need of a *testing.T, *testing.B or
// *rapid.T.
type fataler interface {
	Helper()
	Fatal(...any)
	Fatalf(string, ...any)
}

// rgRunAs runs ripgrep directly (unjailed) with RipgrepArgsFor(root, o,
// op): its working directory at root (at root's directory for a file),
// and for OperandStdin the file as its standard input.
func rgRunAs(t fataler, root string, o Options, op Operand) Result {
	t.Helper()
	cmd := exec.Command("rg", RipgrepArgsFor(root, o, op)...)
	cmd.Dir = root
	if fi, err := os.Stat(root); err == nil && !fi.IsDir() {
		cmd.Dir = filepath.Dir(root)
	}
	if op == OperandStdin {
		f, err := os.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	col := NewRipgrepCollectorFor(o, root, op)
	cmd.Stdout = col
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) && !errors.Is(err, ErrScanFull) {
		t.Fatalf("rg %v: %v: %s", cmd.Args, err, stderr.String())
	}
	return col.Result()
}

func TestGoEngineSelection(t *testing.T) {
	root := fixture(t, treeFiles)
	o := Options{Pattern: "foo", Protected: []string{filepath.Join(root, "secret")}}
	got := map[string]bool{}
	for _, h := range goRun(t, root, o).Hits {
		rel, _ := filepath.Rel(root, h.Path)
		got[rel] = true
	}
	want := map[string]bool{
		"a.txt": true, "a/b.txt": true, "sub/b.go": true, "sub/keep.log": true, ".env": true,
		"crlf.txt": true, "long.txt": true, "latin1.txt": true, "noeol.txt": true,
		"vendor/lib/x.go": true, "vendor/lib/y.min.js": true, "unicode/ü.txt": true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("files with hits (-want +got):\n%s", diff)
	}
}

func TestEnginesAgree(t *testing.T) {
	searchtest.RequireRipgrep(t)
	root := fixture(t, treeFiles)
	prot := []string{filepath.Join(root, "secret")}
	cases := []Options{
		{Pattern: "foo"},
		{Pattern: "foo", Context: 1},
		{Pattern: "foo", Context: 3},
		{Pattern: "FOO", CaseInsensitive: true},
		{Pattern: "^foo$"},
		{Pattern: "foo$"},
		{Pattern: "o", Context: 2},
		{Pattern: "foo", Glob: "*.go"},
		{Pattern: "foo", Glob: "!*.txt"},
		{Pattern: "foo", Glob: "sub/**"},
		{Pattern: "foo", Glob: "**/lib/*"},
		{Pattern: "foo", Glob: "*.log"},
		{Pattern: "foo", Glob: "!vendor"},
		{Pattern: "foo", Glob: "*.{go,js}"},
		{Pattern: "a|e", Context: 1},
		{Pattern: "zzz-no-match"},
		{Pattern: "é+ foo"},
		{Pattern: "x*"},
		{Pattern: `\w+ foo`},
		{Pattern: `\bfoo\b`},
		{Pattern: `\d|\s\S`},
		{Pattern: `[\w]{3}`},
		{Pattern: `\Bfoo`},
		{Pattern: `^\w+ foo`},
		{Pattern: `\d`},
	}
	for _, o := range cases {
		o.Protected = prot
		t.Run(fmt.Sprintf("%s/%s/%d/%v", o.Pattern, o.Glob, o.Context, o.CaseInsensitive), func(t *testing.T) {
			g, r := goRun(t, root, o), rgRun(t, root, o)
			if diff := cmp.Diff(Render(r.Hits, o.Context, nil), Render(g.Hits, o.Context, nil)); diff != "" {
				t.Fatalf("engines differ (-ripgrep +go):\n%s", diff)
			}
			if g.Matches != r.Matches || g.Files != r.Files {
				t.Fatalf("counts differ: go %d/%d, ripgrep %d/%d", g.Matches, g.Files, r.Matches, r.Files)
			}
		})
	}
	// A file root and a subdirectory root (parent .gitignore applies).
	for _, tt := range []struct{ sub, ignoreRoot string }{
		{"a.txt", root}, {"bin.dat", root}, {"sub", root}, {"build", root},
		{"sub", ""}, {"sub", filepath.Join(root, "sub")}, // the root's *.log no longer applies
	} {
		sub := tt.sub
		p := filepath.Join(root, sub)
		o := Options{Pattern: "foo", IgnoreRoot: tt.ignoreRoot}
		g, r := goRun(t, p, o), rgRun(t, p, o)
		if diff := cmp.Diff(Render(r.Hits, 0, nil), Render(g.Hits, 0, nil)); diff != "" {
			t.Errorf("root %s: engines differ (-ripgrep +go):\n%s", sub, diff)
		}
	}
}

func TestOrderIsComponentWise(t *testing.T) {
	root := fixture(t, map[string]string{"a.txt": "x\n", "a/b.txt": "x\n", "a-b.txt": "x\n", "ab/c.txt": "x\nx\n"})
	var got []string
	for _, h := range goRun(t, root, Options{Pattern: "x"}).Hits {
		rel, _ := filepath.Rel(root, h.Path)
		got = append(got, fmt.Sprintf("%s:%d", rel, h.Line))
	}
	want := []string{"a/b.txt:1", "a-b.txt:1", "a.txt:1", "ab/c.txt:1", "ab/c.txt:2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("order (-want +got):\n%s", diff)
	}
}

func TestLineText(t *testing.T) {
	long := strings.Repeat("a", MaxLineBytes)
	tests := []struct{ in, want string }{
		{"plain\n", "plain"},
		{"crlf\r\n", "crlf"},
		{"no eol", "no eol"},
		{"bad \xff byte\n", "bad \uFFFD byte"},
		{long + "\n", long},
		{long + "b\n", long + " [… 1 more bytes of this line]"},
		{strings.Repeat("a", MaxLineBytes-1) + "é\n", strings.Repeat("a", MaxLineBytes-1) + " [… 2 more bytes of this line]"},
	}
	for _, tt := range tests {
		if got := lineText([]byte(tt.in)); got != tt.want {
			t.Errorf("lineText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestBoundAtAndOnePast(t *testing.T) {
	var hits []Hit
	for i := 1; i <= 5; i++ {
		hits = append(hits, Hit{Path: "/f", Line: 2 * i, Match: true}, Hit{Path: "/f", Line: 2*i + 1})
	}
	for _, n := range []int{0, 1, 4, 5, 6} {
		got, trunc := Bound(hits, n, 1)
		matches := countMatches(got)
		if matches != min(n, 5) {
			t.Errorf("Bound(%d) kept %d matches", n, matches)
		}
		if trunc != (n < 5) {
			t.Errorf("Bound(%d) truncated = %v", n, trunc)
		}
		if n > 0 && n < 5 {
			// The last kept match keeps its after-context line.
			if last := got[len(got)-1]; last.Match || last.Line != 2*n+1 {
				t.Errorf("Bound(%d) ends with %+v", n, last)
			}
		}
	}
}

func TestRender(t *testing.T) {
	hits := []Hit{
		{Path: "/w/a", Line: 1, Text: "x", Match: true},
		{Path: "/w/a", Line: 2, Text: "y"},
		{Path: "/w/a", Line: 9, Text: "z", Match: true},
		{Path: "/w/b", Line: 1, Text: "q", Match: true},
	}
	rel := func(p string) string { return strings.TrimPrefix(p, "/w/") }
	want := "a:1:x\na-2-y\n--\na:9:z\n--\nb:1:q\n"
	if got := Render(hits, 1, rel); got != want {
		t.Errorf("Render with context = %q, want %q", got, want)
	}
	want0 := "a:1:x\na-2-y\na:9:z\nb:1:q\n"
	if got := Render(hits, 0, rel); got != want0 {
		t.Errorf("Render without context = %q, want %q", got, want0)
	}
}

func TestBadPattern(t *testing.T) {
	for _, p := range []string{"(foo", "a{2,1}", "[z-a]", "(?<=x)y", ""} {
		_, err := Go(context.Background(), t.TempDir(), Options{Pattern: p})
		var pe *PatternError
		if !errors.As(err, &pe) {
			t.Errorf("pattern %q: err %v, want *PatternError", p, err)
			continue
		}
		if !strings.Contains(pe.Error(), fmt.Sprintf("%q", p)) {
			t.Errorf("error %q does not quote the pattern", pe.Error())
		}
	}
	var pe *PatternError
	_, err := Compile(Options{Pattern: "(foo"})
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "missing closing )") {
		t.Errorf("error %v does not name the problem", err)
	}
}

func TestGoCancelled(t *testing.T) {
	root := fixture(t, treeFiles)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Go(ctx, root, Options{Pattern: "foo"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Go on a cancelled context = %v", err)
	}
}

func TestScanStopsAtMaxScanMatches(t *testing.T) {
	for _, n := range []int{MaxScanMatches, MaxScanMatches + 1} {
		root := fixture(t, map[string]string{"many.txt": strings.Repeat("m\n", n)})
		r := goRun(t, root, Options{Pattern: "m"})
		if r.Matches != min(n, MaxScanMatches) || r.Stopped != (n > MaxScanMatches) {
			t.Errorf("%d lines: matches %d stopped %v", n, r.Matches, r.Stopped)
		}
	}
}

func TestGitignoreRules(t *testing.T) {
	tests := []struct {
		ignore string
		path   string
		isDir  bool
		want   verdict
	}{
		{"*.log", "x.log", false, ignored},
		{"*.log", "a/b/x.log", false, ignored},
		{"/x.log", "a/x.log", false, none},
		{"/x.log", "x.log", false, ignored},
		{"build/", "build", true, ignored},
		{"build/", "build", false, none},
		{"a/b", "a/b", false, ignored},
		{"a/b", "c/a/b", false, none},
		{"**/b", "c/a/b", false, ignored},
		{"a/**", "a/x/y", false, ignored},
		{"a/**/z", "a/z", false, ignored},
		{"a/**/z", "a/x/y/z", false, ignored},
		{"*.log\n!keep.log", "keep.log", false, whitelist},
		{"!keep.log\n*.log", "keep.log", false, ignored},
		{"x?z", "xyz", false, ignored},
		{"x?z", "x/z", false, none},
		{"[abc].txt", "b.txt", false, ignored},
		{"[!abc].txt", "b.txt", false, none},
		{"\\!bang", "!bang", false, ignored},
		{"trailing   ", "trailing", false, ignored},
		{"#comment", "#comment", false, none},
		{"", "x", false, none},
	}
	for _, tt := range tests {
		rs := parseIgnore("/r", []byte(tt.ignore))
		got := none
		if rs != nil {
			got = rs.match("/r/"+tt.path, tt.isDir)
		}
		if got != tt.want {
			t.Errorf("%q vs %q (dir %v) = %v, want %v", tt.ignore, tt.path, tt.isDir, got, tt.want)
		}
	}
}

func FuzzParseRipgrepJSON(f *testing.F) {
	f.Add([]byte(`{"type":"match","data":{"path":{"text":"/w/a.txt"},"lines":{"text":"foo\n"},"line_number":1,"absolute_offset":0,"submatches":[]}}`))
	f.Add([]byte(`{"type":"context","data":{"path":{"bytes":"L3cvYQ=="},"lines":{"bytes":"/w=="},"line_number":3}}`))
	f.Add([]byte(`{"type":"end","data":{"path":{"text":"/w/a"},"binary_offset":5,"stats":{}}}`))
	f.Add([]byte(`{"type":"summary","data":{}}`))
	f.Add([]byte(`{"type":"match","data":{"path":{"text":""},"line_number":-1}}`))
	f.Add([]byte(`not json`))
	f.Add([]byte(`{"type":"match","data":{"path":{"text":"a\ud83d\ude00\u00e9"},"lines":{"text":"x\"y\\z\t"},"line_number":2,"stats":{"a":[1,-2.5e3,true,null]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		// The scanner reads what encoding/json reads, and accepts only
		// valid JSON.
		checkAgainstReference(t, data)
		ev, err := ParseRipgrepEvent(data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.ErrorCode() != "bad_ripgrep_event" {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			return
		}
		if (ev.Type == "match" || ev.Type == "context") && (ev.Line <= 0 || ev.Path == "") {
			t.Fatalf("accepted %s event without line or path: %+v", ev.Type, ev)
		}
		if len(ev.Text) > MaxLineBytes+64 {
			t.Fatalf("text of %d bytes exceeds the line bound", len(ev.Text))
		}
		// The collector never panics on the same bytes, whole or split.
		c := NewRipgrepCollector(Options{})
		half := len(data) / 2
		c.Write(data[:half])
		c.Write(append(data[half:], '\n'))
		_ = c.Result()
	})
}

func TestRipgrepPattern(t *testing.T) {
	tests := []struct{ in, want string }{
		{`foo`, `foo`},
		{`\d+`, `[0-9]+`},
		{`\bfoo\B`, `(?-u:\b)foo(?-u:\B)`},
		{`\\b`, `\\b`},
		{`^a$`, `(?m:^a$)`},
		{`(unclosed`, `(unclosed`},
	}
	for _, tt := range tests {
		if got := RipgrepPattern(Options{Pattern: tt.in}); got != tt.want {
			t.Errorf("RipgrepPattern(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
