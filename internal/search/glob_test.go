package search

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/agentloom/loom/internal/search/searchtest"
)

// globTree holds names that globs of the drawn alphabet tell apart.
var globTree = map[string]string{
	"a.go": "x\n", "b.txt": "x\n", "ab": "x\n", "sub/c.go": "x\n", "sub/a/b.go": "x\n",
	"z-a.txt": "x\n", "x{y}.md": "x\n", "[z].txt": "x\n", "a,b": "x\n", "-": "x\n",
	"é.txt": "x\n", "^a": "x\n", "!b": "x\n", "a]": "x\n", "a\\b": "x\n",
	"!a": "x\n", "#a": "x\n", "a ": "x\n", "sub/a b": "x\n",
}

// rgGlob runs ripgrep directly with RipgrepArgs and the glob of o handed
// to ripgrep's own --glob (the reference for what a glob matches: the
// engines apply an admitting glob with the Go matcher, since ripgrep's
// admits hidden and ignored files, which globTree has none of), and again
// pinned on "." (OperandDir, as the grep tool runs it), which must
// agree. It reports whether ripgrep accepted the glob (it exits 2 with
// "error parsing glob" and no summary otherwise) and, if so, the files
// that matched.
func rgGlob(t interface {
	Helper()
	Fatalf(string, ...any)
}, root string, o Options) (files []string, accepted bool) {
	t.Helper()
	files, accepted = rgGlobAs(t, root, o, OperandPath)
	pf, pa := rgGlobAs(t, root, o, OperandDir)
	if pa != accepted || !slices.Equal(pf, files) {
		t.Fatalf("glob %q: by path accepted=%v %q, pinned on . accepted=%v %q", o.Glob, accepted, files, pa, pf)
	}
	return files, accepted
}

// rgGlobAs is rgGlob's one run, with root named as op.
func rgGlobAs(t interface {
	Helper()
	Fatalf(string, ...any)
}, root string, o Options, op Operand) (files []string, accepted bool) {
	t.Helper()
	cmd := exec.Command("rg", ripgrepArgs(root, o, op, o.Glob)...)
	cmd.Dir = root
	raw := o
	raw.Glob = "" // ripgrep alone applies it
	col := NewRipgrepCollectorFor(raw, root, op)
	cmd.Stdout = col
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ExitCode() == 1:
	case errors.As(err, &ee) && ee.ExitCode() == 2 && strings.Contains(stderr.String(), "error parsing glob"):
		return nil, false
	default:
		t.Fatalf("rg %q: %v: %s", cmd.Args, err, stderr.String())
	}
	return filesOf(root, col.Result()), true
}

func filesOf(root string, r Result) []string {
	var out []string
	for _, h := range r.Hits {
		rel, _ := filepath.Rel(root, h.Path)
		if !slices.Contains(out, rel) {
			out = append(out, rel)
		}
	}
	slices.Sort(out)
	return out
}

func TestValidateGlob(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		glob    string
		mention string // "" means accepted
	}{
		{"", ""}, {"*.go", ""}, {"!*.go", ""}, {"src/**/*.ts", ""}, {"*.{go,txt}", ""},
		{"a}", "closes no alternation"}, {"x{a}}", "closes no alternation"}, {"[a-]", ""}, {"[]a]", ""}, {"[!]a]", ""}, {`\[`, ""}, {"{a,b}{c,d}", ""},
		{"[a-b-c]", ""}, {"!", "must be followed"}, {"!!a", ""}, {"!#a", ""}, {`\#a`, ""},
		{"#a", "comment"}, {"  ", "blank"}, {"! ", "blank"}, {"a ", ""},
		{"[abc", "no ] closes"}, {"[]", "no ] closes"}, {"[!]", "no ] closes"}, {"a[", "no ] closes"},
		{"{a,b", "no } closes"}, {"{a", "no } closes"},
		{"{a,{b,c}}", "nests"},
		{"[z-a]", "z-a runs backwards"}, {"[c-d-a]", "c-a runs backwards"},
		{`a\`, `lone \`},
		{strings.Repeat("a", MaxGlobBytes), ""},
		{strings.Repeat("a", MaxGlobBytes+1), "more than 1024"},
	} {
		err := ValidateGlob(tt.glob)
		if tt.mention == "" {
			if err != nil {
				t.Errorf("ValidateGlob(%q) = %v, want nil", tt.glob, err)
			}
			continue
		}
		var ge *GlobError
		if !errors.As(err, &ge) || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("ValidateGlob(%q) = %v, want a *GlobError mentioning %q", tt.glob, err, tt.mention)
			continue
		}
		if !strings.Contains(err.Error(), "a leading ! excludes") {
			t.Errorf("ValidateGlob(%q): %q does not say what is accepted", tt.glob, err)
		}
		if n := len(err.Error()); n > 2*MaxQuotedBytes+400 {
			t.Errorf("ValidateGlob of %d bytes: message of %d bytes is not bounded", len(tt.glob), n)
		}
	}
}

func TestGoRefusesBadGlobBeforeReading(t *testing.T) {
	t.Parallel()
	root := fixture(t, map[string]string{"a.go": "x\n"})
	_, err := Go(t.Context(), root, Options{Pattern: "x", Glob: "[abc"})
	var ge *GlobError
	if !errors.As(err, &ge) {
		t.Fatalf("Go with glob [abc: %v, want a *GlobError", err)
	}
}

// stricterThanRipgrep are the refusals of globs ripgrep accepts: a lone
// "}" (read differently by ripgrep's versions), a leading "#" (a
// comment to ripgrep, so silently no glob), a lone "!" and a blank glob
// (meaningless).
var stricterThanRipgrep = []string{"closes no alternation", "comment", "must be followed", "blank"}

// Ripgrep refuses exactly the globs ValidateGlob refuses (but for
// stricterThanRipgrep), and both
// engines select the same files with every glob both accept.
func TestGlobsAgreeWithRipgrep(t *testing.T) {
	searchtest.RequireRipgrep(t)
	root := fixture(t, globTree)
	atom := rapid.SampledFrom([]string{"a", "b", "z", "é", ".", "*", "?", "**", "/", "[", "]", "{", "}", ",", "-", "!", "^", `\`, "go", "#", " "})
	rapid.Check(t, func(t *rapid.T) {
		glob := strings.Join(rapid.SliceOfN(atom, 1, 7).Draw(t, "atoms"), "")
		o := Options{Pattern: "x", Glob: glob}
		rgFiles, accepted := rgGlob(t, root, o)
		err := ValidateGlob(glob)
		var ge *GlobError
		if accepted && errors.As(err, &ge) && slices.ContainsFunc(stricterThanRipgrep, func(r string) bool { return strings.Contains(ge.Reason, r) }) {
			return
		}
		if accepted != (err == nil) {
			t.Fatalf("glob %q: ripgrep accepts it: %v; ValidateGlob: %v", glob, accepted, err)
		}
		if !accepted {
			return
		}
		r, err := Go(context.Background(), root, o)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(rgFiles, filesOf(root, r)); diff != "" {
			t.Fatalf("glob %q selects differently (-ripgrep +go):\n%s", glob, diff)
		}
	})
}
