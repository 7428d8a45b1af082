package codemode

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// preludeCalls returns every capability the prelude's program-facing
// packages call (client.Call's name argument, a literal or a constant of
// the calling function), with the package that calls it.
func preludeCalls(t *testing.T) map[string]string {
	t.Helper()
	calls := map[string]string{}
	for _, imp := range embeddedPreludePackages() {
		dir := strings.TrimPrefix(imp, preludeModule+"/")
		if strings.HasPrefix(dir, "internal/") {
			continue
		}
		for _, f := range parsePreludeDir(t, token.NewFileSet(), dir, parser.Mode(0)) {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) < 2 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Call" || !isIdent(sel.X, "client") {
					return true
				}
				name, ok := stringValue(call.Args[1])
				if !ok {
					t.Errorf("%s: client.Call with a name that is not a literal or a constant", imp)
					return true
				}
				calls[name] = imp
				return true
			})
		}
	}
	return calls
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// stringValue reads a string literal, or the literal a local constant
// holds.
func stringValue(e ast.Expr) (string, bool) {
	if id, ok := e.(*ast.Ident); ok && id.Obj != nil {
		if vs, ok := id.Obj.Decl.(*ast.ValueSpec); ok && len(vs.Values) == 1 {
			e = vs.Values[0]
		}
	}
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// TestCapabilitiesMatchThePrelude: the table declares exactly the
// capabilities the prelude calls, each in the package that calls it, so a
// capability cannot be served that no program can call, nor called and
// never served.
func TestCapabilitiesMatchThePrelude(t *testing.T) {
	t.Parallel()
	calls := preludeCalls(t)
	if len(calls) < 20 {
		t.Fatalf("found %d prelude calls: the walk is broken", len(calls))
	}
	for name, imp := range calls {
		c := lookupCapability(name)
		switch {
		case c == nil:
			t.Errorf("the prelude's %s calls %s, which the table does not declare", imp, name)
		case c.pkg() != imp:
			t.Errorf("%s is called from %s but declared in %s", name, imp, c.pkg())
		}
	}
	for _, c := range capabilities {
		if _, ok := calls[c.name]; !ok {
			t.Errorf("the table declares %s, which no prelude package calls", c.name)
		}
	}
}

// TestCapabilityRows: every row can be served, authorizing tools are
// named once each, and every capability belongs to a seam that offers
// its package.
func TestCapabilityRows(t *testing.T) {
	t.Parallel()
	seams := []Seam{WorkspaceSeam(), OrchestrationSeam()}
	for _, c := range capabilities {
		if c.serve == nil {
			t.Errorf("%s has no handler", c.name)
		}
		if len(slices.Compact(slices.Sorted(slices.Values(c.authorizedBy)))) != len(c.authorizedBy) {
			t.Errorf("%s names an authorizing tool twice: %q", c.name, c.authorizedBy)
		}
		if !slices.ContainsFunc(seams, func(s Seam) bool { return s.offers(c.name) }) {
			t.Errorf("%s is in %s, which no seam offers", c.name, c.pkg())
		}
	}
	if got, want := len(capabilityNames()), len(capabilities); got != want {
		t.Errorf("capabilityNames() lists %d, the table %d", got, want)
	}
}
