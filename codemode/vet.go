package codemode

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentloom/loom/tool"
)

// maxSourceBytes is the largest program vet reads: 256 KiB. The size is
// checked before anything else looks at the source.
const maxSourceBytes = 256 << 10

// programFileName is the one file name a program is vetted and built
// under. The harness picks it, never the source.
const programFileName = "main.go"

// maxViolationsShown is how many violations VetError.Error itemises; it
// counts the rest. VetError.Violations holds all of them.
const maxViolationsShown = 32

// maxVetErrorBytes bounds the text VetError.Error renders: 16 KiB.
const maxVetErrorBytes = 16 << 10

// maxConstructBytes bounds a Violation's Construct: a longer construct
// (a huge comment, a long line) is cut with an ellipsis.
const maxConstructBytes = 96

// maxExcerptBytes bounds the source line a parse error's caret excerpt
// shows: a window of at most this many bytes around the column.
const maxExcerptBytes = 120

// The rules a Violation names (Violation.Rule). Each is a stable
// snake_case word.
const (
	// ruleSourceTooLarge: the source is over maxSourceBytes; nothing else
	// was checked.
	ruleSourceTooLarge = "source_too_large"
	// ruleSourceNotUTF8: the source holds a byte sequence that is not
	// UTF-8; nothing else was checked.
	ruleSourceNotUTF8 = "source_not_utf8"
	// ruleSourceNUL: the source holds a NUL byte; nothing else was checked.
	ruleSourceNUL = "source_nul_byte"
	// ruleParseError: go/parser refused the source; VetError.Parse shows
	// the first error under a caret. Only comments and cleanly parsed
	// imports are checked further.
	ruleParseError = "parse_error"
	// rulePackageNotMain: the package clause is not "package main".
	rulePackageNotMain = "package_not_main"
	// ruleMainMissing: no top-level func main.
	ruleMainMissing = "main_missing"
	// ruleMainSignature: func main has parameters, results or type
	// parameters.
	ruleMainSignature = "main_signature"
	// ruleImportNotAllowed: an import path that is not byte-identical to
	// an entry of the seam's allowlist, or that a denial covers (a denied
	// standard package, anything internal, cap/internal/...).
	ruleImportNotAllowed = "import_not_allowed"
	// ruleImportNotPlain: an allowed path written with escapes; write it
	// as the plain "path".
	ruleImportNotPlain = "import_not_plain"
	// ruleCgoImport: import "C"; cgo is never available.
	ruleCgoImport = "cgo_import"
	// ruleDirectiveComment: a comment whose text right after // or /*
	// starts with "go:" (//go:linkname, //go:embed, //go:cgo_*, ...).
	ruleDirectiveComment = "directive_comment"
	// ruleLineDirective: a comment whose text right after // or /*
	// starts with "line " (a //line or /*line position directive).
	ruleLineDirective = "line_directive"
	// ruleBuildConstraint: a //go:build line, or a // comment whose text
	// after any spaces starts with "+build".
	ruleBuildConstraint = "build_constraint"
	// ruleFuncWithoutBody: a function or method declared without a body
	// (its body would come from assembly or a linkname).
	ruleFuncWithoutBody = "func_without_body"
)

// Violation is one thing vetting refused.
type Violation struct {
	// Rule is the rule broken, a stable snake_case word:
	//   - "source_too_large" (over 256 KiB), "source_not_utf8" and
	//     "source_nul_byte": nothing else was checked;
	//   - "parse_error": VetError.Parse shows the first under a caret;
	//   - "package_not_main", "main_missing", "main_signature";
	//   - "import_not_allowed" (not on the seam's allowlist, or denied),
	//     "import_not_plain" (an allowed path written with escapes),
	//     "cgo_import";
	//   - "directive_comment" (//go:…), "line_directive",
	//     "build_constraint", "func_without_body".
	Rule string
	// Construct is the offending source construct, printable and at most
	// 96 bytes: `import "os"`, `//go:linkname x y`.
	Construct string
	// Line and Column locate it (1-based; the column counts bytes), as
	// written in the file: //line directives do not move them. Both are
	// 0 for a violation about the whole source.
	Line, Column int
}

// VetError is a refused program: every violation found in one pass, the
// seam's allowlist, and for a source go/parser refused a caret excerpt of
// the first error. Its code is CodeVetRefused.
type VetError struct {
	// Violations, sorted by position, all of them.
	Violations []Violation
	// Allowlist is the seam's allowlist the imports were checked against.
	Allowlist []string
	// Parse is the caret excerpt of the first parse error, or "" if the
	// source parsed.
	Parse string
	// Compile is what type-checking the refused program found, the
	// imports vetting refused stubbed (their names unchecked): the
	// compile errors as the compiler writes them ("main.go:L:C: ..."), at
	// most 32 itemised, and hints naming where an undefined capability
	// name is; at most 8 KiB. The code_mode tool fills it; "" when
	// TypeChecked is false or nothing was found.
	Compile string
	// TypeChecked says the type check ran to its end: a source that
	// parsed, with the toolchain's archives at hand.
	TypeChecked bool
	// seam names the seam in the rendering.
	seam string
	// fset and file are the parsed source (nil when it did not parse),
	// for the type check.
	fset *token.FileSet
	file *ast.File
	// withheld says why an MCP package path is not offered (nil: the
	// generic reason).
	withheld func(path string) string
}

// Code is CodeVetRefused.
func (e *VetError) Code() tool.Code { return CodeVetRefused }

// ErrorCode is Code as a string, so tool.CodeOf reads it (see
// tool.CodedError).
func (e *VetError) ErrorCode() string { return string(e.Code()) }

// Error renders every violation (at most 32 itemised, the rest counted)
// with its rule, construct and line:column, why a refused import is
// refused (its denial, why the seam leaves it out, or for an unknown
// capability package the seam's ones and the nearest), the caret
// excerpt, and the allowlist when some refused import has no such
// reason, in at most 16 KiB; then
// what the type check found (Compile, at most 8 KiB more) or that it
// found nothing.
func (e *VetError) Error() string {
	var b strings.Builder
	n := len(e.Violations)
	fmt.Fprintf(&b, "program refused before it was built (%s): %d violation", CodeVetRefused, n)
	if n != 1 {
		b.WriteString("s")
	}
	b.WriteString("\n")
	listed := e.needsAllowlist()
	for i, v := range e.Violations {
		if i == maxViolationsShown {
			fmt.Fprintf(&b, "  ... and %d more\n", n-maxViolationsShown)
			break
		}
		b.WriteString("  ")
		if v.Line > 0 {
			fmt.Fprintf(&b, "%s:%d:%d: ", programFileName, v.Line, v.Column)
		}
		fmt.Fprintf(&b, "%s: %s", v.Rule, v.Construct)
		if v.Rule == rulePackageNotMain {
			b.WriteString(" (a program is package main)")
		}
		if v.Rule == ruleImportNotAllowed {
			if reason, ok := e.importReason(v.Construct, listed); ok {
				b.WriteString(" (" + reason + ")")
			}
		}
		b.WriteString("\n")
	}
	if e.Parse != "" {
		b.WriteString(e.Parse)
	}
	if listed {
		fmt.Fprintf(&b, "allowed imports (%s seam): %s (fs_read cap:// describes them), and the standard packages %s\n",
			e.seamName(), strings.Join(e.capPackages(), ", "), groupedPaths(e.stdPackages()))
	}
	out := truncateUTF8(b.String(), maxVetErrorBytes)
	switch {
	case e.Compile != "":
		out = strings.TrimRight(out, "\n") + "\nType-checked" + e.stubbed() + ", the program also has these compile errors; fix them in the same edit:\n" + e.Compile
	case e.TypeChecked:
		out = strings.TrimRight(out, "\n") + "\nType-checked" + e.stubbed() + ", the program has no other compile error.\n"
	}
	return out
}

// stubbed is what the type check's note says of refused imports: that
// they were stubbed, when vetting refused one.
func (e *VetError) stubbed() string {
	if e.refusesAnImport() {
		return " (refused imports stubbed)"
	}
	return ""
}

// refusesAnImport reports whether a violation is about an import.
func (e *VetError) refusesAnImport() bool {
	for _, v := range e.Violations {
		switch v.Rule {
		case ruleImportNotAllowed, ruleImportNotPlain, ruleCgoImport:
			return true
		}
	}
	return false
}

// needsAllowlist reports whether some refused import has no reason of its
// own (importReason): only then does the rendering list what may be
// imported. A denied, withheld or misspelt capability import already names
// its repair.
func (e *VetError) needsAllowlist() bool {
	for _, v := range e.Violations {
		if v.Rule != ruleImportNotAllowed {
			continue
		}
		if _, ok := e.importReason(v.Construct, false); !ok {
			return true
		}
	}
	return false
}

func (e *VetError) seamName() string {
	if e.seam == "" {
		return "this"
	}
	return e.seam
}

// capPackages is the capability packages of the allowlist (MCP packages
// left out: fs_read cap://mcp lists them), in order.
func (e *VetError) capPackages() []string {
	var out []string
	for _, p := range e.Allowlist {
		if strings.HasPrefix(p, preludeModule+"/") && !isMCPPath(p) {
			out = append(out, p)
		}
	}
	return out
}

// stdPackages is the allowlist's standard packages, in order.
func (e *VetError) stdPackages() []string {
	var out []string
	for _, p := range e.Allowlist {
		if !strings.HasPrefix(p, preludeModule+"/") {
			out = append(out, p)
		}
	}
	return out
}

// importPath recovers the path from an import construct vet wrote
// (`import "p"` or `import name "p"`).
func importPath(construct string) (string, bool) {
	i := strings.IndexByte(construct, '"')
	if i < 0 {
		return "", false
	}
	p, err := strconv.Unquote(construct[i:])
	if err != nil {
		return "", false
	}
	return p, true
}

// importReason is why a refused import construct is refused, when that
// reason names its repair: its denial ("denied: ..."), why the seam leaves
// it out ("not offered: ..."), or for an unknown capability package the
// ones the seam offers and the nearest of them ("not offered: no
// capability package cap/file on the workspace seam; did you mean
// cap/fs? It offers ..."; the offered ones left out when listed says the
// rendering lists them anyway). ok is false for any other path, whose
// repair is the allowlist.
func (e *VetError) importReason(construct string, listed bool) (string, bool) {
	p, ok := importPath(construct)
	if !ok {
		return "", false
	}
	if reason, ok := denialOf(p); ok {
		return "denied: " + reason, true
	}
	if reason, ok := e.importWithheld(p); ok {
		return "not offered: " + reason, true
	}
	if name, ok := strings.CutPrefix(p, preludeModule+"/"); ok {
		offered := e.capPackages()
		s := "not offered: no capability package " + p + " on the " + e.seamName() + " seam"
		if near := nearestPackage(name, offered); near != "" {
			s += "; did you mean " + near + "?"
		} else if !listed {
			s += "."
		}
		switch {
		case listed:
		case len(offered) == 0:
			s += " It offers none."
		default:
			s += " It offers " + strings.Join(offered, ", ") + " (fs_read cap:// describes them)."
		}
		return s, true
	}
	return "", false
}

// withheldPackages says why a seam may leave out a capability package
// the prelude has: what the host must configure to offer it.
var withheldPackages = map[string]string{
	"cap/lsp": "cap/lsp is offered only when the host runs a language server for the workspace, and this host runs none; its calls also need the fs_read tool",
}

// importWithheld reports why a seam leaves out the import path p, if it
// is a package only some hosts offer: cap/lsp, or an MCP server's
// package.
func (e *VetError) importWithheld(p string) (string, bool) {
	if isMCPPath(p) {
		if e.withheld != nil {
			return e.withheld(p), true
		}
		return (*mcpSet)(nil).withheld(p), true
	}
	reason, ok := withheldPackages[p]
	return reason, ok
}

// Program is a vetted program: its source, what it imports, and the seam
// it was vetted against. Only vetting (Engine.Vet, Engine.VetOn) makes
// one, so holding a *Program means the source passed.
type Program struct {
	// Source is a copy of the vetted source.
	Source []byte
	// Imports are the program's import paths, sorted, without duplicates.
	Imports []string
	// Seam is the seam the program was vetted against.
	Seam Seam
	// generated are the MCP packages it imports, built with it.
	generated []generatedSource
	fset      *token.FileSet
	file      *ast.File
}

// Digest is the hex SHA-256 of Source.
func (p *Program) Digest() string {
	sum := sha256.Sum256(p.Source)
	return hex.EncodeToString(sum[:])
}

// vet checks src against seam, as Engine.VetOn states, and returns the
// vetted Program or a *VetError holding every violation. It never
// panics, never reads anything but src, and is safe for concurrent use.
func vet(src []byte, seam Seam) (*Program, error) {
	allow := seam.Allowlist()
	refuse := func(vs []Violation, excerpt string) *VetError {
		slices.SortStableFunc(vs, func(a, b Violation) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Column - b.Column
		})
		return &VetError{Violations: vs, Allowlist: allow, Parse: excerpt, seam: seam.Name}
	}
	if len(src) > maxSourceBytes {
		return nil, refuse([]Violation{{
			Rule:      ruleSourceTooLarge,
			Construct: fmt.Sprintf("%d bytes, over the %d-byte limit", len(src), maxSourceBytes),
		}}, "")
	}
	if vs := encodingViolations(src); len(vs) > 0 {
		return nil, refuse(vs, "")
	}
	src = slices.Clone(src)

	vs, lineDirectives := commentViolations(src)

	// go/parser honours //line and /*line directives when it positions
	// its errors; parse a copy with each one defused ("line " -> "Line ",
	// same offsets) so parse errors point at the bytes as written. A
	// source with a directive is refused, so an accepted source was
	// parsed as is.
	parse := src
	if len(lineDirectives) > 0 {
		parse = slices.Clone(src)
		for _, off := range lineDirectives {
			parse[off] = 'L'
		}
	}
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, programFileName, parse, parser.ParseComments)
	excerpt := ""
	parsed := err == nil
	if err != nil {
		errs, ok := err.(scanner.ErrorList)
		if !ok || len(errs) == 0 {
			errs = scanner.ErrorList{{Msg: err.Error()}}
		}
		for _, e := range errs {
			vs = append(vs, Violation{Rule: ruleParseError, Construct: construct(e.Msg), Line: e.Pos.Line, Column: e.Pos.Column})
		}
		excerpt = caretExcerpt(src, errs[0].Pos.Line, errs[0].Pos.Column, errs[0].Msg)
	}

	var imports []string
	if file != nil {
		iv, paths := importViolations(fset, file, allow, parsed)
		vs = append(vs, iv...)
		imports = paths
	}
	if parsed {
		vs = append(vs, declViolations(fset, file)...)
	}
	if len(vs) > 0 {
		ve := refuse(vs, excerpt)
		if parsed {
			ve.fset, ve.file = fset, file
		}
		return nil, ve
	}
	slices.Sort(imports)
	return &Program{
		Source:  src,
		Imports: slices.Compact(imports),
		Seam:    Seam{Name: seam.Name, Packages: slices.Clone(seam.Packages)},
		fset:    fset,
		file:    file,
	}, nil
}

// encodingViolations reports the first NUL byte and the first byte that
// is not UTF-8, if any.
func encodingViolations(src []byte) []Violation {
	var vs []Violation
	line, lineStart := 1, 0
	sawNUL, sawBad := false, false
	for i := 0; i < len(src) && !(sawNUL && sawBad); {
		c := src[i]
		if c == '\n' {
			line, lineStart = line+1, i+1
		}
		if c == 0 && !sawNUL {
			sawNUL = true
			vs = append(vs, Violation{Rule: ruleSourceNUL, Construct: "NUL byte", Line: line, Column: i - lineStart + 1})
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && size == 1 && !sawBad {
			sawBad = true
			vs = append(vs, Violation{Rule: ruleSourceNotUTF8, Construct: fmt.Sprintf("byte 0x%02x", c), Line: line, Column: i - lineStart + 1})
		}
		i += size
	}
	return vs
}

// commentViolations scans every comment of src with go/scanner (so a
// file that does not parse still has all its comments checked) and
// refuses the directives the toolchain honours. It also returns the
// offset of the "l" of every line directive's "line ".
func commentViolations(src []byte) (vs []Violation, lineDirectives []int) {
	fset := token.NewFileSet()
	f := fset.AddFile(programFileName, -1, len(src))
	var s scanner.Scanner
	s.Init(f, src, func(token.Position, string) {}, scanner.ScanComments)
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return vs, lineDirectives
		}
		if tok != token.COMMENT {
			continue
		}
		if rule := commentRule(lit); rule != "" {
			p := fset.PositionFor(pos, false)
			if rule == ruleLineDirective {
				lineDirectives = append(lineDirectives, p.Offset+2)
			}
			vs = append(vs, Violation{Rule: rule, Construct: construct(lit), Line: p.Line, Column: p.Column})
		}
	}
}

// commentRule is the rule a comment (with its // or /* markers) breaks,
// or "". The text right after the marker is what the compiler matches, so
// "// go:x" and "// line 3" are ordinary comments.
func commentRule(c string) string {
	if len(c) < 2 {
		return ""
	}
	text := c[2:]
	if c[1] == '/' {
		if strings.HasPrefix(text, "go:build") {
			return ruleBuildConstraint
		}
		// A superset of what the go command reads as "// +build": any
		// space before it, anything after it.
		if strings.HasPrefix(strings.TrimLeftFunc(text, unicode.IsSpace), "+build") {
			return ruleBuildConstraint
		}
	}
	switch {
	case strings.HasPrefix(text, "go:"):
		return ruleDirectiveComment
	case strings.HasPrefix(text, "line "):
		return ruleLineDirective
	}
	return ""
}

// importViolations checks every import of file and returns the
// violations and the import paths. When the file did not parse, an
// import whose literal does not unquote is left to the parse error.
func importViolations(fset *token.FileSet, file *ast.File, allow []string, parsed bool) ([]Violation, []string) {
	var vs []Violation
	var paths []string
	for _, spec := range file.Imports {
		if spec.Path == nil {
			continue
		}
		pos := fset.PositionFor(spec.Path.Pos(), false)
		lit := spec.Path.Value
		path, err := strconv.Unquote(lit)
		if err != nil {
			if parsed {
				vs = append(vs, Violation{Rule: ruleImportNotAllowed, Construct: construct("import " + lit), Line: pos.Line, Column: pos.Column})
			}
			continue
		}
		paths = append(paths, path)
		name := ""
		if spec.Name != nil {
			name = spec.Name.Name + " "
		}
		shown := "import " + name + strconv.QuoteToASCII(path)
		_, denied := denialOf(path)
		_, listed := slices.BinarySearch(allow, path)
		switch {
		case path == "C":
			vs = append(vs, Violation{Rule: ruleCgoImport, Construct: construct(shown), Line: pos.Line, Column: pos.Column})
		case denied || !listed:
			vs = append(vs, Violation{Rule: ruleImportNotAllowed, Construct: construct(shown), Line: pos.Line, Column: pos.Column})
		case lit != `"`+path+`"` && lit != "`"+path+"`":
			vs = append(vs, Violation{Rule: ruleImportNotPlain, Construct: construct("import " + name + lit), Line: pos.Line, Column: pos.Column})
		}
	}
	return vs, paths
}

// declViolations checks the package clause, func main, and that every
// function has a body.
func declViolations(fset *token.FileSet, file *ast.File) []Violation {
	var vs []Violation
	at := func(rule, what string, p token.Pos) {
		pos := fset.PositionFor(p, false)
		vs = append(vs, Violation{Rule: rule, Construct: construct(what), Line: pos.Line, Column: pos.Column})
	}
	if file.Name.Name != "main" {
		at(rulePackageNotMain, "package "+file.Name.Name, file.Name.Pos())
	}
	hasMain := false
	for _, d := range file.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		what := "func " + fd.Name.Name
		if fd.Recv != nil {
			what = "method " + fd.Name.Name
		}
		if fd.Body == nil {
			at(ruleFuncWithoutBody, what, fd.Pos())
		}
		if fd.Recv == nil && fd.Name.Name == "main" {
			hasMain = true
			t := fd.Type
			if t.TypeParams.NumFields() > 0 || t.Params.NumFields() > 0 || t.Results.NumFields() > 0 {
				at(ruleMainSignature, "func main must be declared func main()", fd.Name.Pos())
			}
		}
	}
	if !hasMain {
		at(ruleMainMissing, "no func main()", file.Package)
	}
	return vs
}

// construct makes s printable and at most maxConstructBytes.
func construct(s string) string {
	return truncateUTF8(printable(s), maxConstructBytes)
}

// printable replaces every rune of s that is neither a tab nor printable
// with one '?', so a rendering cannot carry control sequences and a
// caret counted in runes stays aligned.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' || unicode.IsPrint(r) {
			return r
		}
		return '?'
	}, s)
}

// truncateUTF8 cuts s to at most n bytes at a rune boundary, ending in
// "..." when it cut.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "..."
	cut := n - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// caretExcerpt renders line of src with a caret under col (1-based,
// bytes), both bounded by maxExcerptBytes, after the message.
func caretExcerpt(src []byte, line, col int, msg string) string {
	if line < 1 {
		return "parse error: " + construct(msg) + "\n"
	}
	rest := src
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			rest = nil
			break
		}
		rest = rest[i+1:]
	}
	if i := bytes.IndexByte(rest, '\n'); i >= 0 {
		rest = rest[:i]
	}
	text := string(rest)
	text = strings.TrimSuffix(text, "\r")
	off := min(max(col-1, 0), len(text))
	// Window the line around the column.
	lo := 0
	if off > maxExcerptBytes/2 {
		lo = off - maxExcerptBytes/2
	}
	for lo > 0 && lo < len(text) && !utf8.RuneStart(text[lo]) {
		lo--
	}
	hi := min(len(text), lo+maxExcerptBytes)
	for hi < len(text) && hi > lo && !utf8.RuneStart(text[hi]) {
		hi--
	}
	shown := text[lo:hi]
	var caret strings.Builder
	for _, r := range text[lo:max(lo, min(off, hi))] {
		if r == '\t' {
			caret.WriteRune('\t')
		} else {
			caret.WriteRune(' ')
		}
	}
	gutter := strconv.Itoa(line)
	pad := strings.Repeat(" ", len(gutter))
	return fmt.Sprintf("parse error at %s:%d:%d: %s\n  %s | %s\n  %s | %s^\n", programFileName, line, col, construct(msg), gutter, printable(shown), pad, caret.String())
}
