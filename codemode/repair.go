package codemode

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The kinds of Repair (Repair.Kind).
const (
	// repairDropImport removed an import the program did not use.
	repairDropImport = "drop_import"
	// repairBlankUse added `_ = name` for a variable declared and not used.
	repairBlankUse = "blank_use"
	// repairDropLabel removed a label defined and not used.
	repairDropLabel = "drop_label"
)

// Repair is one edit the build made to a program before building it
// again: at Line (of the submitted source), of Kind, on Name (the import
// path, the variable or the label). Kind is "drop_import" (an import the
// program did not use was removed), "blank_use" (`_ = name` was added for
// a variable declared and not used) or "drop_label" (a label defined and
// not used was removed).
type Repair struct {
	Line int    `json:"line"`
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// diagLine is one compiler diagnostic about the program file.
var diagLine = regexp.MustCompile(`^` + regexp.QuoteMeta(programFileName) + `:(\d+):(\d+): (.*)$`)

// The unused-entity messages of the Go 1.26 compiler, exactly.
var (
	unusedImport    = regexp.MustCompile(`^"([^"]+)" imported and not used$`)
	unusedImportAs  = regexp.MustCompile(`^"([^"]+)" imported as ([\pL_][\pL\pN_]*) and not used$`)
	unusedVar       = regexp.MustCompile(`^declared and not used: ([\pL_][\pL\pN_]*)$`)
	unusedSwitchVar = regexp.MustCompile(`^([\pL_][\pL\pN_]*) declared and not used$`)
	unusedLabel     = regexp.MustCompile(`^label ([\pL_][\pL\pN_]*) defined and not used$`)
)

// textEdit replaces src[from:to] with text (an insertion when from ==
// to).
type textEdit struct {
	from, to int
	text     string
}

// repairUnused rewrites src when every line of diag is an unused-import,
// unused-variable or unused-label error about the program file: the
// import is dropped, `_ = name` is added where the variable comes into
// scope, the label is dropped. It is all or nothing: any other line, a
// diagnostic it cannot place, or a result that does not parse gives ok
// false. Lines of the source keep their numbers.
func repairUnused(src []byte, diag string) (fixed []byte, repairs []Repair, ok bool) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, programFileName, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, nil, false
	}
	tf := fset.File(file.Pos())
	var edits []textEdit
	lines := strings.Split(strings.TrimRight(diag, "\n"), "\n")
	for _, l := range lines {
		m := diagLine.FindStringSubmatch(l)
		if m == nil {
			return nil, nil, false
		}
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		if line < 1 || line > tf.LineCount() {
			return nil, nil, false
		}
		pos := tf.LineStart(line) + token.Pos(col-1)
		if int(pos) > tf.Base()+tf.Size() {
			return nil, nil, false
		}
		msg := m[3]
		var e []textEdit
		var r Repair
		switch {
		case unusedImport.MatchString(msg):
			r = Repair{Line: line, Kind: repairDropImport, Name: unusedImport.FindStringSubmatch(msg)[1]}
			e = dropImport(file, tf, pos, r.Name)
		case unusedImportAs.MatchString(msg):
			r = Repair{Line: line, Kind: repairDropImport, Name: unusedImportAs.FindStringSubmatch(msg)[1]}
			e = dropImport(file, tf, pos, r.Name)
		case unusedVar.MatchString(msg):
			r = Repair{Line: line, Kind: repairBlankUse, Name: unusedVar.FindStringSubmatch(msg)[1]}
			e = blankUse(file, tf, pos, r.Name)
		case unusedSwitchVar.MatchString(msg):
			r = Repair{Line: line, Kind: repairBlankUse, Name: unusedSwitchVar.FindStringSubmatch(msg)[1]}
			e = blankUse(file, tf, pos, r.Name)
		case unusedLabel.MatchString(msg):
			r = Repair{Line: line, Kind: repairDropLabel, Name: unusedLabel.FindStringSubmatch(msg)[1]}
			e = dropLabel(file, tf, pos, r.Name)
		}
		if len(e) == 0 {
			return nil, nil, false
		}
		edits = append(edits, e...)
		repairs = append(repairs, r)
	}
	fixed, ok = applyEdits(src, edits)
	if !ok {
		return nil, nil, false
	}
	if _, err := parser.ParseFile(token.NewFileSet(), programFileName, fixed, parser.SkipObjectResolution); err != nil {
		return nil, nil, false
	}
	slices.SortStableFunc(repairs, func(a, b Repair) int { return a.Line - b.Line })
	return fixed, repairs, true
}

// dropImport removes the import spec of path at pos; the whole
// declaration when it is an unparenthesised one.
func dropImport(file *ast.File, tf *token.File, pos token.Pos, path string) []textEdit {
	for _, d := range file.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.IMPORT {
			continue
		}
		for _, s := range gd.Specs {
			is := s.(*ast.ImportSpec)
			// The compiler places the error at the spec: its name when it
			// has one, else its path.
			if v, err := strconv.Unquote(is.Path.Value); err != nil || (is.Pos() != pos && is.Path.Pos() != pos) || v != path {
				continue
			}
			if !gd.Lparen.IsValid() {
				return []textEdit{{from: tf.Offset(gd.Pos()), to: tf.Offset(gd.End())}}
			}
			return []textEdit{{from: tf.Offset(is.Pos()), to: tf.Offset(is.End())}}
		}
	}
	return nil
}

// dropLabel removes `name:` of the labeled statement whose label is at
// pos, keeping the statement.
func dropLabel(file *ast.File, tf *token.File, pos token.Pos, name string) []textEdit {
	var out []textEdit
	ast.Inspect(file, func(n ast.Node) bool {
		if ls, ok := n.(*ast.LabeledStmt); ok && ls.Label.Pos() == pos && ls.Label.Name == name {
			out = []textEdit{{from: tf.Offset(ls.Label.Pos()), to: tf.Offset(ls.Colon) + 1}}
		}
		return out == nil
	})
	return out
}

// blankUse adds `_ = name` where the variable declared at pos comes into
// scope: after its declaring statement in a statement list, or at the
// start of the body (or of every clause) of the if, for, range, switch,
// type switch or select case that declares it.
func blankUse(file *ast.File, tf *token.File, pos token.Pos, name string) []textEdit {
	var stack []ast.Node
	var path []ast.Node
	ast.Inspect(file, func(n ast.Node) bool {
		if path != nil {
			return false
		}
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		if id, ok := n.(*ast.Ident); ok && id.Pos() == pos && id.Name == name {
			path = slices.Clone(stack)
		}
		return true
	})
	if path == nil {
		return nil
	}
	use := "_ = " + name
	after := func(p token.Pos) []textEdit {
		o := tf.Offset(p) + 1
		return []textEdit{{from: o, to: o, text: " " + use + ";"}}
	}
	for i := len(path) - 1; i > 0; i-- {
		child, parent := path[i], path[i-1]
		switch p := parent.(type) {
		case *ast.IfStmt:
			if child == p.Init {
				return after(p.Body.Lbrace)
			}
		case *ast.ForStmt:
			if child == p.Init {
				return after(p.Body.Lbrace)
			}
		case *ast.RangeStmt:
			if child == p.Key || child == p.Value {
				return after(p.Body.Lbrace)
			}
		case *ast.SwitchStmt:
			if child == p.Init {
				return after(p.Body.Lbrace)
			}
		case *ast.TypeSwitchStmt:
			if child == p.Init {
				return after(p.Body.Lbrace)
			}
			if child == p.Assign {
				var out []textEdit
				for _, c := range p.Body.List {
					out = append(out, after(c.(*ast.CaseClause).Colon)...)
				}
				return out
			}
		case *ast.CommClause:
			if child == p.Comm {
				return after(p.Colon)
			}
			if inList(p.Body, child) {
				return afterStmt(tf, child, use)
			}
		case *ast.CaseClause:
			if inList(p.Body, child) {
				return afterStmt(tf, child, use)
			}
		case *ast.BlockStmt:
			if inList(p.List, child) {
				return afterStmt(tf, child, use)
			}
		case *ast.FuncLit, *ast.FuncDecl:
			return nil // a parameter or result: never reported unused
		}
	}
	return nil
}

func inList(list []ast.Stmt, n ast.Node) bool {
	for _, s := range list {
		if s == n {
			return true
		}
	}
	return false
}

func afterStmt(tf *token.File, s ast.Node, use string) []textEdit {
	o := tf.Offset(s.End())
	return []textEdit{{from: o, to: o, text: "; " + use}}
}

// applyEdits applies non-overlapping edits; insertions at one offset
// keep their order. Overlapping edits give ok false.
func applyEdits(src []byte, edits []textEdit) ([]byte, bool) {
	slices.SortStableFunc(edits, func(a, b textEdit) int { return a.from - b.from })
	var out []byte
	at := 0
	for _, e := range edits {
		if e.from < at || e.to < e.from || e.to > len(src) {
			return nil, false
		}
		out = append(out, src[at:e.from]...)
		out = append(out, e.text...)
		at = e.to
	}
	return append(out, src[at:]...), true
}
