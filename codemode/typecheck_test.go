package codemode

import (
	"context"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"slices"
	"strings"
	"sync"
	"testing"
)

// slotTests keeps the tests that assert a refusal was type-checked from
// taking each other's check slot (the builder is shared, and a check
// finding the slot held is skipped by design).
var slotTests sync.Mutex

// typeCheckWhenFree type-checks ve, and if another check held the
// builder's slot, waits for the slot to be free and tries again, so an
// assertion that ve was checked fails only when checking fails.
func typeCheckWhenFree(t *testing.T, e *Engine, ve *VetError) {
	t.Helper()
	b, err := e.buildStage()
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		e.typeCheckRefused(context.Background(), ve)
		if ve.TypeChecked {
			return
		}
		b.checking <- struct{}{} // wait for whichever check holds it
		<-b.checking
	}
}

// TestCheckStubbed: the type check reports the program's own compile
// errors as the compiler writes them, and nothing about a stubbed
// import or the names used through it; an allowed import that does not
// load makes the whole check untrusted.
func TestCheckStubbed(t *testing.T) {
	t.Parallel()
	stubbed := func(p string) bool { return p == "os" || p == "net/http" || p == "C" }
	cases := []struct {
		name string
		src  string
		want []string
		ok   bool
	}{
		{"clean", "package main\n\nimport \"os\"\n\nfunc main() { os.Exit(f(os.Args)) }\n\nfunc f(x any) int { return 0 }\n", nil, true},
		{"own_errors", "package main\n\nimport (\n\t\"os\"\n\t\"strings\"\n)\n\nfunc main() {\n\tvar n int = \"x\"\n\t_ = strings.ToUpper(os.Getenv(\"A\"), 2)\n\tos.Exit(n)\n\tundefinedFunc()\n}\n",
			[]string{
				`main.go:9:14: cannot use "x" (untyped string constant) as int value in variable declaration`,
				"main.go:10:38: too many arguments in call to strings.ToUpper\n\thave (unknown type, number)\n\twant (string)",
				"main.go:12:2: undefined: undefinedFunc",
			}, true},
		{"unused_stub", "package main\n\nimport _ \"os\"\nimport h \"net/http\"\n\nfunc main() {}\n", nil, true},
		{"unused_allowed", "package main\n\nimport \"strings\"\n\nfunc main() {}\n", []string{`main.go:3:8: "strings" imported and not used`}, true},
		{"cgo", "package main\n\nimport \"C\"\n\nfunc main() { C.free(nil) }\n", nil, true},
		{"bad_import", "package main\n\nimport \"nosuch/pkg\"\n\nfunc main() { pkg.X() }\n", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, programFileName, c.src, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			r := checkStubbed(fset, f, importer.ForCompiler(fset, "source", nil), stubbed)
			if r.ok != c.ok {
				t.Fatalf("ok %v, want %v (%q)", r.ok, c.ok, r.diags)
			}
			if c.ok && !slices.Equal(r.diags, c.want) {
				t.Fatalf("got  %q\nwant %q", r.diags, c.want)
			}
		})
	}
}

// TestCheckStubbedIsBounded: past maxTypeErrors errors, the rest are
// counted.
func TestCheckStubbedIsBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("package main\n\nfunc main() {\n")
	for range maxTypeErrors + 5 {
		b.WriteString("\tnope()\n")
	}
	b.WriteString("}\n")
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, programFileName, b.String(), 0)
	if err != nil {
		t.Fatal(err)
	}
	r := checkStubbed(fset, f, importerFunc(func(string) (*types.Package, error) { return nil, errStubbed }), func(string) bool { return false })
	if len(r.diags) != maxTypeErrors+1 || r.diags[maxTypeErrors] != "... and 5 more" {
		t.Fatalf("%d lines, last %q", len(r.diags), r.diags[len(r.diags)-1])
	}
}

// TestAboutStubbed: only the messages about a stubbed import itself are
// dropped.
func TestAboutStubbed(t *testing.T) {
	t.Parallel()
	stubbed := func(p string) bool { return p == "os" }
	for msg, want := range map[string]bool{
		"could not import os (stubbed: vetting refused this import)": true,
		`"os" imported and not used`:                                 true,
		`"os" imported as o and not used`:                            true,
		"could not import strings (no such file)":                    false,
		`"strings" imported and not used`:                            false,
		`"os`:                                                        false,
		"undefined: os":                                              false,
	} {
		if got := aboutStubbed(types.Error{Msg: msg}, stubbed); got != want {
			t.Errorf("%q: %v, want %v", msg, got, want)
		}
	}
}

// TestVetRefusalCarriesTheCompileErrors: through the tool, a program
// vetting refuses is type-checked with the refused imports stubbed, so
// the one answer carries the refusal, the compile errors and the hints;
// a program with nothing else wrong says so.
func TestVetRefusalCarriesTheCompileErrors(t *testing.T) {
	t.Parallel()
	slotTests.Lock() // after Parallel: a parallel test waits in Parallel for the serial ones
	defer slotTests.Unlock()
	s := newSession(t, nil)
	// The archives of the allowed imports are made by a build (a cold
	// cache can take longer than a refusal waits for them).
	if o := s.dispatch(t, map[string]any{"program": "package main\n\nimport (\n\t\"strings\"\n\n\t\"cap/proc\"\n)\n\nfunc main() { _, _ = strings.ToUpper, proc.Run }\n"}); o.IsError {
		t.Fatalf("%s: %s", o.Code, o.Text)
	}
	o := s.dispatch(t, map[string]any{"program": "package main\n\nimport (\n\t\"os\"\n\t\"strings\"\n\n\t\"cap/proc\"\n)\n\nfunc main() {\n\tvar n int = strings.ToUpper(\"x\")\n\t_, _ = proc.Start(nil, nil)\n\tos.Exit(n)\n}\n"})
	if !o.IsError || o.Code != CodeVetRefused {
		t.Fatalf("%s: %s", o.Code, o.Text)
	}
	for _, want := range []string{
		"import_not_allowed: import \"os\"",
		"Type-checked (refused imports stubbed), the program also has these compile errors",
		"main.go:11:14: cannot use strings.ToUpper(\"x\")",
		"main.go:12:14: undefined: proc.Start",
		"hint (line 12): Start is in cap/job, not cap/proc",
		"sandbox: build: not run (vetting refused the program) | run: did not start",
	} {
		if !strings.Contains(o.Text, want) {
			t.Errorf("the answer lacks %q:\n%s", want, o.Text)
		}
	}
	if strings.Contains(o.Text, "os.Exit") || strings.Contains(o.Text, "could not import") {
		t.Errorf("the answer reports the stubbed import's names:\n%s", o.Text)
	}
	o = s.dispatch(t, map[string]any{"program": "package main\n\nimport \"os\"\n\nfunc main() { os.Exit(1) }\n"})
	if !strings.Contains(o.Text, "the program has no other compile error") {
		t.Errorf("a refusal with nothing else wrong does not say so:\n%s", o.Text)
	}
	// One check at a time: while another holds the builder's slot (as
	// one past its bound does until it ends), a refusal is answered
	// unchecked; once the slot is free it is checked again.
	b, err := s.eng.buildStage()
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.eng.Vet([]byte("package main\n\nimport \"os\"\n\nfunc main() { os.Exit(1) }\n"))
	busy, ok := err.(*VetError)
	if !ok {
		t.Fatalf("%v", err)
	}
	b.checking <- struct{}{}
	s.eng.typeCheckRefused(context.Background(), busy)
	<-b.checking
	if busy.TypeChecked {
		t.Error("a refusal was type-checked while another check held the slot")
	}
	typeCheckWhenFree(t, s.eng, busy)
	if !busy.TypeChecked {
		t.Error("the control: a refusal was not type-checked with the slot free")
	}
	// A source that does not parse is not type-checked.
	o = s.dispatch(t, map[string]any{"program": "package main\n\nimport \"os\"\n\nfunc main() { os.Exit(1 }\n"})
	if strings.Contains(o.Text, "Type-checked") {
		t.Errorf("a source that does not parse was type-checked:\n%s", o.Text)
	}
}

// TestDeeperThan: the depth guard counts nesting, not size.
func TestDeeperThan(t *testing.T) {
	t.Parallel()
	parse := func(src string) *ast.File {
		f, err := parser.ParseFile(token.NewFileSet(), programFileName, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	wide := "package main\n\nfunc main() {\n" + strings.Repeat("\t_ = 1 + 2\n", 2000) + "}\n"
	deep := "package main\n\nvar x = " + strings.Repeat("(", maxTypeCheckDepth) + "1" + strings.Repeat(")", maxTypeCheckDepth) + "\n\nfunc main() {}\n"
	if deeperThan(parse(wide), maxTypeCheckDepth) {
		t.Error("a wide, shallow program counts as deep")
	}
	if !deeperThan(parse(deep), maxTypeCheckDepth) {
		t.Error("a deeply nested program does not count as deep")
	}
}

// TestVetErrorRendersTheTypeCheck: the refusal's text carries what the
// type check found, says when it found nothing, and says nothing when it
// did not run; it mentions stubs only when it refused an import; it stays
// bounded.
func TestVetErrorRendersTheTypeCheck(t *testing.T) {
	t.Parallel()
	base := func() *VetError {
		return &VetError{Violations: []Violation{{Rule: ruleImportNotAllowed, Construct: `import "os"`, Line: 3, Column: 8}}, Allowlist: []string{"fmt"}}
	}
	unchecked := base()
	clean := base()
	clean.TypeChecked = true
	found := base()
	found.TypeChecked, found.Compile = true, "main.go:5:2: undefined: x\n"
	noImport := &VetError{Violations: []Violation{{Rule: rulePackageNotMain, Construct: "package foo", Line: 1, Column: 9}}, Allowlist: []string{"fmt"}, TypeChecked: true}
	huge := base()
	for range 2 * maxViolationsShown {
		huge.Violations = append(huge.Violations, Violation{Rule: ruleDirectiveComment, Construct: strings.Repeat("x", maxConstructBytes), Line: 9, Column: 1})
	}
	huge.TypeChecked, huge.Compile = true, truncateUTF8(strings.Repeat("main.go:5:2: undefined: x\n", 1000), maxTypeCheckBytes)
	for _, c := range []struct {
		name     string
		e        *VetError
		has, not string
	}{
		{"unchecked", unchecked, "(denied: opens paths", "Type-checked"},
		{"clean", clean, "Type-checked (refused imports stubbed), the program has no other compile error", "also has"},
		{"no import refused", noImport, "Type-checked, the program has no other compile error", "stubbed"},
		{"found", found, "also has these compile errors; fix them in the same edit:\nmain.go:5:2: undefined: x\n", "no other"},
		{"huge", huge, "also has these compile errors", "no other"},
	} {
		got := c.e.Error()
		if !strings.Contains(got, c.has) || strings.Contains(got, c.not) {
			t.Errorf("%s: want %q and not %q:\n%s", c.name, c.has, c.not, got)
		}
		if len(got) > maxVetErrorBytes+maxTypeCheckBytes+256 {
			t.Errorf("%s: %d bytes", c.name, len(got))
		}
	}
}

// TestRedteamTypeCheckBuildsNoHugeConstant: go/types builds a constant
// string whole when it is measured or quoted, and constants declared by
// doubling ("const s1 = s0 + s0") reach gigabytes in a few lines, which
// the host would allocate (the check's time bound answers without it,
// but the check goes on): 40 lines of a refused program took the host
// past its memory. A program whose constant strings could pass
// maxConstStringBytes is not type-checked. Control: a short chain is.
func TestRedteamTypeCheckBuildsNoHugeConstant(t *testing.T) {
	t.Parallel()
	slotTests.Lock() // after Parallel: a parallel test waits in Parallel for the serial ones
	defer slotTests.Unlock()
	s := newSession(t, nil)
	chain := func(n int) *VetError {
		var b strings.Builder
		b.WriteString("package main\n\nimport \"os\"\n\nconst (\n\ts0 = \"0123456789abcdef\"\n")
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "\ts%d = s%d + s%d\n", i, i-1, i-1)
		}
		fmt.Fprintf(&b, ")\n\nfunc main() { os.Exit(len(s%d)) }\n", n)
		_, err := s.eng.Vet([]byte(b.String()))
		ve, ok := err.(*VetError)
		if !ok {
			t.Fatalf("%v", err)
		}
		return ve
	}
	// 16 bytes doubled 20 times is 16 MiB (checking it allocates some
	// hundred MiB, and twice as much per further line).
	huge := chain(20)
	s.eng.typeCheckRefused(context.Background(), huge)
	if huge.TypeChecked {
		t.Error("a program building a 16 MiB constant string was type-checked")
	}
	short := chain(8)
	typeCheckWhenFree(t, s.eng, short)
	if !short.TypeChecked {
		t.Error("the control: a program building a 4 KiB constant string was not type-checked")
	}
}

// TestRedteamTypeCheckExpandsNoHugeType: go/types expands an alias or
// a generic instance where it compares or validates one, and types
// declared by doubling ("type T1[P any] struct{ a T0[T0[P]] }") make
// that exponential: 18 such lines overflowed the host's stack (fatal,
// past any recover), and 40 alias lines ("type A1 = struct{ a, b A0 }")
// keep a core busy for hours after the check's time bound answered. A
// program whose aliases or generic types could expand past
// maxTypeExpansion is not type-checked. Control: short chains are.
func TestRedteamTypeCheckExpandsNoHugeType(t *testing.T) {
	t.Parallel()
	slotTests.Lock() // after Parallel: a parallel test waits in Parallel for the serial ones
	defer slotTests.Unlock()
	s := newSession(t, nil)
	vet := func(src string) *VetError {
		_, err := s.eng.Vet([]byte(src))
		ve, ok := err.(*VetError)
		if !ok {
			t.Fatalf("%v", err)
		}
		return ve
	}
	generic := func(n int) *VetError {
		var b strings.Builder
		b.WriteString("package main\n\nimport \"os\"\n\ntype T0[P any] struct{ p P }\n")
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "type T%d[P any] struct{ a T%d[T%d[P]] }\n", i, i-1, i-1)
		}
		fmt.Fprintf(&b, "\nvar x T%d[int]\n\nfunc main() { os.Exit(x) }\n", n)
		return vet(b.String())
	}
	alias := func(n int) *VetError {
		var b strings.Builder
		b.WriteString("package main\n\nimport \"os\"\n\ntype A0 = struct{ p int }\ntype B0 = struct{ p int }\n")
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "type A%d = struct{ a, b A%d }\ntype B%d = struct{ a, b B%d }\n", i, i-1, i, i-1)
		}
		fmt.Fprintf(&b, "\nvar x A%d\nvar y B%d = x\n\nfunc main() { os.Exit(x) }\n", n, n)
		return vet(b.String())
	}
	for _, c := range []struct {
		name    string
		ve      *VetError
		checked bool
	}{
		{"generic, 15 doublings", generic(15), false},
		{"alias, 16 doublings", alias(16), false},
		{"generic, 6 doublings (control)", generic(6), true},
		{"alias, 6 doublings (control)", alias(6), true},
	} {
		if c.checked {
			typeCheckWhenFree(t, s.eng, c.ve)
		} else {
			s.eng.typeCheckRefused(context.Background(), c.ve)
		}
		if c.ve.TypeChecked != c.checked {
			t.Errorf("%s: type-checked %v, want %v", c.name, c.ve.TypeChecked, c.checked)
		}
	}
}
