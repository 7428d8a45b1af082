package codemode

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentloom/loom/tool"
)

// docFacts is what a package's full documentation must show, found
// straight from its syntax: the package doc's code lines (its examples),
// a declaration prefix for every exported function, method, type,
// constant and variable, and each one's doc comment with spacing
// collapsed.
type docFacts struct {
	codeLines []string
	decls     []string
	docs      []string
}

func factsOf(t *testing.T, tree fs.FS, importPath string) docFacts {
	t.Helper()
	dir := strings.TrimPrefix(importPath, "cap/")
	entries, err := fs.ReadDir(tree, dir)
	if err != nil {
		t.Fatal(err)
	}
	var d docFacts
	addDoc := func(cg *ast.CommentGroup) {
		if cg != nil {
			d.docs = append(d.docs, strings.Join(strings.Fields(cg.Text()), " "))
		}
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		src, err := fs.ReadFile(tree, dir+"/"+e.Name())
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), e.Name(), src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			for _, l := range strings.Split(f.Doc.Text(), "\n") {
				if strings.HasPrefix(l, "\t") {
					d.codeLines = append(d.codeLines, l)
				}
			}
		}
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				if !decl.Name.IsExported() {
					continue
				}
				if decl.Recv == nil {
					d.decls = append(d.decls, "func "+decl.Name.Name+"(")
				} else {
					d.decls = append(d.decls, ") "+decl.Name.Name+"(")
				}
				addDoc(decl.Doc)
			case *ast.GenDecl:
				exported := false
				for _, s := range decl.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							exported = true
							d.decls = append(d.decls, "type "+s.Name.Name+" ")
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								exported = true
								d.decls = append(d.decls, n.Name)
							}
						}
					}
				}
				if exported {
					addDoc(decl.Doc)
				}
			}
		}
	}
	return d
}

func TestSchemeServesEachPackageUnderBothSpellings(t *testing.T) {
	t.Parallel()
	seam := WorkspaceSeam()
	s := Scheme(seam)
	for _, p := range seam.Packages {
		name := strings.TrimPrefix(p, "cap/")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			facts := factsOf(t, embeddedPrelude(), p)
			if len(facts.codeLines) == 0 || len(facts.decls) == 0 || len(facts.docs) == 0 {
				t.Fatalf("%s: the prelude source shows no example, declaration or doc: %+v", p, facts)
			}
			var first string
			for _, uri := range []string{"cap://" + name, "cap://" + p, "cap://" + name + "/", "cap:///" + p} {
				o := s.Read(context.Background(), &tool.Call{}, uri)
				if o.IsError || o.Code != "" {
					t.Fatalf("%s: %s %s", uri, o.Code, o.Text)
				}
				if first == "" {
					first = o.Text
				} else if o.Text != first {
					t.Fatalf("%s answers differently from the first spelling:\n%s", uri, o.Text)
				}
			}
			text := first
			if head := "package " + path.Base(p) + " // import \"" + p + "\"\n"; !strings.HasPrefix(text, head) {
				t.Fatalf("does not start %q:\n%s", head, text)
			}
			for _, l := range facts.codeLines {
				if !strings.Contains(text, l+"\n") {
					t.Errorf("example line %q of the package doc is missing", l)
				}
			}
			for _, d := range facts.decls {
				if !strings.Contains(text, d) {
					t.Errorf("declaration %q is missing", d)
				}
			}
			flat := strings.Join(strings.Fields(text), " ")
			for _, d := range facts.docs {
				if !strings.Contains(flat, d) {
					t.Errorf("doc comment %q is missing", d)
				}
			}
			if strings.Contains(text, "client.") || strings.Contains(text, "internal") {
				t.Errorf("the documentation names the internal package:\n%s", text)
			}
			if len(text) > maxCapDocBytes || strings.Contains(text, "(cut:") {
				t.Errorf("%d bytes, cut: the package's documentation does not fit maxCapDocBytes (%d)", len(text), maxCapDocBytes)
			}
		})
	}
}

func TestSchemeIndexAndRefusals(t *testing.T) {
	t.Parallel()
	workspace := WorkspaceSeam()
	readOnly := Seam{Name: "readonly", Packages: []string{"cap/search", "cap/internal/client"}}
	for _, tc := range []struct {
		name    string
		seam    Seam
		uri     string
		code    tool.Code // "" for a success
		want    []string
		notWant []string
	}{
		{"index", workspace, "cap://", "", append([]string{"workspace seam", "fs_read cap://<name>", "cap://fs"}, workspace.Packages...), []string{"internal"}},
		{"index with a slash", workspace, "cap:///", "", workspace.Packages, []string{"internal"}},
		{"index of a narrower seam", readOnly, "cap://", "", []string{"readonly seam", "cap/search  Package search finds files"}, []string{"cap/fs", "internal"}},
		{"unknown", workspace, "cap://nope", CodeUnknownCapPackage, append([]string{"cap/nope"}, workspace.Packages...), nil},
		{"a std package", workspace, "cap://os", CodeUnknownCapPackage, workspace.Packages, nil},
		{"the module itself", workspace, "cap://cap", CodeUnknownCapPackage, workspace.Packages, nil},
		{"case matters", workspace, "cap://FS", CodeUnknownCapPackage, workspace.Packages, nil},
		{"below a package", workspace, "cap://fs/extra", CodeUnknownCapPackage, workspace.Packages, nil},
		{"a query", workspace, "cap://fs?all", CodeUnknownCapPackage, workspace.Packages, nil},
		{"a package the seam does not offer", readOnly, "cap://fs", CodeUnknownCapPackage, []string{"readonly seam", "cap/search"}, []string{"cap/job"}},
		{"internal", workspace, "cap://internal", CodeInternalCapPackage, workspace.Packages, []string{"func "}},
		{"an internal package", workspace, "cap://internal/client", CodeInternalCapPackage, workspace.Packages, []string{"func Call"}},
		{"an internal package, long spelling", workspace, "cap://cap/internal/wire", CodeInternalCapPackage, workspace.Packages, []string{"func "}},
		{"an internal package the seam lists", readOnly, "cap://internal/client", CodeInternalCapPackage, []string{"cap/search"}, []string{"func Call"}},
		{"another scheme", workspace, "job://x", tool.CodeUnknownScheme, []string{"job://x"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := Scheme(tc.seam).Read(context.Background(), &tool.Call{}, tc.uri)
			if o.Code != tc.code || o.IsError != (tc.code != "") {
				t.Fatalf("%s: code %q (error %v), want %q: %s", tc.uri, o.Code, o.IsError, tc.code, o.Text)
			}
			for _, w := range tc.want {
				if !strings.Contains(o.Text, w) {
					t.Errorf("%s: no %q in:\n%s", tc.uri, w, o.Text)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(o.Text, w) {
					t.Errorf("%s: %q in:\n%s", tc.uri, w, o.Text)
				}
			}
		})
	}
}

// TestSchemeIndexGivesEachSynopsis holds the index to one line per
// offered package carrying its package doc's first sentence.
func TestSchemeIndexGivesEachSynopsis(t *testing.T) {
	t.Parallel()
	seam := WorkspaceSeam()
	o := Scheme(seam).Read(context.Background(), &tool.Call{}, "cap://")
	if o.IsError {
		t.Fatal(o.Text)
	}
	for _, p := range seam.Packages {
		src, err := fs.ReadFile(embeddedPrelude(), strings.TrimPrefix(p, "cap/")+"/"+path.Base(p)+".go")
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, src, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil || f.Doc == nil {
			t.Fatalf("%s: no package doc (%v)", p, err)
		}
		sentence, _, _ := strings.Cut(strings.Join(strings.Fields(f.Doc.Text()), " "), ". ")
		found := false
		for _, l := range strings.Split(o.Text, "\n") {
			if strings.HasPrefix(l, p+" ") && strings.Contains(l, strings.TrimSuffix(sentence, ".")) {
				found = true
			}
		}
		if !found {
			t.Errorf("no index line for %s with %q:\n%s", p, sentence, o.Text)
		}
	}
}

func TestSchemeRefusesAnUndescribablePrelude(t *testing.T) {
	t.Parallel()
	tree := synthPrelude()
	offered := []string{"cap/a", "cap/leak", "cap/bad"}
	for _, tc := range []struct {
		uri  string
		code tool.Code
	}{
		{"cap://a", ""},
		{"cap://leak", CodePreludeUndescribable},
		{"cap://bad", CodePreludeUndescribable},
		{"cap://", CodePreludeUndescribable},
	} {
		o := readCap(tree, "test", offered, tc.uri)
		if o.Code != tc.code {
			t.Errorf("%s: code %q, want %q: %s", tc.uri, o.Code, tc.code, o.Text)
		}
	}
}

// TestSchemeResolvesTheInternalAlias holds the full documentation to show
// an alias of an internal type as that type's exported fields and methods
// under the alias's name, with the alias's doc.
func TestSchemeResolvesTheInternalAlias(t *testing.T) {
	t.Parallel()
	o := readCap(synthPrelude(), "test", []string{"cap/a"}, "cap://a")
	if o.IsError {
		t.Fatal(o.Text)
	}
	for _, w := range []string{"type E struct {\n\tCode string // the code to switch on\n}\n    E is x's error.\n", "func (e *E) Error() string\n    Error renders it.\n", "func (e *E) Unwrap() error\n"} {
		if !strings.Contains(o.Text, w) {
			t.Errorf("no %q in:\n%s", w, o.Text)
		}
	}
	for _, w := range []string{"x.E", "cause error", "hidden cause", "at()", "hidden()", "func unexported"} {
		if strings.Contains(o.Text, w) {
			t.Errorf("%q in:\n%s", w, o.Text)
		}
	}
}

func TestCapDocIsBounded(t *testing.T) {
	t.Parallel()
	if maxCapDocBytes > tool.MaxWindowBytes {
		t.Fatalf("maxCapDocBytes (%d) is over what one fs_read shows (%d)", maxCapDocBytes, tool.MaxWindowBytes)
	}
	var doc strings.Builder
	doc.WriteString("// Package huge has a long doc.\n//\n")
	for doc.Len() < 2*maxCapDocBytes {
		doc.WriteString("// A line of documentation that goes on and on to fill the package doc.\n//\n")
	}
	tree := fstest.MapFS{"huge/huge.go": {Data: []byte(doc.String() + "package huge\n\n// F is last.\nfunc F() {}\n")}}
	o := readCap(tree, "test", []string{"cap/huge"}, "cap://huge")
	if o.IsError {
		t.Fatal(o.Text)
	}
	if len(o.Text) > maxCapDocBytes {
		t.Fatalf("%d bytes, over maxCapDocBytes (%d)", len(o.Text), maxCapDocBytes)
	}
	if !strings.HasSuffix(o.Text, "the rest is not shown)\n") || strings.Contains(o.Text, "func F()") {
		t.Fatalf("a documentation past the bound is not cut with a notice:\n...%s", o.Text[max(0, len(o.Text)-300):])
	}
}

func TestBoundDocAtTheBound(t *testing.T) {
	t.Parallel()
	const limit = 1 << 10
	line := strings.Repeat("x", 63) + "\n"
	at := strings.Repeat(line, limit/len(line))
	for _, tc := range []struct {
		name string
		text string
		cut  bool
	}{
		{"at the bound", at, false},
		{"one past", at + "y", true},
		{"one long line", strings.Repeat("z", limit+1), true},
		{"empty", "", false},
	} {
		got := boundDoc(tc.text, limit)
		if len(got) > limit {
			t.Errorf("%s: %d bytes, over %d", tc.name, len(got), limit)
		}
		if cut := got != tc.text; cut != tc.cut {
			t.Errorf("%s: cut %v, want %v", tc.name, cut, tc.cut)
		}
		if tc.cut && (!strings.HasSuffix(got, "the rest is not shown)\n") || !strings.Contains(got, "1 KiB")) {
			t.Errorf("%s: no notice naming the bound: %q", tc.name, got[max(0, len(got)-200):])
		}
		if kept, _, _ := strings.Cut(got, "\n(cut:"); !strings.HasPrefix(tc.text, kept) {
			t.Errorf("%s: the kept text is not a prefix of the documentation", tc.name)
		}
		if tc.cut && strings.Contains(tc.text, "\n") && !strings.Contains(got, "\n\n(cut:") {
			t.Errorf("%s: not cut at a line break: %q", tc.name, got[max(0, len(got)-200):])
		}
	}
}

func TestSchemeServesFsRead(t *testing.T) {
	t.Parallel()
	reg, err := tool.NewRegistry(tool.ReadTool(Scheme(WorkspaceSeam())))
	if err != nil {
		t.Fatal(err)
	}
	if read, _ := reg.Lookup("fs_read"); !strings.Contains(read.Description, "`cap://`") {
		t.Fatalf("fs_read's description does not mention cap://: %s", read.Description)
	}
	for _, tc := range []struct {
		path string
		code tool.Code
		want string
	}{
		{"cap://", "", "cap/fs"},
		{"cap://proc", "", "func Run(ctx context.Context, cmd Cmd) (Result, error)"},
		{"cap://internal/wire", CodeInternalCapPackage, "cap/proc"},
		{"cap://nope", CodeUnknownCapPackage, "cap/kv"},
	} {
		args, _ := json.Marshal(map[string]string{"path": tc.path})
		o := reg.Dispatch(context.Background(), &tool.Call{}, "fs_read", args)
		if o.Code != tc.code || !strings.Contains(o.Text, tc.want) {
			t.Errorf("fs_read %s: code %q, want %q; text lacks %q?\n%s", tc.path, o.Code, tc.code, tc.want, o.Text)
		}
	}
}
