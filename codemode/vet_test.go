package codemode

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentloom/loom/tool"
)

// TestVetAccepts: a program a model might write is a Program with its
// source, sorted unique imports, the seam, and the source's digest.
func TestVetAccepts(t *testing.T) {
	t.Parallel()
	src := []byte(`package main

import (
	"context"
	"fmt"
	"strings"
	_ "time/tzdata"

	"cap/fs"
	str "strings"
)

func init() {}

func main() {
	ctx := context.Background()
	_ = ctx
	fmt.Println(strings.ToUpper("x"), str.ToLower("Y"), fs.Read)
}
`)
	p, err := vet(src, WorkspaceSeam())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"cap/fs", "context", "fmt", "strings", "time/tzdata"}; !slices.Equal(p.Imports, want) {
		t.Errorf("Imports = %v, want %v", p.Imports, want)
	}
	sum := sha256.Sum256(src)
	if p.Digest() != hex.EncodeToString(sum[:]) {
		t.Errorf("Digest = %s", p.Digest())
	}
	if p.Seam.Name != WorkspaceSeamName || !slices.Equal(p.Seam.Packages, WorkspaceSeam().Packages) {
		t.Errorf("Seam = %+v", p.Seam)
	}
	if p.file == nil || p.fset == nil || p.file.Name.Name != "main" {
		t.Errorf("Program holds no parsed file")
	}
	src[0] = 'X'
	if p.Source[0] != 'p' {
		t.Error("Program.Source aliases the caller's slice")
	}
}

// TestVetViolationPositions: every violation in one pass, sorted, each
// at its line:column as written, even after a //line directive.
func TestVetViolationPositions(t *testing.T) {
	t.Parallel()
	src := "package notmain\n" + // 1
		"\n" + // 2
		"import (\n" + // 3
		"\t\"os\"\n" + // 4
		"\tx \"cap/internal/wire\"\n" + // 5
		")\n" + // 6
		"\n" + // 7
		"//line other.go:100\n" + // 8
		"func f()\n" + // 9
		"\n" + // 10
		"func main(x int) { /*go:noinline*/ }\n" // 11
	_, err := vet([]byte(src), WorkspaceSeam())
	var ve *VetError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v", err)
	}
	want := []Violation{
		{rulePackageNotMain, "package notmain", 1, 9},
		{ruleImportNotAllowed, `import "os"`, 4, 2},
		{ruleImportNotAllowed, `import x "cap/internal/wire"`, 5, 4},
		{ruleLineDirective, "//line other.go:100", 8, 1},
		{ruleFuncWithoutBody, "func f", 9, 1},
		{ruleMainSignature, "func main must be declared func main()", 11, 6},
		{ruleDirectiveComment, "/*go:noinline*/", 11, 20},
	}
	if !slices.Equal(ve.Violations, want) {
		t.Fatalf("violations\n%+v\nwant\n%+v", ve.Violations, want)
	}
	if ve.Code() != CodeVetRefused || ve.Code() != tool.Code("vet_refused") {
		t.Errorf("Code = %q", ve.Code())
	}
	if !slices.Equal(ve.Allowlist, WorkspaceSeam().Allowlist()) {
		t.Error("VetError.Allowlist is not the seam's allowlist")
	}
	msg := err.Error()
	for _, v := range want {
		if line := fmt.Sprintf("main.go:%d:%d: %s: %s", v.Line, v.Column, v.Rule, v.Construct); !strings.Contains(msg, line) {
			t.Errorf("rendering lacks %q:\n%s", line, msg)
		}
	}
	for _, s := range []string{"7 violations", "vet_refused", "(denied: opens paths", "(denied: the prelude's plumbing"} {
		if !strings.Contains(msg, s) {
			t.Errorf("rendering lacks %q:\n%s", s, msg)
		}
	}
	// Both refused imports are denied with a reason naming the repair,
	// so the allowlist is not listed.
	if strings.Contains(msg, "allowed imports") {
		t.Errorf("denied imports only, yet the allowlist is listed:\n%s", msg)
	}
}

// TestVetParseExcerpt: a parse error shows its line with a caret under
// the column (tabs kept so it lines up), positioned as written.
func TestVetParseExcerpt(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, src, excerpt string
		line, col          int
	}{
		{"operand", "package main\n\nfunc main() {\n\tx := 1 +\n}\n",
			"parse error at main.go:5:1: expected operand, found '}'\n  5 | }\n    | ^\n", 5, 1},
		{"tab_aligned", "package main\n\nfunc main() {\n\tfmt.Println(\"a\" +)\n}\n",
			"parse error at main.go:4:19: expected operand, found ')'\n  4 | \tfmt.Println(\"a\" +)\n    | \t                 ^\n", 4, 19},
		{"after_line_directive", "package main\n//line x.go:900\nfunc main() { ) }\n",
			"parse error at main.go:3:15: expected statement, found ')'\n  3 | func main() { ) }\n    |               ^\n", 3, 15},
		{"unicode_before_column", "package main\n\nvar s = \"héllo\" +\n",
			"parse error at main.go:3:20: expected operand, found 'EOF'\n  3 | var s = \"héllo\" +\n    | " + strings.Repeat(" ", 17) + "^\n", 3, 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := vet([]byte(c.src), WorkspaceSeam())
			var ve *VetError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v", err)
			}
			if ve.Parse != c.excerpt {
				t.Fatalf("excerpt\n%q\nwant\n%q", ve.Parse, c.excerpt)
			}
			first := ve.Violations[slices.IndexFunc(ve.Violations, func(v Violation) bool { return v.Rule == ruleParseError })]
			if first.Line != c.line || first.Column != c.col {
				t.Errorf("parse violation at %d:%d, want %d:%d", first.Line, first.Column, c.line, c.col)
			}
			if !strings.Contains(err.Error(), c.excerpt) {
				t.Errorf("rendering lacks the excerpt:\n%s", err)
			}
		})
	}
}

// TestVetParseErrorStillChecks: when the file does not parse, comments
// and cleanly parsed imports are still checked in the same pass.
func TestVetParseErrorStillChecks(t *testing.T) {
	t.Parallel()
	src := "package main\n\nimport \"os\"\n\n//go:linkname a b\nfunc main() { ) }\n\n//go:embed late\n"
	_, err := vet([]byte(src), WorkspaceSeam())
	want := []string{ruleDirectiveComment, ruleDirectiveComment, ruleImportNotAllowed, ruleParseError, ruleParseError}
	if got := rulesOf(t, err); !slices.Equal(got, want) {
		t.Fatalf("rules %v, want %v\n%v", got, want, err)
	}
}

// TestVetExcerptBounded: a parse error far into a huge line shows a
// window of at most maxExcerptBytes, with the caret inside it.
func TestVetExcerptBounded(t *testing.T) {
	t.Parallel()
	src := "package main\n\nvar s = \"" + strings.Repeat("a", 5000) + "\" + )\n\nfunc main() {}\n"
	_, err := vet([]byte(src), WorkspaceSeam())
	var ve *VetError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v", err)
	}
	lines := strings.Split(ve.Parse, "\n")
	if len(lines) != 4 {
		t.Fatalf("excerpt has %d lines: %q", len(lines), ve.Parse)
	}
	code, caret := lines[1], lines[2]
	if len(code) > maxExcerptBytes+len("  3 | ") {
		t.Errorf("excerpt line is %d bytes", len(code))
	}
	at := strings.IndexByte(caret, '^')
	if at < 0 || at >= len(code) || code[at] != ')' {
		t.Errorf("caret at %d does not sit under ')':\n%s\n%s", at, code, caret)
	}
}

// TestVetRenderingBounded: thousands of violations render at most
// maxViolationsShown lines, count the rest, and stay under
// maxVetErrorBytes even with a huge allowlist; constructs are printable
// and bounded.
func TestVetRenderingBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("package main\n\nfunc main() {}\n")
	n := 0
	for b.Len() < maxSourceBytes-200 {
		fmt.Fprintf(&b, "//go:x \x1b[31m%s\n", strings.Repeat("y", n%300))
		n++
	}
	seam := Seam{Name: "big"}
	for i := range 2000 {
		seam.Packages = append(seam.Packages, fmt.Sprintf("cap/p%04d", i))
	}
	_, err := vet([]byte(b.String()), seam)
	var ve *VetError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v", err)
	}
	if len(ve.Violations) != n {
		t.Fatalf("%d violations, want %d", len(ve.Violations), n)
	}
	msg := err.Error()
	if len(msg) > maxVetErrorBytes {
		t.Fatalf("rendering is %d bytes, over %d", len(msg), maxVetErrorBytes)
	}
	if got := strings.Count(msg, "directive_comment:"); got != maxViolationsShown {
		t.Errorf("%d violations itemised, want %d", got, maxViolationsShown)
	}
	if !strings.Contains(msg, fmt.Sprintf("... and %d more", n-maxViolationsShown)) {
		t.Errorf("rendering does not count the rest")
	}
	if strings.Contains(msg, "\x1b") {
		t.Error("rendering carries an escape sequence")
	}
	for _, v := range ve.Violations {
		if len(v.Construct) > maxConstructBytes {
			t.Fatalf("construct of %d bytes", len(v.Construct))
		}
	}
}

// TestVetRenderingSmall: one violation renders without the count line
// and in the singular.
func TestVetRenderingSmall(t *testing.T) {
	t.Parallel()
	_, err := vet([]byte(prog(`import "os"`, "")), WorkspaceSeam())
	msg := err.Error()
	if !strings.Contains(msg, ": 1 violation\n") || strings.Contains(msg, "more") {
		t.Fatalf("rendering:\n%s", msg)
	}
}

// TestVetWholeSourceViolation: a whole-source violation renders with no
// position.
func TestVetWholeSourceViolation(t *testing.T) {
	t.Parallel()
	_, err := vet(make([]byte, maxSourceBytes+1), WorkspaceSeam())
	var ve *VetError
	if !errors.As(err, &ve) || len(ve.Violations) != 1 || ve.Violations[0].Line != 0 {
		t.Fatalf("err = %v", err)
	}
	if want := fmt.Sprintf("source_too_large: %d bytes, over the %d-byte limit", maxSourceBytes+1, maxSourceBytes); !strings.Contains(err.Error(), "\n  "+want+"\n") {
		t.Fatalf("rendering lacks %q:\n%s", want, err)
	}
}

// TestTruncateUTF8: cuts at a rune boundary within the bound.
func TestTruncateUTF8(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdefghij", 10, "abcdefghij"},
		{"abcdefghijk", 10, "abcdefg..."},
		{"ééééé", 8, "éé..."},
	} {
		if got := truncateUTF8(c.s, c.n); got != c.want || len(got) > c.n {
			t.Errorf("truncateUTF8(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

// TestVetNamesTheAllowlistOnlyWhenNeeded: the allowlist helps repair an
// import no reason covers and nothing else, so a refusal without one
// (a parse error, a denied import, a withheld or misspelt capability
// package, which name their own repair) leaves it out; an unknown path
// gets it, the capability packages by name and the standard ones
// grouped.
func TestVetNamesTheAllowlistOnlyWhenNeeded(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, src string
		listed    bool
		has       string
	}{
		{"parse error", "package main\n\nfunc main() { x := }\n", false, "parse_error"},
		{"denied", "package main\n\nimport \"os\"\n\nfunc main() { os.Exit(0) }\n", false, "files go through cap/fs"},
		{"cap typo", "package main\n\nimport \"cap/file\"\n\nfunc main() { file.Read() }\n", false, "did you mean cap/fs?"},
		{"withheld", "package main\n\nimport \"cap/mcp/x\"\n\nfunc main() {}\n", false, "not offered"},
		{"unknown", "package main\n\nimport \"github.com/pkg/errors\"\n\nfunc main() {}\n", true,
			"allowed imports (workspace seam): cap/execution, cap/fs, cap/job"},
		{"unknown beside denied", "package main\n\nimport (\n\t\"os\"\n\t\"example.com/x\"\n)\n\nfunc main() {}\n", true,
			"(fs_read cap:// describes them), and the standard packages bufio bytes cmp compress/{bzip2,"},
	} {
		_, err := vet([]byte(c.src), WorkspaceSeam())
		if err == nil {
			t.Fatalf("%s: accepted", c.name)
		}
		msg := err.Error()
		if got := strings.Contains(msg, "allowed imports"); got != c.listed {
			t.Errorf("%s: allowlist listed %v, want %v:\n%s", c.name, got, c.listed, msg)
		}
		if !strings.Contains(msg, c.has) {
			t.Errorf("%s: rendering lacks %q:\n%s", c.name, c.has, msg)
		}
	}
}

// TestVetNamesTheCapPackages: an unknown cap/ import names the seam's
// capability packages and the nearest of them, by edit distance or
// prefix; a name near none gets the list without a guess.
func TestVetNamesTheCapPackages(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		path, seam, want string
	}{
		{"cap/file", WorkspaceSeamName, "cap/fs"},
		{"cap/exec", WorkspaceSeamName, "cap/execution"},
		{"cap/process", WorkspaceSeamName, "cap/proc"},
		{"cap/note", WorkspaceSeamName, "cap/notes"},
		{"cap/strands", OrchestrationSeamName, "cap/strand"},
		{"cap/zzzzzzzz", WorkspaceSeamName, ""},
		{"cap/fs", OrchestrationSeamName, ""},
	} {
		seam := WorkspaceSeam()
		if c.seam == OrchestrationSeamName {
			seam = OrchestrationSeam()
		}
		_, err := vet([]byte("package main\n\nimport _ \""+c.path+"\"\n\nfunc main() {}\n"), seam)
		if err == nil {
			t.Fatalf("%s: accepted", c.path)
		}
		msg := err.Error()
		head := "(not offered: no capability package " + c.path + " on the " + c.seam + " seam"
		if !strings.Contains(msg, head) {
			t.Errorf("%s: rendering lacks %q:\n%s", c.path, head, msg)
		}
		for _, p := range seam.Packages {
			if !strings.Contains(msg, p) {
				t.Errorf("%s: rendering does not name %s:\n%s", c.path, p, msg)
			}
		}
		if !strings.Contains(msg, "seam. It offers ") && !strings.Contains(msg, "? It offers ") {
			t.Errorf("%s: the offered packages are not a sentence of their own:\n%s", c.path, msg)
		}
		guess := "did you mean " + c.want + "?"
		if c.want == "" {
			guess = "did you mean"
		}
		if got := strings.Contains(msg, guess); got != (c.want != "") {
			t.Errorf("%s: %q present %v:\n%s", c.path, guess, got, msg)
		}
		if strings.Contains(msg, "allowed imports") {
			t.Errorf("%s: the allowlist is listed:\n%s", c.path, msg)
		}
	}
}
