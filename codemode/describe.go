package codemode

import (
	"errors"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	pathpkg "path"
	"slices"
	"strconv"
	"strings"
)

// describeSeam renders the public surface of every capability package s
// offers, in the order s lists them, for the code_mode tool's
// description. tree is the prelude: the embedded one, or a test's.
// For each package (a blank line between two) it writes an
// `import "cap/fs"` line, then the package's exported constants,
// variables, types (struct and interface types with their exported fields
// or methods on the same line), methods and functions, one line each, in
// source order, with no doc comments. Every name is qualified as a program
// writes it (`func fs.Read(ctx, path string) (fs.File, error)`); a leading
// ctx context.Context parameter is written ctx alone, which the
// description says once. It is rendered with go/doc from the prelude on
// every call, so it cannot drift from what a program compiles against,
// and the same seam always renders the same bytes.
//
// An entry of s.Packages that vetting would refuse (cap/internal/..., or
// anything not under cap/) is not a capability package and is left out. A
// type the prelude declares as an alias of an internal type (every
// package's Error) is rendered once, as the internal type's exported
// fields under the first package's name (`type fs.Error struct{ ... }`),
// and left out of every later package (the description says every
// package's Error is that one type), so the rendering names no internal or
// unexported identifier. A listed package the prelude does not hold fails
// with a *describeError coded CodeUnknownCapPackage; an exported
// declaration that mentions an internal or unexported identifier any other
// way fails coded CodePreludeUndescribable.
func describeSeam(tree fs.FS, s Seam) (string, error) {
	l := newPreludeLoader(tree)
	offered := capPackagesOf(s)
	var b strings.Builder
	seen := map[*doc.Type]string{}
	for _, path := range offered {
		p, err := l.load(path)
		if err != nil {
			return "", describeFailure(path, preludeCapPackages(tree), err)
		}
		if err := writeCompact(&b, l, p, seen); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// capPackagesOf is the capability packages s offers that vetting admits, in
// s's order, without duplicates.
func capPackagesOf(s Seam) []string {
	var out []string
	for _, p := range s.Packages {
		if _, denied := denialOf(p); denied || !strings.HasPrefix(p, preludeModule+"/") || slices.Contains(out, p) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// compactItem is one rendered line group and where its declaration
// starts, so a package's lines come out in source order.
type compactItem struct {
	pos   int
	lines []string
}

// writeCompact writes p's compact listing to b. seen maps an internal type
// already rendered through an alias to the qualified name it was rendered
// under.
func writeCompact(b *strings.Builder, l *preludeLoader, p *capPackage, seen map[*doc.Type]string) error {
	q := p.qualifier()
	var items []compactItem
	for _, v := range p.allValues() {
		lines, err := p.valueLines(v, q)
		if err != nil {
			return err
		}
		items = append(items, compactItem{int(v.Decl.Pos()), lines})
	}
	for _, t := range p.doc.Types {
		lines, err := p.typeLines(l, t, q, seen)
		if err != nil {
			return err
		}
		items = append(items, compactItem{int(t.Decl.Pos()), lines})
		for _, f := range t.Funcs {
			line, err := p.funcLine(f, q)
			if err != nil {
				return err
			}
			items = append(items, compactItem{int(f.Decl.Pos()), []string{line}})
		}
	}
	for _, f := range p.doc.Funcs {
		line, err := p.funcLine(f, q)
		if err != nil {
			return err
		}
		items = append(items, compactItem{int(f.Decl.Pos()), []string{line}})
	}
	slices.SortStableFunc(items, func(a, b compactItem) int { return a.pos - b.pos })
	if b.Len() > 0 {
		b.WriteByte('\n')
	}
	fmt.Fprintf(b, "import %q\n", p.path)
	for _, it := range items {
		for _, line := range it.lines {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return nil
}

// allValues is p's exported constant and variable groups, those go/doc
// filed under a type included.
func (p *capPackage) allValues() []*doc.Value {
	vs := append(append([]*doc.Value(nil), p.doc.Consts...), p.doc.Vars...)
	for _, t := range p.doc.Types {
		vs = append(append(vs, t.Consts...), t.Vars...)
	}
	return vs
}

// valueLines renders a constant or variable group, one line per name:
// `const fs.KindFile = "file"`. A value is shown only when it names no
// unexported identifier, a type only when one is written.
func (p *capPackage) valueLines(v *doc.Value, q *qualifier) ([]string, error) {
	kw := v.Decl.Tok.String()
	var lines []string
	typ := ""
	for _, spec := range v.Decl.Specs {
		vs, ok := spec.(*ast.ValueSpec)
		if !ok {
			continue
		}
		switch {
		case vs.Type != nil:
			if err := p.checkType(vs.Type, nil); err != nil {
				return nil, err
			}
			q.qualify(vs.Type, nil)
			typ = " " + types.ExprString(vs.Type)
		case kw != "const" || len(vs.Values) > 0:
			// An untyped spec; only a constant spec with neither type nor
			// values repeats the one before it, type included.
			typ = ""
		}
		for i, name := range vs.Names {
			if !name.IsExported() {
				continue
			}
			line := kw + " " + p.name + "." + name.Name + typ
			if kw == "const" && i < len(vs.Values) && valueIsPlain(vs.Values[i]) {
				line += " = " + types.ExprString(vs.Values[i])
			}
			lines = append(lines, line)
		}
	}
	return lines, nil
}

// valueIsPlain reports whether a constant's value expression is worth
// showing and leaks nothing: literals and predeclared constants (true,
// false) only, so neither an unexported name nor iota.
func valueIsPlain(x ast.Expr) bool {
	plain := true
	ast.Inspect(x, func(n ast.Node) bool {
		if id, isIdent := n.(*ast.Ident); isIdent {
			if _, isConst := types.Universe.Lookup(id.Name).(*types.Const); !isConst || id.Name == "iota" {
				plain = false
			}
		}
		return plain
	})
	return plain
}

// typeLines renders one exported type and its exported methods.
func (p *capPackage) typeLines(l *preludeLoader, t *doc.Type, q *qualifier, seen map[*doc.Type]string) ([]string, error) {
	ts := typeSpecOf(t)
	if ts == nil {
		return nil, p.undescribable(t.Name, "its declaration is not a type spec")
	}
	qname := p.name + "." + t.Name
	if ts.Assign.IsValid() {
		if target, ok, err := p.internalAlias(l, ts); err != nil {
			return nil, err
		} else if ok {
			if _, done := seen[target.typ]; done {
				return nil, nil
			}
			seen[target.typ] = qname
			lines, err := target.pkg.typeBody(target.typ, qname)
			if err != nil {
				return nil, err
			}
			return lines[:1], nil
		}
	}
	return p.typeBody(t, qname)
}

// typeBody renders t's declaration and its exported methods under the
// qualified name qname, t's own name qualified throughout. Fields,
// parameters and results are checked to name no unexported or internal
// identifier.
func (p *capPackage) typeBody(t *doc.Type, qname string) ([]string, error) {
	ts := typeSpecOf(t)
	q := p.qualifier()
	q.rename(t.Name, qname)
	scope := typeParamNames(ts.TypeParams)
	// The type may name itself (a linked list's next pointer) even where
	// it is an internal package's: it is rendered under qname.
	self := map[string]bool{t.Name: true}
	for n := range scope {
		self[n] = true
	}
	if err := p.checkFields(ts.TypeParams, scope); err != nil {
		return nil, err
	}
	if err := p.checkType(ts.Type, self); err != nil {
		return nil, err
	}
	q.qualify(ts.Type, scope)
	line := "type " + qname
	if ts.TypeParams != nil {
		line += "[" + fieldsString(ts.TypeParams, ", ") + "]"
	}
	if ts.Assign.IsValid() {
		line += " ="
	}
	line += " " + oneLineType(ts.Type)
	lines := []string{line}
	for _, m := range t.Methods {
		if !ast.IsExported(m.Name) {
			continue
		}
		if err := p.checkType(m.Decl.Type, self); err != nil {
			return nil, err
		}
		q.qualify(m.Decl.Type, scope)
		recv := strings.Replace(m.Recv, t.Name, qname, 1)
		lines = append(lines, "func ("+recv+") "+m.Name+signature(m.Decl.Type))
	}
	return lines, nil
}

// funcLine renders an exported function: `func fs.Read(...) (fs.File, error)`.
func (p *capPackage) funcLine(f *doc.Func, q *qualifier) (string, error) {
	ft := f.Decl.Type
	scope := typeParamNames(ft.TypeParams)
	if err := p.checkType(ft, scope); err != nil {
		return "", err
	}
	q.qualify(ft, scope)
	line := "func " + p.name + "." + f.Name
	if ft.TypeParams != nil {
		line += "[" + fieldsString(ft.TypeParams, ", ") + "]"
	}
	return line + signature(ft), nil
}

// oneLineType renders a type expression on one line; a struct or
// interface at the top gets gofmt's spacing inside its braces.
func oneLineType(x ast.Expr) string {
	switch x := x.(type) {
	case *ast.StructType:
		return braced("struct", x.Fields, "; ")
	case *ast.InterfaceType:
		var parts []string
		for _, f := range x.Methods.List {
			if ft, ok := f.Type.(*ast.FuncType); ok && len(f.Names) > 0 {
				for _, n := range f.Names {
					parts = append(parts, n.Name+signature(ft))
				}
				continue
			}
			parts = append(parts, types.ExprString(f.Type))
		}
		if len(parts) == 0 {
			return "interface{}"
		}
		return "interface{ " + strings.Join(parts, "; ") + " }"
	}
	return types.ExprString(x)
}

func braced(kw string, fl *ast.FieldList, sep string) string {
	if fl == nil || len(fl.List) == 0 {
		return kw + "{}"
	}
	return kw + "{ " + fieldsString(fl, sep) + " }"
}

// fieldsString renders a field list as `a, b T; c U`.
func fieldsString(fl *ast.FieldList, sep string) string {
	parts := make([]string, 0, len(fl.List))
	for _, f := range fl.List {
		names := make([]string, len(f.Names))
		for i, n := range f.Names {
			names[i] = n.Name
		}
		s := types.ExprString(f.Type)
		if len(names) > 0 {
			s = strings.Join(names, ", ") + " " + s
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, sep)
}

// signature renders a function type's parameters and results without
// the "func" keyword, a leading ctx context.Context parameter written
// ctx (see describeSeam).
func signature(ft *ast.FuncType) string {
	plain := *ft
	plain.TypeParams = nil
	sig := strings.TrimPrefix(types.ExprString(&plain), "func")
	if rest, ok := strings.CutPrefix(sig, "(ctx context.Context"); ok {
		sig = "(ctx" + rest
	}
	return sig
}

// typeSpecOf finds t's own spec in its declaration.
func typeSpecOf(t *doc.Type) *ast.TypeSpec {
	for _, s := range t.Decl.Specs {
		if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.Name == t.Name {
			return ts
		}
	}
	return nil
}

// typeParamNames is the names a type parameter list declares.
func typeParamNames(fl *ast.FieldList) map[string]bool {
	if fl == nil {
		return nil
	}
	names := map[string]bool{}
	for _, f := range fl.List {
		for _, n := range f.Names {
			names[n.Name] = true
		}
	}
	return names
}

// qualifier rewrites the names of a package's exported types, where they
// appear as types, into the qualified form a program writes ("File" to
// "fs.File").
type qualifier struct {
	names map[string]string
}

func (p *capPackage) qualifier() *qualifier {
	q := &qualifier{names: map[string]string{}}
	for _, t := range p.doc.Types {
		q.names[t.Name] = p.name + "." + t.Name
	}
	return q
}

// rename makes the type name from render as to.
func (q *qualifier) rename(from, to string) { q.names[from] = to }

// qualify rewrites x in place; names in scope (type parameters) are left.
func (q *qualifier) qualify(x ast.Expr, scope map[string]bool) {
	walkTypeNames(x, func(id, pkg *ast.Ident) {
		if pkg != nil || scope[id.Name] {
			return
		}
		if to, ok := q.names[id.Name]; ok {
			id.Name = to
		}
	})
}

// walkTypeNames calls f for every identifier x uses as a type or a
// constant (an array length), with the package identifier qualifying it
// or nil; field, parameter and method names are not visited.
func walkTypeNames(x ast.Expr, f func(id, pkg *ast.Ident)) {
	var fields func(fl *ast.FieldList)
	var walk func(x ast.Expr)
	fields = func(fl *ast.FieldList) {
		if fl == nil {
			return
		}
		for _, fd := range fl.List {
			walk(fd.Type)
		}
	}
	walk = func(x ast.Expr) {
		switch x := x.(type) {
		case *ast.Ident:
			f(x, nil)
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok {
				f(x.Sel, id)
			} else {
				walk(x.X)
			}
		case *ast.StarExpr:
			walk(x.X)
		case *ast.ParenExpr:
			walk(x.X)
		case *ast.UnaryExpr:
			walk(x.X)
		case *ast.BinaryExpr:
			walk(x.X)
			walk(x.Y)
		case *ast.ArrayType:
			if x.Len != nil {
				walk(x.Len)
			}
			walk(x.Elt)
		case *ast.Ellipsis:
			walk(x.Elt)
		case *ast.MapType:
			walk(x.Key)
			walk(x.Value)
		case *ast.ChanType:
			walk(x.Value)
		case *ast.FuncType:
			fields(x.TypeParams)
			fields(x.Params)
			fields(x.Results)
		case *ast.StructType:
			fields(x.Fields)
		case *ast.InterfaceType:
			fields(x.Methods)
		case *ast.IndexExpr:
			walk(x.X)
			walk(x.Index)
		case *ast.IndexListExpr:
			walk(x.X)
			for _, i := range x.Indices {
				walk(i)
			}
		}
	}
	walk(x)
}

// checkType fails when x names an unexported identifier (other than a
// predeclared one or a name in scope) or anything of an internal package:
// a program could not write either.
func (p *capPackage) checkType(x ast.Expr, scope map[string]bool) error {
	var bad string
	walkTypeNames(x, func(id, pkg *ast.Ident) {
		switch {
		case bad != "":
		case pkg != nil:
			if path := p.importPath(pkg); isInternalCapPath(path) || path == "" {
				bad = pkg.Name + "." + id.Name
			}
		case scope[id.Name]:
		case !id.IsExported() && types.Universe.Lookup(id.Name) == nil:
			bad = id.Name
		case p.internal && types.Universe.Lookup(id.Name) == nil:
			// A type of an internal package named bare is that package's.
			bad = id.Name
		}
	})
	if bad != "" {
		return p.undescribable(bad, "an exported declaration names it, and a program cannot")
	}
	return nil
}

func (p *capPackage) checkFields(fl *ast.FieldList, scope map[string]bool) error {
	if fl == nil {
		return nil
	}
	for _, f := range fl.List {
		if err := p.checkType(f.Type, scope); err != nil {
			return err
		}
	}
	return nil
}

// internalAlias resolves `type T = pkg.U` where pkg is an internal package
// of the prelude, reporting ok false for any other alias.
func (p *capPackage) internalAlias(l *preludeLoader, ts *ast.TypeSpec) (aliasTarget, bool, error) {
	sel, ok := ts.Type.(*ast.SelectorExpr)
	if !ok {
		return aliasTarget{}, false, nil
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return aliasTarget{}, false, nil
	}
	path := p.importPath(id)
	if !isInternalCapPath(path) {
		return aliasTarget{}, false, nil
	}
	ip, err := l.load(path)
	if err != nil {
		return aliasTarget{}, false, err
	}
	for _, t := range ip.doc.Types {
		if t.Name == sel.Sel.Name {
			if spec := typeSpecOf(t); spec == nil || spec.Assign.IsValid() {
				return aliasTarget{}, false, p.undescribable(id.Name+"."+sel.Sel.Name, "an alias of an alias is not rendered")
			}
			return aliasTarget{pkg: ip, typ: t}, true, nil
		}
	}
	return aliasTarget{}, false, p.undescribable(id.Name+"."+sel.Sel.Name, "the internal package declares no such exported type")
}

// aliasTarget is the internal type an alias names.
type aliasTarget struct {
	pkg *capPackage
	typ *doc.Type
}

func isInternalCapPath(path string) bool {
	return path == preludeModule+"/internal" || strings.HasPrefix(path, preludeModule+"/internal/")
}

func (p *capPackage) undescribable(name, why string) error {
	return &describeError{Package: p.path, code: CodePreludeUndescribable,
		reason: fmt.Sprintf("%s: %s: %s", p.path, name, why)}
}

// preludeLoader parses packages of one prelude tree, each at most once,
// into one file set.
type preludeLoader struct {
	tree fs.FS
	fset *token.FileSet
	pkgs map[string]*capPackage
}

func newPreludeLoader(tree fs.FS) *preludeLoader {
	return &preludeLoader{tree: tree, fset: token.NewFileSet(), pkgs: map[string]*capPackage{}}
}

// capPackage is one parsed prelude package and its go/doc rendering.
type capPackage struct {
	path     string // the import path, "cap/fs"
	name     string // the package name, "fs"
	internal bool   // under cap/internal
	files    []*ast.File
	doc      *doc.Package
	fset     *token.FileSet
}

// errNoSuchPackage is load's cause for an import path the tree does not
// hold.
var errNoSuchPackage = errors.New("the prelude holds no such package")

// load parses the package at import path (non-test .go files in name
// order) with go/doc's default filtering: exported declarations only.
func (l *preludeLoader) load(path string) (*capPackage, error) {
	if p, ok := l.pkgs[path]; ok {
		return p, nil
	}
	dir, ok := strings.CutPrefix(path, preludeModule+"/")
	if !ok || !fs.ValidPath(dir) {
		return nil, errNoSuchPackage
	}
	entries, err := fs.ReadDir(l.tree, dir)
	if err != nil {
		return nil, errNoSuchPackage
	}
	var files []*ast.File
	for _, e := range entries { // ReadDir sorts by name
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := fs.ReadFile(l.tree, dir+"/"+name)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(l.fset, path+"/"+name, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, errNoSuchPackage
	}
	d, err := doc.NewFromFiles(l.fset, files, path)
	if err != nil {
		return nil, err
	}
	p := &capPackage{path: path, name: d.Name, internal: isInternalCapPath(path), files: files, doc: d, fset: l.fset}
	l.pkgs[path] = p
	return p, nil
}

// importPath is the import path the file holding id binds id's name to,
// or "" when that file imports nothing under that name.
func (p *capPackage) importPath(id *ast.Ident) string {
	f := p.fileOf(id.Pos())
	if f == nil {
		return ""
	}
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		name := pathpkg.Base(path)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		if name == id.Name {
			return path
		}
	}
	return ""
}

// fileOf is the file of p holding pos.
func (p *capPackage) fileOf(pos token.Pos) *ast.File {
	for _, f := range p.files {
		if f.FileStart <= pos && pos <= f.FileEnd {
			return f
		}
	}
	return nil
}
