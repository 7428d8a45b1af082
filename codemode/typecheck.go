package codemode

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Bounds of the type check a refused program gets (Engine.typeCheckRefused).
const (
	// maxTypeErrors is how many type errors the check itemises; it
	// counts the rest.
	maxTypeErrors = 32
	// maxTypeCheckBytes bounds the text of VetError.Compile: 8 KiB.
	maxTypeCheckBytes = 8 << 10
	// typeCheckWait bounds how long a vet refusal waits for the
	// toolchain's archives of the program's allowed imports (which its
	// build will need anyway) before it answers without the type check.
	typeCheckWait = 20 * time.Second
	// maxTypeCheckDepth bounds the syntax tree's depth a type check
	// takes (go/types recurses along it); a deeper program is not
	// type-checked.
	maxTypeCheckDepth = 512
	// typeCheckTimeout bounds how long a vet refusal waits for go/types;
	// past it, it answers without the type check.
	typeCheckTimeout = 5 * time.Second
	// maxConstStringBytes bounds the constant strings a program may
	// build and still be type-checked (constStringsExceed).
	maxConstStringBytes = 1 << 20
	// maxTypeExpansion bounds the nodes an alias or a generic type of a
	// program may expand to and still be type-checked (typesExceed).
	maxTypeExpansion = 1 << 12
)

// errStubbed is the import error of a refused (stubbed) import: go/types
// then treats the package as fake and reports nothing about its names.
var errStubbed = errors.New("stubbed: vetting refused this import")

// checkRefusal adds to a refusal of vetting what type-checking the
// program finds (typeCheckRefused); any other error is left as it is.
func (e *Engine) checkRefusal(ctx context.Context, err error) {
	var ve *VetError
	if errors.As(err, &ve) {
		e.typeCheckRefused(ctx, ve)
	}
}

// typeCheckRefused type-checks the program ve refused, with the imports
// vetting refused stubbed, and keeps what it found in ve.Compile, so one
// answer carries both the refusal and the compile errors. It runs
// go/types on the host over the parsed source against the builder's
// archives of the program's allowed imports: nothing of the program
// runs. One check runs at a time per Engine (its builder). Each of these
// leaves ve.Compile "" and ve.TypeChecked false: a source that did not
// parse, a dot import of a refused path, a tree deeper than
// maxTypeCheckDepth, constant strings that could pass
// maxConstStringBytes, aliases or generic types that could expand past
// maxTypeExpansion, no toolchain, archives not ready within
// typeCheckWait, an unreadable archive, another check still running, a
// check past typeCheckTimeout.
func (e *Engine) typeCheckRefused(ctx context.Context, ve *VetError) {
	if ve.file == nil || ve.dotRefused() || deeperThan(ve.file, maxTypeCheckDepth) || constStringsExceed(ve.file, maxConstStringBytes) || typesExceed(ve.file, maxTypeExpansion) {
		return
	}
	b, err := e.buildStage()
	if err != nil {
		return
	}
	files := map[string]string{}
	if allowed := ve.allowedImports(); len(allowed) > 0 {
		wctx, cancel := context.WithTimeout(ctx, typeCheckWait)
		arch, _, err := b.archivesFor(wctx, &Program{Imports: allowed})
		cancel()
		if err != nil {

			return
		}
		if files, err = readImportcfg(arch.linkCfg); err != nil {
			return
		}
	}
	select {
	case b.checking <- struct{}{}:
	default:
		return // another check still runs (perhaps one past its bound)
	}
	done := make(chan typeCheckResult, 1)
	go func() {
		defer func() { <-b.checking }()
		defer func() {
			if recover() != nil {
				done <- typeCheckResult{}
			}
		}()
		// A generated cap/mcp package is compiled beside a program, never
		// kept in the archives: stubbed too.
		stubbed := func(p string) bool { return ve.refusedImport(p) || isMCPPath(p) }
		done <- checkStubbed(ve.fset, ve.file, gcImporter(ve.fset, files), stubbed)
	}()
	timer := time.NewTimer(typeCheckTimeout)
	defer timer.Stop()
	var r typeCheckResult
	select {
	case r = <-done:
	case <-timer.C:
		return
	case <-ctx.Done():
		return
	}
	if !r.ok {

		return
	}
	ve.TypeChecked = true
	if len(r.diags) == 0 {
		return
	}
	text := strings.Join(r.diags, "\n") + "\n"
	for _, s := range suggestions(text, programImports(ve.file), ve.Allowlist) {
		text += s + "\n"
	}
	ve.Compile = truncateUTF8(text, maxTypeCheckBytes)
}

// deeperThan reports whether f's syntax tree nests more than limit
// nodes deep.
func deeperThan(f *ast.File, limit int) bool {
	depth, deep := 0, false
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			depth--
			return false
		}
		if depth++; depth > limit {
			deep = true
		}
		return !deep
	})
	return deep
}

// constStringsExceed reports whether a constant string f could build
// may be longer than limit. go/types builds a constant string whole when
// it measures or quotes one, and a time bound does not stop it, so
// constants declared by doubling ("const s1 = s0 + s0", a few dozen
// lines) would have the host allocate gigabytes. The estimate is an
// upper bound: a string literal counts its length, a name the largest
// constant of that name in any scope (a cycle counts as too long), a sum
// or a call its operands together, a parenthesis what it holds, anything
// else nothing (an imported constant is the archives', not the
// program's).
func constStringsExceed(f *ast.File, limit int) bool {
	defs := map[string][]ast.Expr{}
	ast.Inspect(f, func(n ast.Node) bool {
		d, ok := n.(*ast.GenDecl)
		if !ok || d.Tok != token.CONST {
			return true
		}
		var last []ast.Expr // an omitted value repeats the one before
		for _, sp := range d.Specs {
			vs, ok := sp.(*ast.ValueSpec)
			if !ok {
				continue
			}
			if len(vs.Values) > 0 {
				last = vs.Values
			}
			for i, name := range vs.Names {
				if i < len(last) {
					defs[name.Name] = append(defs[name.Name], last[i])
				}
			}
		}
		return true
	})
	const visiting = -1
	sizes := map[string]int{}
	var size func(e ast.Expr) int
	size = func(e ast.Expr) int {
		switch e := e.(type) {
		case *ast.BasicLit:
			return len(e.Value)
		case *ast.ParenExpr:
			return size(e.X)
		case *ast.BinaryExpr:
			return min(size(e.X)+size(e.Y), limit+1)
		case *ast.CallExpr:
			n := 0
			for _, a := range e.Args {
				n = min(n+size(a), limit+1)
			}
			return n
		case *ast.Ident:
			switch n, ok := sizes[e.Name]; {
			case n == visiting:
				return limit + 1
			case ok:
				return n
			}
			sizes[e.Name] = visiting
			n := 0
			for _, d := range defs[e.Name] {
				n = max(n, size(d))
			}
			sizes[e.Name] = n
			return n
		}
		return 0
	}
	exceeds := false
	ast.Inspect(f, func(n ast.Node) bool {
		switch e := n.(type) {
		case *ast.BinaryExpr, *ast.CallExpr, *ast.Ident:
			exceeds = exceeds || size(e.(ast.Expr)) > limit
		}
		return !exceeds
	})
	return exceeds
}

// typesExceed reports whether an alias or a generic type f declares may
// expand to more than limit nodes. go/types expands those where it
// compares or validates them (a named type that is neither is compared
// by identity), recursively and with no bound of its own, so types
// declared by doubling ("type A1 = struct{ a, b A0 }", or
// "type T1[P any] struct{ a T0[T0[P]] }") take it exponential time, or
// overflow the stack, which no recover catches. The estimate is an
// upper bound: a type expression counts its nodes, a name of an alias
// or a generic type in any scope its own expansion in place (a cycle
// counts one).
func typesExceed(f *ast.File, limit int) bool {
	defs := map[string][]ast.Node{}
	ast.Inspect(f, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok && (ts.Assign.IsValid() || ts.TypeParams != nil) {
			defs[ts.Name.Name] = append(defs[ts.Name.Name], ts.Type)
			if ts.TypeParams != nil {
				defs[ts.Name.Name] = append(defs[ts.Name.Name], ts.TypeParams)
			}
		}
		return true
	})
	if len(defs) == 0 {
		return false
	}
	const visiting = -1
	sizes := map[string]int{}
	var (
		size  func(name string) int
		nodes func(root ast.Node) int // the expansion of the syntax under root
	)
	nodes = func(root ast.Node) int {
		n := 0
		ast.Inspect(root, func(x ast.Node) bool {
			switch x := x.(type) {
			case nil:
				return false
			case *ast.Ident:
				if len(defs[x.Name]) > 0 {
					n = min(n+size(x.Name), limit+1)
					return false
				}
			case *ast.Field:
				if x != root && len(x.Names) > 1 { // "a, b T" holds T twice
					n = min(n+len(x.Names)*nodes(x), limit+1)
					return false
				}
			}
			n = min(n+1, limit+1)
			return n <= limit
		})
		return n
	}
	size = func(name string) int {
		switch n, ok := sizes[name]; {
		case n == visiting:
			return 1
		case ok:
			return n
		}
		sizes[name] = visiting
		n := 1
		for _, d := range defs[name] {
			n = min(n+nodes(d), limit+1)
		}
		sizes[name] = n
		return n
	}
	for name := range defs {
		if size(name) > limit {
			return true
		}
	}
	return false
}

// typeCheckResult is what checkStubbed found: ok false when the check
// could not be trusted (an allowed import that would not load).
type typeCheckResult struct {
	diags []string
	ok    bool
}

// checkStubbed type-checks file as package main. An import stubbed
// reports is not loaded (go/types sees a fake package and reports none of
// its names); every other import comes from imp. It returns the errors
// as the compiler writes them ("main.go:L:C: message"), at most
// maxTypeErrors then a count, without the ones about the stubbed imports
// themselves; ok is false when an allowed import failed to load.
func checkStubbed(fset *token.FileSet, file *ast.File, imp types.Importer, stubbed func(string) bool) typeCheckResult {
	bad := false
	var errs []types.Error
	extra := 0
	conf := types.Config{
		Importer: importerFunc(func(path string) (*types.Package, error) {
			if stubbed(path) {
				return nil, errStubbed
			}
			p, err := imp.Import(path)
			if err != nil {

				bad = true
			}
			return p, err
		}),
		Sizes: types.SizesFor("gc", runtime.GOARCH),
		Error: func(err error) {
			te, ok := err.(types.Error)
			if !ok || aboutStubbed(te, stubbed) {
				return
			}
			if len(errs) == maxTypeErrors {
				extra++
				return
			}
			errs = append(errs, te)
		},
	}
	conf.Check("main", fset, []*ast.File{file}, nil) // the errors are in errs
	if bad {
		return typeCheckResult{}
	}
	slices.SortStableFunc(errs, func(a, b types.Error) int { return int(a.Pos) - int(b.Pos) })
	out := make([]string, 0, len(errs)+1)
	for _, te := range errs {
		p := fset.PositionFor(te.Pos, false)
		out = append(out, fmt.Sprintf("%s:%d:%d: %s", programFileName, p.Line, p.Column, typeErrorText(te.Msg)))
	}
	if extra > 0 {
		out = append(out, fmt.Sprintf("... and %d more", extra))
	}
	return typeCheckResult{diags: out, ok: true}
}

// maxTypeErrorBytes bounds one type error's message.
const maxTypeErrorBytes = 512

// typeErrorText is msg printable line by line (go/types writes some
// messages on several lines, as the compiler does) and at most
// maxTypeErrorBytes.
func typeErrorText(msg string) string {
	lines := strings.Split(msg, "\n")
	for i, l := range lines {
		lines[i] = printable(l)
	}
	return truncateUTF8(strings.Join(lines, "\n"), maxTypeErrorBytes)
}

// aboutStubbed reports an error about a stubbed import itself: that it
// could not be imported, or is not used.
func aboutStubbed(te types.Error, stubbed func(string) bool) bool {
	for _, prefix := range []string{"could not import ", "\""} {
		rest, ok := strings.CutPrefix(te.Msg, prefix)
		if !ok {
			continue
		}
		if prefix == "\"" {
			rest = "\"" + rest
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				continue
			}
			p, _ := strconv.Unquote(q)
			if stubbed(p) && strings.Contains(rest[len(q):], "imported") {
				return true
			}
			continue
		}
		p, _, _ := strings.Cut(rest, " ")
		if stubbed(p) {
			return true
		}
	}
	return false
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// gcImporter reads export data from the archives files names (import
// path to file), as the compiler reads them.
func gcImporter(fset *token.FileSet, files map[string]string) types.Importer {
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := files[path]
		if !ok {
			return nil, fmt.Errorf("%s is not in the archives", path)
		}
		return os.Open(f)
	})
}

// readImportcfg reads the "packagefile path=file" lines of an importcfg
// the builder wrote.
func readImportcfg(name string) (map[string]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		rest, ok := strings.CutPrefix(s.Text(), "packagefile ")
		if !ok {
			continue
		}
		if p, file, ok := strings.Cut(rest, "="); ok {
			out[p] = file
		}
	}
	return out, s.Err()
}

// refusedImport reports whether vetting refused the import of path (or
// would have: the check stubs exactly what vetting did not admit).
func (e *VetError) refusedImport(path string) bool {
	_, denied := denialOf(path)
	_, listed := slices.BinarySearch(e.Allowlist, path)
	return path == "C" || denied || !listed
}

// allowedImports are the program's import paths vetting admitted.
func (e *VetError) allowedImports() []string {
	var out []string
	for _, im := range e.file.Imports {
		if p, err := strconv.Unquote(im.Path.Value); err == nil && !e.refusedImport(p) {
			out = append(out, p)
		}
	}
	return sortedSet(out)
}

// dotRefused reports a dot import of a refused path: its names would
// read as the program's own undefined ones, so no check is made.
func (e *VetError) dotRefused() bool {
	for _, im := range e.file.Imports {
		if p, err := strconv.Unquote(im.Path.Value); err != nil || im.Name != nil && im.Name.Name == "." && e.refusedImport(p) {
			return true
		}
	}
	return false
}
