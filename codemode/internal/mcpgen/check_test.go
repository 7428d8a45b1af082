package mcpgen

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"
)

// preludeDir is the prelude tree on disk, the module "cap".
const preludeDir = "../../_prelude"

// checker type-checks generated packages against the prelude's own
// cap/internal/client, and the standard library from source. One at a
// time: the importers are not safe for concurrent use.
var checker = sync.OnceValue(func() *preludeImporter {
	fset := token.NewFileSet()
	return &preludeImporter{fset: fset, std: importer.ForCompiler(fset, "source", nil), pkgs: map[string]*types.Package{}}
})

type preludeImporter struct {
	mu   sync.Mutex
	fset *token.FileSet
	std  types.Importer
	pkgs map[string]*types.Package
}

func (p *preludeImporter) Import(path string) (*types.Package, error) {
	if pkg, ok := p.pkgs[path]; ok {
		return pkg, nil
	}
	dir, ok := strings.CutPrefix(path, "cap/")
	if !ok {
		return p.std.Import(path)
	}
	entries, err := os.ReadDir(filepath.Join(preludeDir, dir))
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(p.fset, filepath.Join(preludeDir, dir, e.Name()), nil, 0)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	conf := types.Config{Importer: p}
	pkg, err := conf.Check(path, p.fset, files, nil)
	if err != nil {
		return nil, err
	}
	p.pkgs[path] = pkg
	return pkg, nil
}

// typeCheck parses and type-checks a generated package's source as the
// package cap/mcp/<name>.
func typeCheck(name string, src []byte) error {
	p := checker()
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := parser.ParseFile(p.fset, name+".go", src, parser.ParseComments)
	if err != nil {
		return err
	}
	conf := types.Config{Importer: p}
	_, err = conf.Check("cap/mcp/"+name, p.fset, []*ast.File{f}, nil)
	return err
}

// commentRule is codemode's vetter's rule for a comment (with its
// markers): "" when the toolchain honours nothing in it.
func commentRule(c string) string {
	if len(c) < 2 {
		return ""
	}
	text := c[2:]
	if c[1] == '/' {
		if strings.HasPrefix(text, "go:build") || strings.HasPrefix(strings.TrimLeftFunc(text, unicode.IsSpace), "+build") {
			return "build_constraint"
		}
	}
	switch {
	case strings.HasPrefix(text, "go:"):
		return "directive_comment"
	case strings.HasPrefix(text, "line "):
		return "line_directive"
	}
	return ""
}

// vetGenerated holds src to what the prelude passes: every comment
// free of directives, block comments and "*/", imports only of the
// standard library and cap/internal/client (never reflect, unsafe or C),
// no function without a body, every exported identifier documented.
func vetGenerated(src []byte) error {
	fset := token.NewFileSet()
	var s scanner.Scanner
	s.Init(fset.AddFile("gen.go", -1, len(src)), src, nil, scanner.ScanComments)
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok != token.COMMENT {
			continue
		}
		if rule := commentRule(lit); rule != "" {
			return fmt.Errorf("%s: %q", rule, lit)
		}
		if strings.HasPrefix(lit, "/*") || strings.Contains(lit, "*/") {
			return fmt.Errorf("block comment or */: %q", lit)
		}
	}
	f, err := parser.ParseFile(fset, "gen.go", src, parser.ParseComments)
	if err != nil {
		return err
	}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		switch p {
		case "context", "encoding/json", "cap/internal/client":
		default:
			return fmt.Errorf("imports %s", p)
		}
	}
	if f.Doc == nil {
		return fmt.Errorf("no package doc")
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Body == nil {
				return fmt.Errorf("func %s has no body", d.Name.Name)
			}
			if d.Name.IsExported() && d.Doc == nil {
				return fmt.Errorf("func %s has no doc", d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch sp := spec.(type) {
				case *ast.TypeSpec:
					if sp.Name.IsExported() && d.Doc == nil && sp.Doc == nil {
						return fmt.Errorf("type %s has no doc", sp.Name.Name)
					}
				case *ast.ValueSpec:
					if sp.Names[0].IsExported() && d.Doc == nil && sp.Doc == nil {
						return fmt.Errorf("const %s has no doc", sp.Names[0].Name)
					}
				}
			}
		}
	}
	return nil
}

// mustGenerate generates and holds the result to the vetting and the
// type check.
func mustGenerate(t testing.TB, server string, tools []Tool) *Package {
	t.Helper()
	p, err := Generate(server, tools)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if err := vetGenerated(p.Source); err != nil {
		t.Fatalf("vetting: %v\n%s", err, p.Source)
	}
	if err := typeCheck(p.Name, p.Source); err != nil {
		t.Fatalf("type check: %v\n%s", err, p.Source)
	}
	return p
}
