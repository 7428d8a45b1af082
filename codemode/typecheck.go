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
// maxTypeCheckDepth, no toolchain, archives not ready within
// typeCheckWait, an unreadable archive, another check still running, a
// check past typeCheckTimeout.
func (e *Engine) typeCheckRefused(ctx context.Context, ve *VetError) {
	if ve.file == nil || ve.dotRefused() || deeperThan(ve.file, maxTypeCheckDepth) {
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
