package tool

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// snakeCase is the one spelling of a code.
var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// declaredCode is one code constant found in the module's source.
type declaredCode struct {
	name, value, at string
}

// moduleCodes parses every non-test Go file of the module and returns the
// string constants that are codes: those of a type whose name ends in
// Code, and untyped ones whose name starts or ends with Code.
func moduleCodes(t *testing.T) []declaredCode {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var codes []declaredCode
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				codes = append(codes, codeSpecs(fset, root, spec.(*ast.ValueSpec))...)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return codes
}

func codeSpecs(fset *token.FileSet, root string, vs *ast.ValueSpec) []declaredCode {
	typed := false
	switch ty := vs.Type.(type) {
	case *ast.Ident:
		typed = strings.HasSuffix(ty.Name, "Code")
	case *ast.SelectorExpr:
		typed = strings.HasSuffix(ty.Sel.Name, "Code")
	case nil:
	default:
		return nil
	}
	var out []declaredCode
	for i, name := range vs.Names {
		if i >= len(vs.Values) {
			break
		}
		lit, ok := vs.Values[i].(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			continue
		}
		if !typed && vs.Type == nil && !strings.HasPrefix(name.Name, "Code") && !strings.HasSuffix(name.Name, "Code") {
			continue
		}
		if !typed && vs.Type != nil {
			continue
		}
		v, err := strconv.Unquote(lit.Value)
		if err != nil {
			continue
		}
		pos := fset.Position(name.Pos())
		rel, _ := filepath.Rel(root, pos.Filename)
		out = append(out, declaredCode{name: name.Name, value: v, at: rel + ":" + strconv.Itoa(pos.Line)})
	}
	return out
}

// sharedCodes are codes two packages declare on purpose, with the number
// of declarations: the same failure met on two surfaces. mcp_tool_error
// is an MCP tool reporting failure, answered to the model by mcpclient's
// namespaced tool and to a program by code mode's cap/mcp packages
// (codemode/internal/mcpgen, which cannot import the MCP client).
var sharedCodes = map[string]int{"mcp_tool_error": 2}

// TestCodesAreSnakeCaseAndDeclaredOnce holds the module's failure
// contract: every code is snake_case, and one code string is declared by
// one constant, so it means one thing wherever it appears.
func TestCodesAreSnakeCaseAndDeclaredOnce(t *testing.T) {
	codes := moduleCodes(t)
	if len(codes) < 50 {
		t.Fatalf("found only %d code constants: the scan is broken", len(codes))
	}
	byValue := map[string][]string{}
	for _, c := range codes {
		if !snakeCase.MatchString(c.value) {
			t.Errorf("%s (%s) = %q is not snake_case", c.name, c.at, c.value)
		}
		byValue[c.value] = append(byValue[c.value], c.name+" ("+c.at+")")
	}
	values := make([]string, 0, len(byValue))
	for v := range byValue {
		values = append(values, v)
	}
	sort.Strings(values)
	for _, v := range values {
		if decl := byValue[v]; len(decl) > 1 && len(decl) != sharedCodes[v] {
			t.Errorf("code %q is declared %d times: %s", v, len(decl), strings.Join(decl, ", "))
		}
	}
}

// TestFailIsNeverGivenALiteral: every failing outcome's code is a named
// constant, so none escapes the declared-once check above.
func TestFailIsNeverGivenALiteral(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	found := 0
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			name := ""
			switch fn := call.Fun.(type) {
			case *ast.Ident:
				name = fn.Name
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			}
			if !strings.HasSuffix(name, "Fail") {
				return true
			}
			found++
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				t.Errorf("%s: %s(%s, …) takes a literal code; declare it as a constant", fset.Position(call.Pos()), name, lit.Value)
			}
			return true
		})
		return nil
	})
	if found < 50 {
		t.Fatalf("found only %d Fail calls: the scan is broken", found)
	}
}

// TestCodeScanFindsViolations is the control: the scan reports a
// PascalCase code and a code declared twice.
func TestCodeScanFindsViolations(t *testing.T) {
	src := "package x\n\ntype Code string\n\nconst (\n\tCodeA Code = \"IndexBusy\"\n\tCodeB Code = \"dup\"\n)\n\nconst CodeC = \"dup\"\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "/m/x/x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []declaredCode
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			for _, s := range g.Specs {
				got = append(got, codeSpecs(fset, "/m", s.(*ast.ValueSpec))...)
			}
		}
	}
	if len(got) != 3 || snakeCase.MatchString(got[0].value) || got[1].value != got[2].value {
		t.Fatalf("scan found %+v, want IndexBusy and dup twice", got)
	}
}
