package loom_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// uncodedErrors are the exported error types of public packages that
// carry no code of their own, each with the reason. Every other exported
// error type implements tool.CodedError.
var uncodedErrors = map[string]string{
	"sandbox.MissingLayer": "the cause a DenialLayerRequired denial wraps; the denial carries the code",
}

// errorType is one type of the module that has an Error method, as the
// walk saw it.
type errorType struct {
	// key is the package's directory, slash-separated and relative to the
	// module root, a dot and the type's name: "sandbox.Denial".
	key        string
	exported   bool
	internal   bool // its package is under an internal directory
	codeField  bool // a struct with a field named Code
	codeMethod bool // a method named Code
	errorCode  bool // a method named ErrorCode
}

// coded reports whether t carries a code in any form.
func (t errorType) coded() bool { return t.codeField || t.codeMethod || t.errorCode }

// errorTypes returns the error types (types with an Error method) that
// files, grouped by their package's directory, declare, sorted by key.
func errorTypes(pkgs map[string][]*ast.File) []errorType {
	var out []errorType
	for dir, files := range pkgs {
		fields := map[string]bool{}
		methods := map[string]map[string]bool{}
		for _, f := range files {
			for _, decl := range f.Decls {
				switch d := decl.(type) {
				case *ast.GenDecl:
					for _, spec := range d.Specs {
						ts, ok := spec.(*ast.TypeSpec)
						if !ok {
							continue
						}
						st, ok := ts.Type.(*ast.StructType)
						if !ok {
							continue
						}
						for _, fl := range st.Fields.List {
							for _, n := range fl.Names {
								if n.Name == "Code" {
									fields[ts.Name.Name] = true
								}
							}
						}
					}
				case *ast.FuncDecl:
					if d.Recv == nil || len(d.Recv.List) != 1 {
						continue
					}
					recv := d.Recv.List[0].Type
					if star, ok := recv.(*ast.StarExpr); ok {
						recv = star.X
					}
					if idx, ok := recv.(*ast.IndexExpr); ok {
						recv = idx.X
					}
					id, ok := recv.(*ast.Ident)
					if !ok {
						continue
					}
					if methods[id.Name] == nil {
						methods[id.Name] = map[string]bool{}
					}
					methods[id.Name][d.Name.Name] = true
				}
			}
		}
		internal := slices.Contains(strings.Split(dir, "/"), "internal")
		for name, m := range methods {
			if !m["Error"] {
				continue
			}
			out = append(out, errorType{key: dir + "." + name, exported: ast.IsExported(name), internal: internal,
				codeField: fields[name], codeMethod: m["Code"], errorCode: m["ErrorCode"]})
		}
	}
	slices.SortFunc(out, func(a, b errorType) int { return strings.Compare(a.key, b.key) })
	return out
}

// codeProblems names every error type that breaks the rule: an error type
// with a Code field or a Code method implements ErrorCode, and so does
// every exported error type of a public package but those in uncoded.
func codeProblems(types []errorType, uncoded map[string]string) []string {
	var out []string
	for _, t := range types {
		switch {
		case t.errorCode:
		case t.codeField || t.codeMethod:
			out = append(out, t.key+" carries a Code but has no ErrorCode method (tool.CodedError): tool.CodeOf cannot read it")
		case t.exported && !t.internal && uncoded[t.key] == "":
			out = append(out, t.key+" is an exported error without a code: give it a Code field and an ErrorCode method, or list it in uncodedErrors with the reason")
		}
	}
	return out
}

// modulePackages parses every non-test Go file of the module under root
// (skipping testdata, directories starting with "." or "_", and nested
// modules), grouped by directory.
func modulePackages(t *testing.T, root string) map[string][]*ast.File {
	t.Helper()
	fset := token.NewFileSet()
	pkgs := map[string][]*ast.File{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == root {
				return nil
			}
			name := d.Name()
			if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(rel)
		pkgs[dir] = append(pkgs[dir], f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// TestEveryCodedErrorHasErrorCode: every error type of the module that
// carries a code (a Code field or a Code method) implements
// tool.CodedError, so tool.CodeOf reads it without a list of types that a
// new one could be missing from; every exported error type of a public
// package carries a code unless uncodedErrors says why not.
func TestEveryCodedErrorHasErrorCode(t *testing.T) {
	types := errorTypes(modulePackages(t, "."))
	// The walk must see the module: a few coded types it cannot miss.
	var coded []string
	for _, ty := range types {
		if ty.coded() {
			coded = append(coded, ty.key)
		}
	}
	for _, want := range []string{"agent.Refusal", "sandbox.Denial", "codemode.channelFault", "codemode.VetError", "hashline.HunkError", "tool.PathError", "plane.Error"} {
		if !slices.Contains(coded, want) {
			t.Errorf("the walk did not find the coded error %s (found %v)", want, coded)
		}
	}
	for key := range uncodedErrors {
		if !slices.ContainsFunc(types, func(ty errorType) bool { return ty.key == key && !ty.coded() }) {
			t.Errorf("uncodedErrors lists %s, which is no uncoded error type of the module: remove it", key)
		}
	}
	for _, p := range codeProblems(types, uncodedErrors) {
		t.Error(p)
	}
}

// TestCodeProblemsFindsAForgottenErrorCode is the control of
// TestEveryCodedErrorHasErrorCode: over a package written for it, the
// check names the coded error types that lack ErrorCode (a Code field, a
// Code method) and an exported error without a code, and passes the rest:
// a type with ErrorCode, a struct with a Code field that is no error, an
// unexported uncoded error and a listed one.
func TestCodeProblemsFindsAForgottenErrorCode(t *testing.T) {
	const src = `package fixture

type FieldError struct{ Code string }

func (e *FieldError) Error() string { return e.Code }

type MethodError struct{}

func (e *MethodError) Error() string { return "m" }
func (e *MethodError) Code() string  { return "m" }

type Good struct{ Code string }

func (e *Good) Error() string     { return e.Code }
func (e *Good) ErrorCode() string { return e.Code }

type Shape struct{ Code string }

type Bare struct{}

func (Bare) Error() string { return "bare" }

type Listed struct{}

func (*Listed) Error() string { return "listed" }

type quiet struct{}

func (quiet) Error() string { return "quiet" }
`
	f, err := parser.ParseFile(token.NewFileSet(), "fixture.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	got := codeProblems(errorTypes(map[string][]*ast.File{"fixture": {f}}), map[string]string{"fixture.Listed": "a cause"})
	var keys []string
	for _, p := range got {
		keys = append(keys, p[:strings.IndexByte(p, ' ')])
	}
	if want := []string{"fixture.Bare", "fixture.FieldError", "fixture.MethodError"}; !slices.Equal(keys, want) {
		t.Fatalf("problems %q, want them for %v", got, want)
	}
	// A type in an internal package may stay uncoded.
	internal := codeProblems(errorTypes(map[string][]*ast.File{path.Join("x", "internal", "y"): {f}}), nil)
	if len(internal) != 2 {
		t.Fatalf("in an internal package: %q, want the two coded types only", internal)
	}
}
