package codemode

import (
	"go/doc"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"unicode/utf8"
)

// TestCapExportsCoverThePrelude: the "did you mean" index holds every
// name each capability package of the prelude exports, as go/doc lists
// them (a second reading of the same source), and nothing else.
func TestCapExportsCoverThePrelude(t *testing.T) {
	t.Parallel()
	tree := embeddedPrelude()
	idx := capExports()
	l := newPreludeLoader(tree)
	pkgs := preludeCapPackages(tree)
	if len(pkgs) == 0 || len(idx) != len(pkgs) {
		t.Fatalf("the index has %d packages, the prelude %d", len(idx), len(pkgs))
	}
	for _, path := range pkgs {
		p, err := l.load(path)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		values := func(vs []*doc.Value) {
			for _, v := range vs {
				want = append(want, v.Names...)
			}
		}
		values(p.doc.Consts)
		values(p.doc.Vars)
		for _, ty := range p.doc.Types {
			want = append(want, ty.Name)
			values(ty.Consts)
			values(ty.Vars)
			for _, f := range ty.Funcs {
				want = append(want, f.Name)
			}
		}
		for _, f := range p.doc.Funcs {
			want = append(want, f.Name)
		}
		want = slices.DeleteFunc(want, func(n string) bool { return n == "_" })
		slices.Sort(want)
		want = slices.Compact(want)
		if got := idx[path]; !slices.Equal(got, want) {
			t.Errorf("%s: index %v, prelude exports %v", path, got, want)
		}
	}
}

// TestExportedNamesReadTheSource: the index is computed from whatever
// prelude it is given, so a package or name added to the prelude is in
// it with no list to keep; internal packages and unexported names are not.
func TestExportedNamesReadTheSource(t *testing.T) {
	t.Parallel()
	tree := fstest.MapFS{
		"clock/clock.go":  {Data: []byte("package clock\n\nconst Second = 1\n\nvar Zone, local = 1, 2\n\ntype Tick struct{}\n\nfunc (Tick) Method() {}\n\nfunc Every() {}\nfunc hidden() {}\n")},
		"clock/extra.go":  {Data: []byte("package clock\n\ntype (\n\tA int\n\tb int\n)\n")},
		"internal/x/x.go": {Data: []byte("package x\n\nfunc Secret() {}\n")},
	}
	got := exportedNames(tree)
	if want := []string{"A", "Every", "Second", "Tick", "Zone"}; !slices.Equal(got["cap/clock"], want) || len(got) != 1 {
		t.Fatalf("index %v, want cap/clock: %v only", got, want)
	}
}

// TestSuggestions: each undefined capability name gets at most one hint:
// where another package of the seam has it, else a near spelling in its
// own package; nothing for other packages, other messages, names no
// package is near, or a package outside the seam.
func TestSuggestions(t *testing.T) {
	t.Parallel()
	exports := map[string][]string{
		"cap/proc": {"Cmd", "Error", "Result", "Run"},
		"cap/job":  {"Error", "Kill", "Poll", "Start"},
		"cap/fs":   {"Error", "Read", "Write"},
		"cap/git":  {"Error", "Start", "Status"},
	}
	imports := map[string]string{"proc": "cap/proc", "p": "cap/proc", "fs": "cap/fs", "strings": "strings"}
	seam := []string{"cap/fs", "cap/proc", "cap/job"}
	cases := []struct {
		name, diag string
		want       []string
	}{
		{"elsewhere", "main.go:7:7: undefined: proc.Start\n", []string{"hint (line 7): Start is in cap/job, not cap/proc"}},
		{"renamed_import", "main.go:7:7: undefined: p.Start\n", []string{"hint (line 7): Start is in cap/job, not cap/proc"}},
		{"two_packages", "main.go:3:1: undefined: fs.Start\n", []string{"hint (line 3): Start is in cap/job, not cap/fs"}},
		{"near_miss", "main.go:9:2: undefined: proc.Rnu\n", []string{"hint (line 9): cap/proc has no Rnu; did you mean proc.Run?"}},
		{"case", "main.go:9:2: undefined: proc.run (but have Run)\n", []string{"hint (line 9): cap/proc has no run; did you mean proc.Run?"}},
		{"not_exported", "main.go:9:2: name result not exported by package proc\n", []string{"hint (line 9): cap/proc has no result; did you mean proc.Result?"}},
		{"too_far", "main.go:9:2: undefined: proc.Execute\n", nil},
		{"short", "main.go:9:2: undefined: proc.X\n", nil},
		{"exported_already", "main.go:9:2: undefined: proc.Run\n", nil},
		{"std_package", "main.go:9:2: undefined: strings.Start\n", nil},
		{"unimported_qualifier", "main.go:9:2: undefined: job.Run\n", nil},
		{"other_message", "main.go:9:2: cannot use x (variable of type int) as string value\n", nil},
		{"other_file", "fs.go:9:2: undefined: proc.Start\n", nil},
		{"no_position", "undefined: proc.Start\n", nil},
		{"once_per_name", "main.go:1:1: undefined: proc.Start\nmain.go:2:1: undefined: proc.Start\n", []string{"hint (line 1): Start is in cap/job, not cap/proc"}},
		{"bounded", strings.Repeat("main.go:1:1: undefined: proc.Rux\nmain.go:1:1: undefined: fs.Kill\nmain.go:1:1: undefined: fs.Poll\nmain.go:1:1: undefined: fs.Start\n", 2),
			[]string{"hint (line 1): cap/proc has no Rux; did you mean proc.Run?", "hint (line 1): Kill is in cap/job, not cap/fs", "hint (line 1): Poll is in cap/job, not cap/fs"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := suggestFrom(c.diag, imports, seam, exports)
			if !slices.Equal(got, c.want) {
				t.Fatalf("got %q\nwant %q", got, c.want)
			}
		})
	}
	// Control for "nothing for a package the program may not import":
	// with cap/git on the seam, Start names both.
	got := suggestFrom("main.go:7:7: undefined: proc.Start\n", imports, append(slices.Clone(seam), "cap/git"), exports)
	if want := []string{"hint (line 7): Start is in cap/git and cap/job, not cap/proc"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestEditDistance: the bounded Levenshtein distance.
func TestEditDistance(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b  string
		limit int
		want  int
	}{
		{"run", "run", 3, 0}, {"rn", "run", 3, 1}, {"rnu", "run", 3, 2}, {"kitten", "sitting", 4, 3},
		{"kitten", "sitting", 3, 3}, {"", "abc", 3, 3}, {"abc", "", 5, 3}, {"a", "b", 1, 1},
		{strings.Repeat("a", maxSuggestNameBytes+1), strings.Repeat("a", maxSuggestNameBytes+1), 3, 3},
	} {
		if got := editDistance(c.a, c.b, c.limit); got != c.want {
			t.Errorf("editDistance(%q, %q, %d) = %d, want %d", c.a, c.b, c.limit, got, c.want)
		}
	}
}

// FuzzParseUndefined: the compiler-output reader is total over any text
// (hostile compiler output included): it never panics, reports a line
// only for a positioned program-file diagnostic, and the hints stay
// bounded in number and length.
func FuzzParseUndefined(f *testing.F) {
	for _, s := range []string{
		"main.go:7:7: undefined: proc.Start",
		"main.go:9:2: undefined: proc.run (but have Run)",
		"main.go:9:2: name result not exported by package proc",
		"main.go:0:0: undefined: proc.Start",
		"main.go:99999999999999999999:1: undefined: proc.Start",
		"main.go:1:1: undefined: \xff.Start",
		"main.go:1:1: undefined: proc.Ŝtart\r",
		"",
	} {
		f.Add(s)
	}
	imports := map[string]string{"proc": "cap/proc", "fs": "cap/fs"}
	seam := []string{"cap/fs", "cap/proc", "cap/job"}
	f.Fuzz(func(t *testing.T, line string) {
		ref, ok := parseUndefined(line)
		if ok && (ref.line < 1 || ref.qual == "" || ref.name == "" || !strings.HasPrefix(line, programFileName+":")) {
			t.Fatalf("%q read as %+v", line, ref)
		}
		hints := suggestions(line+"\n"+line, imports, seam)
		if len(hints) > maxSuggestions {
			t.Fatalf("%d hints", len(hints))
		}
		for _, h := range hints {
			if len(h) > 2*len(line)+256 || !utf8.ValidString(h) && utf8.ValidString(line) {
				t.Fatalf("hint %q for %q", h, line)
			}
		}
	})
}
