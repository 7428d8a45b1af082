package codemode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/doc"
	"go/printer"
	"io/fs"
	"slices"
	"strings"

	"github.com/agentloom/loom/tool"
)

// capSchemePrefix begins the virtual paths fs_read serves from the
// prelude: "cap://" is the index of a seam's capability packages and
// "cap://fs" (or "cap://cap/fs") one package's documented API.
const capSchemePrefix = "cap://"

// maxCapDocBytes bounds the text of one cap://<package> read: a
// package's documentation past it is cut at a line with a notice saying
// so. It is well under tool.MaxWindowBytes, what one fs_read of a file may
// show.
const maxCapDocBytes = 64 << 10

// describeError is a failure to describe a capability package, with a
// stable code (CodeUnknownCapPackage, CodeInternalCapPackage or
// CodePreludeUndescribable).
type describeError struct {
	// Package is the import path asked for ("cap/nope").
	Package string
	// Offered is the capability packages that could have been named: the
	// seam's, in its order, for a cap:// read; the prelude's, sorted, for
	// describeSeam. Set for CodeUnknownCapPackage and
	// CodeInternalCapPackage.
	Offered []string
	code    tool.Code
	reason  string
	err     error
}

// Code is the failure's stable code.
func (e *describeError) Code() tool.Code { return e.code }

// ErrorCode is Code as a string, so tool.CodeOf reads it (see
// tool.CodedError).
func (e *describeError) ErrorCode() string { return string(e.code) }

// Error says what failed and, for a package the seam does not offer, which
// packages it does.
func (e *describeError) Error() string {
	var b strings.Builder
	b.WriteString(e.reason)
	if e.err != nil {
		b.WriteString(": " + e.err.Error())
	}
	if e.code != CodePreludeUndescribable {
		fmt.Fprintf(&b, "; the capability packages are %s", offeredList(e.Offered))
	}
	return b.String()
}

// Unwrap is the parse error behind a CodePreludeUndescribable failure, or
// nil.
func (e *describeError) Unwrap() error { return e.err }

// preludeCapPackages is tree's packages a program may import: every one
// outside cap/internal, sorted.
func preludeCapPackages(tree fs.FS) []string {
	all, _ := indexTree(tree)
	return slices.DeleteFunc(all, isInternalCapPath)
}

func offeredList(pkgs []string) string {
	if len(pkgs) == 0 {
		return "none"
	}
	return strings.Join(pkgs, ", ")
}

// describeFailure is the *describeError for a load of path that failed.
func describeFailure(path string, offered []string, err error) error {
	if errors.Is(err, errNoSuchPackage) {
		return &describeError{Package: path, Offered: offered, code: CodeUnknownCapPackage,
			reason: fmt.Sprintf("%s is not a package of the prelude", path)}
	}
	var de *describeError
	if errors.As(err, &de) {
		return de
	}
	return &describeError{Package: path, code: CodePreludeUndescribable,
		reason: fmt.Sprintf("%s: the prelude's source does not parse", path), err: err}
}

// Scheme returns the cap:// namespace for fs_read over seam s's
// capability packages (those the code_mode description lists):
//
//	reg.Register(tool.ReadTool(codemode.Scheme(codemode.WorkspaceSeam())))
//
// "cap://" answers the index: each package with the one-line synopsis of
// its package doc, and how to read one. "cap://fs" and "cap://cap/fs" both
// answer the package's whole documented API, at most 64 KiB. It is
// rendered with go/doc from the embedded prelude as `go doc -all` lays it
// out: the package doc (examples included), and every exported constant,
// variable, type, method and function with its declaration and doc
// comment. A
// name under cap/internal is refused with CodeInternalCapPackage, any
// other name the seam does not offer with CodeUnknownCapPackage, both
// naming the packages it does. Reads are rendered afresh, change nothing,
// and answer the same for every caller, so they are replay-safe.
func Scheme(s Seam) tool.Scheme {
	offered := capPackagesOf(s)
	return tool.Scheme{
		Name:     strings.TrimSuffix(capSchemePrefix, "://"),
		Describe: "`cap://` lists code_mode's packages; `cap://<package>` (e.g. `cap://fs`) shows one's API.",
		Read: func(_ context.Context, _ *tool.Call, uri string) tool.Outcome {
			return readCap(embeddedPrelude(), s.Name, offered, uri)
		},
	}
}

// readCap answers one cap:// path from tree.
func readCap(tree fs.FS, seam string, offered []string, uri string) tool.Outcome {
	rest, ok := strings.CutPrefix(uri, capSchemePrefix)
	if !ok {
		return tool.Fail(tool.CodeUnknownScheme, fmt.Sprintf("%q is not a %s path", uri, capSchemePrefix))
	}
	rest = strings.Trim(rest, "/")
	if rest == "" {
		text, err := capIndex(tree, seam, offered)
		if err != nil {
			return describeOutcome(err)
		}
		return tool.Success(text)
	}
	path := rest
	if !strings.HasPrefix(path, preludeModule+"/") {
		path = preludeModule + "/" + path
	}
	switch {
	case isInternalCapPath(path):
		return describeOutcome(&describeError{Package: path, Offered: offered, code: CodeInternalCapPackage,
			reason: fmt.Sprintf("%s is the prelude's plumbing, which no program may import", path)})
	case !slices.Contains(offered, path):
		return describeOutcome(&describeError{Package: path, Offered: offered, code: CodeUnknownCapPackage,
			reason: fmt.Sprintf("%s is not a capability package of the %s seam", path, seam)})
	}
	text, err := capDoc(tree, path, offered)
	if err != nil {
		return describeOutcome(err)
	}
	return tool.Success(text)
}

// describeOutcome is the in-band refusal for a describe failure.
func describeOutcome(err error) tool.Outcome {
	var de *describeError
	if errors.As(err, &de) {
		return tool.Fail(de.Code(), de.Error())
	}
	return tool.Fail(CodePreludeUndescribable, err.Error())
}

// capIndex renders the index of the offered packages.
func capIndex(tree fs.FS, seam string, offered []string) (string, error) {
	l := newPreludeLoader(tree)
	var b strings.Builder
	fmt.Fprintf(&b, "capability packages of the %s seam (a code_mode program imports them by these paths):\n", seam)
	width := 0
	for _, path := range offered {
		width = max(width, len(path))
	}
	for _, path := range offered {
		p, err := l.load(path)
		if err != nil {
			return "", describeFailure(path, offered, err)
		}
		fmt.Fprintf(&b, "%-*s  %s\n", width, path, p.doc.Synopsis(p.doc.Doc))
	}
	if len(offered) == 0 {
		b.WriteString("(none)\n")
		return b.String(), nil
	}
	name := strings.TrimPrefix(offered[0], preludeModule+"/")
	fmt.Fprintf(&b, "Read one package's full documented API (package doc with examples, every type, function, constant and variable) with fs_read %s<name>, e.g. %s%s or %s%s.\n",
		capSchemePrefix, capSchemePrefix, name, capSchemePrefix, offered[0])
	return b.String(), nil
}

// capDoc renders path's documented API, at most maxCapDocBytes. It first
// renders the compact form, so a package describeSeam refuses is refused
// here too.
func capDoc(tree fs.FS, path string, offered []string) (string, error) {
	if _, err := describeSeam(tree, Seam{Packages: []string{path}}); err != nil {
		return "", err
	}
	l := newPreludeLoader(tree)
	p, err := l.load(path)
	if err != nil {
		return "", describeFailure(path, offered, err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "package %s // import %q\n\n", p.name, p.path)
	b.Write(p.doc.Text(p.doc.Doc))
	section := func(title string, values []*doc.Value) {
		if len(values) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n%s\n\n", title)
		for _, v := range values {
			p.writeNode(&b, v.Decl, v.Doc)
		}
	}
	section("CONSTANTS", p.doc.Consts)
	section("VARIABLES", p.doc.Vars)
	if len(p.doc.Funcs) > 0 {
		b.WriteString("\nFUNCTIONS\n\n")
		for _, f := range p.doc.Funcs {
			p.writeNode(&b, f.Decl, f.Doc)
		}
	}
	if len(p.doc.Types) > 0 {
		b.WriteString("\nTYPES\n\n")
		for _, t := range p.doc.Types {
			if err := p.writeType(&b, l, t); err != nil {
				return "", err
			}
		}
	}
	return boundDoc(b.String(), maxCapDocBytes), nil
}

// writeType writes t (an alias of an internal type as that type's
// exported declaration under t's name, with t's doc), then its constants,
// variables, constructors and methods.
func (p *capPackage) writeType(b *bytes.Buffer, l *preludeLoader, t *doc.Type) error {
	decl, methods := ast.Node(t.Decl), t.Methods
	declOf := p
	if ts := typeSpecOf(t); ts != nil && ts.Assign.IsValid() {
		target, ok, err := p.internalAlias(l, ts)
		if err != nil {
			return err
		}
		if ok {
			spec := *typeSpecOf(target.typ)
			spec.Name = ast.NewIdent(t.Name)
			if st, isStruct := spec.Type.(*ast.StructType); isStruct {
				// Without its unexported fields, and closed right after
				// the last one kept, so no gap is left where they were.
				fields := *st.Fields
				if n := len(fields.List); n > 0 {
					end := fields.List[n-1].End()
					if tf := p.fset.File(end); tf != nil && tf.Line(end) < tf.LineCount() {
						fields.Closing = tf.LineStart(tf.Line(end) + 1)
					}
				}
				plain := *st
				plain.Fields, plain.Incomplete = &fields, false
				spec.Type = &plain
			}
			gd := *target.typ.Decl
			gd.Specs = []ast.Spec{&spec}
			decl, methods, declOf = &gd, target.typ.Methods, target.pkg
		}
	}
	// The declaration is printed with the comments of the file it is in.
	declOf.writeNode(b, decl, t.Doc)
	for _, v := range append(append([]*doc.Value(nil), t.Consts...), t.Vars...) {
		p.writeNode(b, v.Decl, v.Doc)
	}
	for _, f := range t.Funcs {
		p.writeNode(b, f.Decl, f.Doc)
	}
	for _, m := range methods {
		if ast.IsExported(m.Name) {
			declOf.writeNode(b, m.Decl, m.Doc)
		}
	}
	return nil
}

// writeNode prints decl as gofmt would (a function without its body, its
// fields' comments kept), then its doc comment indented, then a blank
// line.
func (p *capPackage) writeNode(b *bytes.Buffer, decl ast.Node, docText string) {
	var node any = decl
	if f := p.fileOf(decl.Pos()); f != nil {
		node = &printer.CommentedNode{Node: decl, Comments: f.Comments}
	}
	cfg := printer.Config{Mode: printer.UseSpaces | printer.TabIndent, Tabwidth: 8}
	if err := cfg.Fprint(b, p.fset, node); err != nil {
		fmt.Fprintf(b, "(declaration not printable: %v)", err)
	}
	b.WriteByte('\n')
	if docText != "" {
		pr := p.doc.Printer()
		pr.TextPrefix = "    "
		b.Write(pr.Text(p.doc.Parser().Parse(docText)))
	}
	b.WriteByte('\n')
}

// boundDoc cuts text to at most limit bytes at a line break, with a
// notice saying it was cut.
func boundDoc(text string, limit int) string {
	if len(text) <= limit {
		return text
	}
	notice := fmt.Sprintf("\n(cut: this package's documentation is over the %d KiB a cap:// read shows; the rest is not shown)\n", limit>>10)
	keep := text[:limit-len(notice)]
	if i := strings.LastIndexByte(keep, '\n'); i >= 0 {
		keep = keep[:i+1]
	}
	return keep + notice
}
