package codemode

import (
	"errors"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// vetRules is every rule a Violation may name.
var vetRules = []string{
	ruleSourceTooLarge, ruleSourceNotUTF8, ruleSourceNUL, ruleParseError, rulePackageNotMain,
	ruleMainMissing, ruleMainSignature, ruleImportNotAllowed, ruleImportNotPlain, ruleCgoImport,
	ruleDirectiveComment, ruleLineDirective, ruleBuildConstraint, ruleFuncWithoutBody,
}

// checkVetOutcome holds Vet's contract for one source: it never panics
// (the fuzzer reports a panic), a refusal is a bounded *VetError of known
// rules, and an accepted program, re-parsed independently with
// go/parser's own comment list, imports only allowlisted, undenied paths,
// carries no directive comment, and has package main, func main() and a
// body on every function.
func checkVetOutcome(t *testing.T, src []byte) {
	t.Helper()
	seam := WorkspaceSeam()
	p, err := vet(src, seam)
	if err != nil {
		var ve *VetError
		if !errors.As(err, &ve) {
			t.Fatalf("error %T is not a *VetError", err)
		}
		if len(ve.Violations) == 0 {
			t.Fatal("a refusal with no violations")
		}
		for _, v := range ve.Violations {
			if !slices.Contains(vetRules, v.Rule) || len(v.Construct) > maxConstructBytes || v.Line < 0 || v.Column < 0 {
				t.Fatalf("bad violation %+v", v)
			}
		}
		if msg := err.Error(); len(msg) > maxVetErrorBytes || !utf8.ValidString(msg) {
			t.Fatalf("rendering of %d bytes (valid UTF-8 %v)", len(msg), utf8.ValidString(msg))
		}
		return
	}
	if len(src) > maxSourceBytes || !utf8.Valid(src) || slices.Contains(src, 0) {
		t.Fatalf("accepted a source of %d bytes, UTF-8 %v", len(src), utf8.Valid(src))
	}
	fset := token.NewFileSet()
	f, perr := parser.ParseFile(fset, programFileName, src, parser.ParseComments)
	if perr != nil {
		t.Fatalf("accepted a source go/parser refuses: %v", perr)
	}
	if f.Name.Name != "main" {
		t.Fatalf("accepted package %s", f.Name.Name)
	}
	allow := seam.Allowlist()
	var imports []string
	for _, spec := range f.Imports {
		path, err := strconv.Unquote(spec.Path.Value)
		if err != nil || spec.Path.Value[1:len(spec.Path.Value)-1] != path {
			t.Fatalf("accepted import literal %s", spec.Path.Value)
		}
		if _, denied := denialOf(path); denied || !slices.Contains(allow, path) {
			t.Fatalf("accepted import %q", path)
		}
		imports = append(imports, path)
	}
	slices.Sort(imports)
	if !slices.Equal(slices.Compact(imports), p.Imports) {
		t.Fatalf("Imports %v, parsed %v", p.Imports, imports)
	}
	for _, g := range f.Comments {
		for _, c := range g.List {
			text := c.Text[2:]
			if strings.HasPrefix(text, "go:") || strings.HasPrefix(text, "line ") || constraint.IsGoBuild(c.Text) || constraint.IsPlusBuild(c.Text) {
				t.Fatalf("accepted comment %q", c.Text)
			}
		}
	}
	hasMain := false
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok {
			if fd.Body == nil {
				t.Fatalf("accepted func %s without a body", fd.Name.Name)
			}
			if fd.Recv == nil && fd.Name.Name == "main" {
				hasMain = fd.Type.TypeParams.NumFields() == 0 && fd.Type.Params.NumFields() == 0 && fd.Type.Results.NumFields() == 0
			}
		}
	}
	if !hasMain {
		t.Fatal("accepted a program without func main()")
	}
	if string(p.Source) != string(src) {
		t.Fatal("Program.Source differs from the source")
	}
}

// FuzzVet runs checkVetOutcome on generated sources, seeded with every
// bypass case and accepted control.
func FuzzVet(f *testing.F) {
	for _, c := range bypassCases {
		if len(c.src) <= maxSourceBytes {
			f.Add([]byte(c.src))
		}
	}
	f.Add([]byte(prog("import (\n\t\"fmt\"\n\t\"cap/fs\"\n)", "var _ = fmt.Sprint\nvar _ = fs.Read")))
	f.Add([]byte(prog("", "// line 3 is fine\n// go:x\n//line\n")))
	f.Add([]byte("package main\n\nfunc main() { /* unterminated"))
	f.Fuzz(func(t *testing.T, src []byte) {
		checkVetOutcome(t, src)
	})
}

// TestVetOutcomeSeeds runs the fuzz property on the seeds in every plain
// test run.
func TestVetOutcomeSeeds(t *testing.T) {
	t.Parallel()
	for _, c := range bypassCases {
		checkVetOutcome(t, []byte(c.src))
	}
	checkVetOutcome(t, []byte(atLimit(maxSourceBytes)))
	checkVetOutcome(t, []byte(prog(`import . "strings"`, "var _ = ToUpper")))
}
