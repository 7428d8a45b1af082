package codemode

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentloom/loom/tool"
)

// maxDescribedAPIBytes bounds describeSeam's rendering of the workspace
// seam. The code_mode tool's description and schema together stay within
// maxSurfaceBytes; with one seam its own prose takes about 3 KiB, so the
// rendered API gets 4.5 KiB. A test holds WorkspaceSeam's rendering within
// it; a host serving both seams renders their packages once each, held by
// the surface bound alone.
const maxDescribedAPIBytes = 4608

// synthPrelude is a small prelude tree exercising every shape the compact
// rendering handles, plus broken packages for the refusals.
func synthPrelude() fstest.MapFS {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	return fstest.MapFS{
		"internal/x/x.go": file(`package x

// E is the shared error.
type E struct {
	Code  string // the code to switch on
	cause error  // the hidden cause
}

// Error renders it.
func (e *E) Error() string { return e.Code }

// Unwrap is the cause.
func (e *E) Unwrap() error { return e.cause }

func (e *E) at() {}

// Leaky is exported from the internal package.
type Leaky struct{ W W }

// W is internal.
type W int
`),
		"a/a.go": file(`// Package a is a test package. It has a second sentence.
package a

import (
	"context"

	"cap/internal/x"
)

// E is x's error.
type E = x.E

// Mode is a mode.
type Mode int

// Modes.
const (
	ModeA Mode = iota
	ModeB
)

// Limit is plain.
const Limit = 3

const hidden = 4

// Derived names hidden.
const Derived = hidden + 1

// Default is a var.
var Default = Mode(1)

// S is a struct.
type S struct {
	Name string
	n    int
	Next *S
	Opts map[string][]Mode
}

// Do does.
func (s *S) Do(ctx context.Context, m Mode) (*S, error) { return nil, nil }

func (s S) hidden() {}

// I is an interface.
type I interface {
	Get(k string) (Mode, bool)
}

// Map maps.
func Map[T any](xs []T, f func(T) T) []T { return nil }

// New makes an S.
func New() *S { return nil }

func unexported() {}
`),
		"a/a_test.go": file("package a\n\nfunc TestIgnored() {}\n"),
		"b/b.go": file(`// Package b aliases the same error.
package b

import "cap/internal/x"

// E is the error again.
type E = x.E

// F is a function.
func F(e *E) bool { return e != nil }
`),
		"leak/leak.go":   file("package leak\n\nimport \"cap/internal/x\"\n\n// F leaks.\nfunc F() x.W { return 0 }\n"),
		"leak2/leak2.go": file("package leak2\n\nimport \"cap/internal/x\"\n\n// L leaks through an alias's fields.\ntype L = x.Leaky\n"),
		"unexp/unexp.go": file("package unexp\n\ntype t int\n\n// F names t.\nfunc F() t { return 0 }\n"),
		"field/field.go": file("package field\n\ntype t int\n\n// S has an exported field of an unexported type.\ntype S struct{ T t }\n"),
		"bad/bad.go":     file("package bad\n\nfunc {\n"),
	}
}

func TestDescribeSeamRendersEachShape(t *testing.T) {
	t.Parallel()
	got, err := describeSeam(synthPrelude(), Seam{Packages: []string{"cap/a", "cap/b"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `import "cap/a"
type a.E struct{ Code string }
type a.Mode int
const a.ModeA a.Mode
const a.ModeB a.Mode
const a.Limit = 3
const a.Derived
var a.Default
type a.S struct{ Name string; Next *a.S; Opts map[string][]a.Mode }
func (*a.S) Do(ctx, m a.Mode) (*a.S, error)
type a.I interface{ Get(k string) (a.Mode, bool) }
func a.Map[T any](xs []T, f func(T) T) []T
func a.New() *a.S

import "cap/b"
func b.F(e *b.E) bool
`
	if got != want {
		t.Fatalf("rendering:\n%s\nwant:\n%s", got, want)
	}
}

func TestDescribeSeamRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		pkgs  []string
		code  tool.Code
		cause bool // an underlying parse error is kept
	}{
		{"missing package", []string{"cap/a", "cap/none"}, CodeUnknownCapPackage, false},
		{"internal type in a signature", []string{"cap/leak"}, CodePreludeUndescribable, false},
		{"internal type behind an alias", []string{"cap/leak2"}, CodePreludeUndescribable, false},
		{"unexported type in a signature", []string{"cap/unexp"}, CodePreludeUndescribable, false},
		{"unexported type of an exported field", []string{"cap/field"}, CodePreludeUndescribable, false},
		{"source that does not parse", []string{"cap/bad"}, CodePreludeUndescribable, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := describeSeam(synthPrelude(), Seam{Packages: tc.pkgs})
			var de *describeError
			if !errors.As(err, &de) {
				t.Fatalf("want a *describeError, got %v (output %q)", err, out)
			}
			if de.Code() != tc.code {
				t.Fatalf("code %s, want %s: %v", de.Code(), tc.code, err)
			}
			if (errors.Unwrap(err) != nil) != tc.cause {
				t.Fatalf("cause %v, want one: %v", errors.Unwrap(err), tc.cause)
			}
			if out != "" {
				t.Fatalf("a refusal rendered %q", out)
			}
			if tc.code == CodeUnknownCapPackage && (!slices.Equal(de.Offered, []string{"cap/a", "cap/b", "cap/bad", "cap/field", "cap/leak", "cap/leak2", "cap/unexp"}) || !strings.Contains(err.Error(), "cap/leak2")) {
				t.Fatalf("the refusal does not name the prelude's packages: %v %q", err, de.Offered)
			}
		})
	}
}

func TestDescribeSeamSkipsWhatVetRefuses(t *testing.T) {
	t.Parallel()
	only, err := describeSeam(synthPrelude(), Seam{Packages: []string{"cap/a"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := describeSeam(synthPrelude(), Seam{Packages: []string{"cap/internal/x", "os", "cap/a", "cap/a", "internal/x"}})
	if err != nil {
		t.Fatal(err)
	}
	if got != only {
		t.Fatalf("a seam listing internal, non-cap and duplicate entries rendered:\n%s\nwant only cap/a:\n%s", got, only)
	}
}

func TestDescribeSeamWorkspaceWithinBudget(t *testing.T) {
	t.Parallel()
	// As a host without a language server serves it: cap/lsp, offered
	// only with one, adds its own listing (TestDescribeSeamLSP).
	ws := WorkspaceSeam()
	ws.Packages = slices.DeleteFunc(ws.Packages, func(p string) bool { return p == "cap/lsp" })
	got, err := describeSeam(embeddedPrelude(), ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("workspace seam API: %d bytes of %d", len(got), maxDescribedAPIBytes)
	if len(got) > maxDescribedAPIBytes {
		t.Fatalf("the workspace seam's API renders in %d bytes, over maxDescribedAPIBytes (%d):\n%s", len(got), maxDescribedAPIBytes, got)
	}
	again, err := describeSeam(embeddedPrelude(), ws)
	if err != nil || again != got {
		t.Fatalf("a second rendering differs (err %v)", err)
	}
}

// maxDescribedLSPBytes bounds describeSeam's rendering of cap/lsp, which
// a host with a language server adds to the workspace seam's.
const maxDescribedLSPBytes = 2304

// TestDescribeSeamLSP: cap/lsp renders within its own bound.
func TestDescribeSeamLSP(t *testing.T) {
	t.Parallel()
	got, err := describeSeam(embeddedPrelude(), Seam{Packages: []string{"cap/lsp"}})
	if err != nil || len(got) > maxDescribedLSPBytes || !strings.Contains(got, "func lsp.Rename(ctx, at lsp.Position, newName string) (lsp.Edit, error)") {
		t.Fatalf("cap/lsp renders in %d bytes (at most %d), err %v:\n%s", len(got), maxDescribedLSPBytes, err, got)
	}
}

// exportedSurface lists, straight from the prelude's syntax (not through
// go/doc), the line prefixes describeSeam must render for package path:
// every exported function, method of an exported type, type, constant
// and variable.
func exportedSurface(t *testing.T, tree fs.FS, importPath string) []string {
	t.Helper()
	dir := strings.TrimPrefix(importPath, "cap/")
	name := path.Base(dir)
	entries, err := fs.ReadDir(tree, dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		src, err := fs.ReadFile(tree, dir+"/"+e.Name())
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), e.Name(), src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					want = append(want, "func "+name+"."+d.Name.Name+"(")
					continue
				}
				recv := d.Recv.List[0].Type
				star := ""
				if s, ok := recv.(*ast.StarExpr); ok {
					recv, star = s.X, "*"
				}
				if id, ok := recv.(*ast.Ident); ok && id.IsExported() {
					want = append(want, "func ("+star+name+"."+id.Name+") "+d.Name.Name+"(")
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							want = append(want, "type "+name+"."+s.Name.Name+" ")
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								want = append(want, d.Tok.String()+" "+name+"."+n.Name)
							}
						}
					}
				}
			}
		}
	}
	return want
}

func TestDescribeSeamNamesEveryExport(t *testing.T) {
	t.Parallel()
	seam := WorkspaceSeam()
	got, err := describeSeam(embeddedPrelude(), seam)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(got, "\n")
	has := func(prefix string) bool {
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return true
			}
		}
		return false
	}
	funcs := 0
	for _, p := range seam.Packages {
		if !has(`import "` + p + `"`) {
			t.Errorf("no import line for %s", p)
		}
		for _, w := range exportedSurface(t, embeddedPrelude(), p) {
			if strings.HasPrefix(w, "func ") {
				funcs++
			}
			if p != seam.Packages[0] && strings.HasPrefix(w, "type ") && strings.HasSuffix(w, ".Error ") {
				continue // the one shared Error is rendered once, under the first package
			}
			if !has(w) {
				t.Errorf("%s: no line starts %q", p, w)
			}
		}
	}
	// The shared Error is rendered once, under the first package's name,
	// with its fields and without the methods every error has.
	first := path.Base(seam.Packages[0])
	if !has("type "+first+".Error struct{ ") || has("func (*"+first+".Error) Error(") {
		t.Errorf("the shared Error is not rendered once, fields only, under %s:\n%s", first, got)
	}
	if funcs < len(seam.Packages) {
		t.Fatalf("found only %d exported functions in %d packages: the enumeration is broken", funcs, len(seam.Packages))
	}
}

// hiddenUses parses rendered back, line by line, as Go declarations (the
// declared name's qualifier dropped: "func fs.Read(" parses as
// "func Read(") and lists every name in it a program importing pkgs could
// not write: a declared name or qualifier outside pkgs, an unexported
// declared name, struct field, interface method or qualified name, and
// any bare name used as a type or value that is neither predeclared nor a
// type parameter. It fails t when a line does not parse or nothing was
// checked.
func hiddenUses(t *testing.T, rendered string, pkgs map[string]bool) []string {
	t.Helper()
	var bad []string
	checked := 0
	for _, line := range strings.Split(rendered, "\n") {
		if line == "" || strings.HasPrefix(line, "import ") {
			continue
		}
		kw, rest, _ := strings.Cut(line, " ")
		if kw == "func" && strings.HasPrefix(rest, "(") {
			// A method: "(*fs.File) Text() string" -> "(_ *fs.File) Text() string".
			rest = "(_ " + rest[1:]
		} else {
			qual, unq, ok := strings.Cut(rest, ".")
			if !ok || !pkgs[qual] {
				bad = append(bad, "declared in "+qual)
			}
			rest = unq
		}
		f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+kw+" "+rest, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("rendered line %q does not parse back: %v", line, err)
		}
		skip := map[*ast.Ident]bool{}
		scope := map[string]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.File:
				skip[n.Name] = true
			case *ast.FuncDecl:
				if !n.Name.IsExported() {
					bad = append(bad, n.Name.Name)
				}
				skip[n.Name] = true
			case *ast.TypeSpec:
				if !n.Name.IsExported() {
					bad = append(bad, n.Name.Name)
				}
				skip[n.Name] = true
				if n.TypeParams != nil {
					for _, fd := range n.TypeParams.List {
						for _, id := range fd.Names {
							scope[id.Name] = true
						}
					}
				}
			case *ast.ValueSpec:
				for _, id := range n.Names {
					if !id.IsExported() {
						bad = append(bad, id.Name)
					}
					skip[id] = true
				}
			case *ast.StructType:
				for _, fd := range n.Fields.List {
					for _, id := range fd.Names {
						if !id.IsExported() {
							bad = append(bad, id.Name)
						}
					}
				}
			case *ast.InterfaceType:
				for _, fd := range n.Methods.List {
					for _, id := range fd.Names {
						if !id.IsExported() {
							bad = append(bad, id.Name)
						}
					}
				}
			case *ast.FuncType:
				if n.TypeParams != nil {
					for _, fd := range n.TypeParams.List {
						for _, id := range fd.Names {
							scope[id.Name] = true
						}
					}
				}
			case *ast.Field:
				for _, id := range n.Names {
					skip[id] = true
				}
			case *ast.SelectorExpr:
				checked++
				x, ok := n.X.(*ast.Ident)
				if !ok || !pkgs[x.Name] || !n.Sel.IsExported() {
					bad = append(bad, types.ExprString(n))
				}
				return false
			case *ast.Ident:
				checked++
				if !skip[n] && !scope[n.Name] && types.Universe.Lookup(n.Name) == nil {
					bad = append(bad, n.Name)
				}
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("the check found nothing to check")
	}
	return bad
}

func TestDescribeSeamNamesNoHiddenIdentifier(t *testing.T) {
	t.Parallel()
	seam := WorkspaceSeam()
	got, err := describeSeam(embeddedPrelude(), seam)
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]bool{"context": true, "time": true}
	for _, p := range seam.Packages {
		pkgs[path.Base(p)] = true
	}
	// The rendering writes a leading ctx context.Context as ctx alone;
	// spelled out again, every identifier must resolve.
	full := strings.NewReplacer("(ctx, ", "(ctx context.Context, ", "(ctx)", "(ctx context.Context)").Replace(got)
	if bad := hiddenUses(t, full, pkgs); len(bad) > 0 {
		t.Fatalf("the rendering names what a program cannot write: %q\n%s", bad, got)
	}
}

// TestHiddenUsesCatches holds the check above able to fail: a rendering
// naming the internal client, an unexported field or an unexported
// qualified name is caught, and a clean one passes.
func TestHiddenUsesCatches(t *testing.T) {
	t.Parallel()
	pkgs := map[string]bool{"fs": true, "context": true}
	for _, tc := range []struct {
		rendered string
		want     []string
	}{
		{"type fs.Error = client.Error\n", []string{"client.Error"}},
		{"type fs.Error struct{ Code string; cause error }\n", []string{"cause"}},
		{"func fs.read(ctx context.Context) error\n", []string{"read"}},
		{"func (*fs.File) text() string\n", []string{"text"}},
		{"type fs.I interface{ get() fs.T }\n", []string{"get"}},
		{"func fs.Read(ctx context.Context) File\n", []string{"File"}},
		{"func fs.Read(ctx context.Context) (fs.file, error)\n", []string{"fs.file"}},
		{"func cap.Read(ctx context.Context) error\n", []string{"declared in cap"}},
		{"const fs.Max = limit\n", []string{"limit"}},
		{"func fs.Map[T any](xs []T, f func(T) T) []T\n", nil},
		{"type fs.Error struct{ Code string }\nfunc (*fs.Error) Error() string\nfunc fs.Read(ctx context.Context, path string) (fs.File, error)\n", nil},
	} {
		if got := hiddenUses(t, tc.rendered, pkgs); !slices.Equal(got, tc.want) {
			t.Errorf("%q: found %q, want %q", tc.rendered, got, tc.want)
		}
	}
}
